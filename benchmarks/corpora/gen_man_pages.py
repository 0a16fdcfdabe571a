"""Generate ``benchmarks/evalsets/man_pages.jsonl``: manual pages in roff, asked with fish's words.

    python -m benchmarks.corpora.gen_man_pages [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/man_pages/man{1,3,5,7,8}/*.gz``, laid out by ``fetch.sh``) is every English
manual page of 19 Debian packages of everyday command-line tools (coreutils, findutils, grep,
sed, tar, gzip, diffutils, util-linux, mount, procps, openssh-client, rsync, curl, wget, less,
file, iproute2, bzip2, xz-utils) as Debian ships them: roff source (man macros, a few mdoc),
gzip-compressed, one page per command or file format; alias pages (symlinks) left out.

The queries come from a *different* source, as for ``git_commands``: the fish shell's completion
files (``share/fish/completions/CMD.fish`` in ``fish-common``), whose authors wrote their own
one-line description of each option (``complete -c tar -s x -l extract -d "Extract files from
archive"``). Gold = the command's page (``man1/CMD.1.gz`` or ``man8/CMD.8.gz``): a reference
lookup is answered by the page.

- ``option``: option descriptions of one command, at least `MIN_OPTION_WORDS` words, at most
  `PER_COMMAND` per command (the first in file order). A description fish gives to options of two
  different commands ("Print version information") is ambiguous and dropped, and so is one whose
  normalised text occurs verbatim in Bindery's parse of its gold page (the point is wording not
  copied from the page); the count is printed.
"""

from __future__ import annotations

import shlex
import sys
from collections import defaultdict
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, bindery_text, corpora_dir, write_checked
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "man_pages.jsonl"
MIN_OPTION_WORDS = 4
PER_COMMAND = 4


def options(fish: Path) -> list[tuple[str, str]]:
    """(command, description) of every option line of one completion file, in file order."""
    out: list[tuple[str, str]] = []
    for line in fish.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            words = shlex.split(line.strip())
        except ValueError:
            continue
        if words[:1] != ["complete"]:
            continue
        flags: dict[str, list[str]] = defaultdict(list)
        for i, w in enumerate(words[:-1]):
            if w.startswith("-") and w not in ("-f", "-x", "-r", "-F", "-k"):
                flags[w].append(words[i + 1])
        cmd = (flags.get("-c") or flags.get("--command") or [""])[0]
        desc = (flags.get("-d") or flags.get("--description") or [""])[0].replace("\\$", "$")  # fish's \$
        if cmd and desc and (flags.get("-s") or flags.get("-l") or flags.get("-o")):
            out.append((cmd, desc))
    return out


def page_of(root: Path, cmd: str) -> str | None:
    for section in ("1", "8"):
        doc = f"man{section}/{cmd}.{section}.gz"
        if (root / doc).is_file():
            return doc
    return None


def cases(root: Path, completions: Path) -> list[Case]:
    texts: dict[str, str] = {}
    found: list[tuple[str, str, str]] = []  # (command, its page, description)
    for fish in sorted(completions.glob("*.fish")):
        doc = page_of(root, fish.stem)
        if doc is None:
            continue
        found += [(cmd, doc, desc) for cmd, desc in options(fish) if cmd == fish.stem]
    owners: dict[str, set[str]] = defaultdict(set)
    for cmd, _, desc in found:
        owners[normalise(desc)].add(cmd)
    out: list[Case] = []
    taken: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    verbatim = 0
    for cmd, doc, desc in found:
        key = normalise(desc)
        if len(key.split()) < MIN_OPTION_WORDS or len(owners[key]) > 1 or key in seen or taken[cmd] >= PER_COMMAND:
            continue
        if doc not in texts:
            texts[doc] = normalise(bindery_text(root / doc) or "")
        if key in texts[doc]:
            verbatim += 1
            continue
        seen.add(key)
        taken[cmd] += 1
        out.append({"query": desc, "gold": [{"doc": doc, "text": None}], "category": "option", "exclude_docs": []})
    print(f"dropped {verbatim} descriptions found verbatim in their page; {len(taken)} commands asked",
          file=sys.stderr)
    return [{"id": f"man-{i}", **c} for i, c in enumerate(out)]


def main() -> int:
    corpora = corpora_dir()
    root = corpora / "man_pages"
    write_checked(cases(root, corpora / "_extra" / "man_pages" / "completions"), root, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
