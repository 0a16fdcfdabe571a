"""Generate ``benchmarks/evalsets/git_asciidoc.jsonl``: git_commands' questions asked of the
AsciiDoc sources of the same manual pages.

    python -m benchmarks.corpora.gen_git_asciidoc [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/git_asciidoc/txt/*.txt``, laid out by ``fetch.sh``) is what Debian's
``git-doc`` ships beside the HTML: the AsciiDoc source of every page (``git-rebase.txt``) and the
fragments the pages include (``diff-options.txt``, ``merge-options.txt``), all named ``.txt`` as
Git named them before 2.47 (it names them ``.adoc`` since; this set keeps the shipped names). The
questions are ``git_commands.jsonl``'s (fish's own descriptions of commands and options); a gold
page ``html/git-X.html`` becomes ``txt/git-X.txt`` (a question whose page has no source is left
out, and the count printed), and so does each page a question excludes. Both sets ask the same
questions of the same manual, once rendered and once as source, so the two sets' numbers show
what reading the source costs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, generate

EVALSETS = Path(__file__).resolve().parent.parent / "evalsets"
OUT = EVALSETS / "git_asciidoc.jsonl"


def _source(page: str) -> str:
    """`html/git-add.html` -> `txt/git-add.txt`."""
    return "txt/" + Path(page).with_suffix(".txt").name


def cases(root: Path) -> list[Case]:
    out: list[Case] = []
    dropped = 0
    for line in (EVALSETS / "git_commands.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        gold = [{"doc": doc, "text": None} for g in case["gold"] if (root / (doc := _source(g["doc"]))).is_file()]
        if not gold:
            dropped += 1
            continue
        out.append({**case, "id": case["id"].replace("git-", "gita-", 1), "gold": gold,
                    "exclude_docs": [_source(d) for d in case.get("exclude_docs", [])]})
    print(f"{dropped} questions dropped: their page has no source")
    return out


def main() -> int:
    return generate("git_asciidoc", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
