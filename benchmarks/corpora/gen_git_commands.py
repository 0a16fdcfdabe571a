"""Generate ``benchmarks/evalsets/git_commands.jsonl``: Git's manual pages, asked with fish's words.

    python -m benchmarks.corpora.gen_git_commands [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/git_commands/html/git*.html``, laid out by ``fetch.sh``) is Git's manual
pages as Debian's ``git-doc`` ships them: asciidoc-generated HTML, one page per command
(``git-rebase.html``) or concept (``gitattributes.html``).

The queries come from a *different* source: the fish shell's completion file for git
(``share/fish/completions/git.fish`` in ``fish-common``), whose authors wrote their own one-line
descriptions of each subcommand and option, e.g. ``rebase`` -> "Reapply commit sequence on a new
base", ``commit --amend`` -> "Amend the log message of the last commit". Gold = the command's page
(any chunk of it: a reference lookup is answered by the page).

- ``subcommand``: one query per subcommand description (``__fish_git_needs_command -a NAME``)
  whose page exists.
- ``option``: option descriptions of one command (``__fish_git_using_command NAME``), at least
  `MIN_OPTION_WORDS` words long, at most `PER_COMMAND` per command (the first in file order).
  A description that fish gives to options of two different commands ("Be quiet") is ambiguous
  and dropped.

A description whose normalised text occurs verbatim in its gold page is dropped (the point is
wording that is not copied from the page); the count is printed.
"""

from __future__ import annotations

import shlex
import sys
from collections import defaultdict
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, corpora_dir, write_checked
from benchmarks.naive import page_text
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "git_commands.jsonl"
MIN_OPTION_WORDS = 4
PER_COMMAND = 4


def _flags(line: str) -> dict[str, list[str]] | None:
    """The flags of one ``complete -c git ...`` line ({"-n": [...], "-d": [...], ...})."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if words[:1] != ["complete"] or "git" not in words:
        return None
    flags: dict[str, list[str]] = defaultdict(list)
    for i, w in enumerate(words[:-1]):
        if w.startswith("-") and w not in ("-f", "-x", "-r", "-F", "-k"):
            flags[w].append(words[i + 1])
    return flags


def descriptions(fish: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """(subcommand, description) and (command, option, description) from git.fish."""
    subs: list[tuple[str, str]] = []
    opts: list[tuple[str, str, str]] = []
    for line in fish.read_text(encoding="utf-8").splitlines():
        f = _flags(line.strip())
        if not f or not f.get("-d") or not f.get("-n"):
            continue
        cond, desc = f["-n"][0].split(), f["-d"][0]
        if cond == ["__fish_git_needs_command"] and f.get("-a"):
            subs.append((f["-a"][0], desc))
        elif len(cond) == 2 and cond[0] == "__fish_git_using_command" and (f.get("-l") or f.get("-s")):
            opt = "--" + f["-l"][0] if f.get("-l") else "-" + f["-s"][0]
            opts.append((cond[1], opt, desc))
    return subs, opts


def cases(root: Path, fish: Path) -> list[Case]:
    subs, opts = descriptions(fish)
    texts: dict[str, str] = {}
    dropped = 0

    def page(cmd: str) -> str | None:
        doc = f"html/git-{cmd}.html"
        if not (root / doc).is_file():
            return None
        if doc not in texts:
            texts[doc] = normalise(page_text(root / doc))
        return doc

    out: list[Case] = []

    def add(cmd: str, desc: str, category: str) -> None:
        nonlocal dropped
        doc = page(cmd)
        if doc is None:
            return
        if normalise(desc) in texts[doc]:
            dropped += 1
            return
        out.append({"query": desc, "gold": [{"doc": doc, "text": None}], "category": category,
                    "exclude_docs": []})

    for cmd, desc in dict(subs).items():
        add(cmd, desc, "subcommand")
    owners: dict[str, set[str]] = defaultdict(set)
    for cmd, _, desc in opts:
        owners[normalise(desc)].add(cmd)
    taken: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for cmd, _, desc in opts:
        key = normalise(desc)
        if len(key.split()) < MIN_OPTION_WORDS or len(owners[key]) > 1 or key in seen:
            continue
        if taken[cmd] >= PER_COMMAND:
            continue
        before = len(out)
        add(cmd, desc, "option")
        if len(out) > before:
            taken[cmd] += 1
            seen.add(key)
    print(f"dropped {dropped} descriptions found verbatim in their page", file=sys.stderr)
    return [{"id": f"git-{i}", **c} for i, c in enumerate(out)]


def main() -> int:
    corpora = corpora_dir()
    root = corpora / "git_commands"
    write_checked(cases(root, corpora / "_extra" / "git_commands" / "git.fish"), root, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
