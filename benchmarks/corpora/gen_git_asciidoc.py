"""Generate ``benchmarks/evalsets/git_asciidoc.jsonl``: git_commands' questions asked of the
AsciiDoc sources of the same manual pages.

    python -m benchmarks.corpora.gen_git_asciidoc [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/git_asciidoc/txt/*.txt``, laid out by ``fetch.sh``) is what Debian's
``git-doc`` ships beside the HTML: the AsciiDoc source of every page (``git-rebase.txt``) and the
fragments the pages include (``diff-options.txt``, ``merge-options.txt``), all named ``.txt`` as
Git named them before 2.47 (``.adoc`` since). The questions are ``git_commands.jsonl``'s (fish's
own descriptions of commands and options); a gold page ``html/git-X.html`` becomes
``txt/git-X.txt``. Both sets ask the same questions of the same manual, once rendered and once
as source, so the two sets' numbers show what reading the source costs.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, corpora_dir, write_checked

EVALSETS = Path(__file__).resolve().parent.parent / "evalsets"
OUT = EVALSETS / "git_asciidoc.jsonl"


def cases(root: Path) -> list[Case]:
    out: list[Case] = []
    for line in (EVALSETS / "git_commands.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        docs = ["txt/" + Path(g["doc"]).with_suffix(".txt").name for g in case["gold"]]
        gold = [{"doc": doc, "text": None} for doc in docs if (root / doc).is_file()]
        if gold:
            out.append({**case, "id": case["id"].replace("git-", "gita-", 1), "gold": gold})
    return out


def main() -> None:
    root = corpora_dir() / "git_asciidoc"
    write_checked(cases(root), root, OUT)


if __name__ == "__main__":
    main()
