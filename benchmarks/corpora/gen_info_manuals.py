"""Generate ``benchmarks/evalsets/info_manuals.jsonl`` from GNU info manuals and their own indexes.

    python -m benchmarks.corpora.gen_info_manuals [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/info_manuals``, laid out by ``fetch.sh``) is 14 info files as Debian ships
them, gzip-compressed: sed, grep, diffutils, wget, gzip, time, libtasn1 and findutils (split into
``find.info-1`` and ``-2`` behind ``find.info``), with bc, ed and bzip2 (no index) beside them.

The queries are the manuals' own index entries (concept, option, command and general indexes):
terse phrases their authors wrote apart from the headings, as flex_manual's. Each entry points at
a node and a line; the gold item is the file that holds the node and the first ten normalised
words of the paragraph at that line. Info numbers a repeated entry "term <2>": the bare term is
what a reader sees. An entry whose term points at two places is ambiguous and dropped, and so is
one equal to its node's name (a heading, too easy) or shorter than three characters; at most 14
per manual, spread evenly over its entries. Category = the index it comes from: `concept`,
`option-command` (an option, command or variable index) or `general` (a manual with one index).

The index nodes stay in the corpus (they are in the same file as the passages): Bindery's info
reader leaves them out as navigation, the naive pipeline indexes them.
"""

from __future__ import annotations

import gzip
import re
import sys
from collections import defaultdict
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, generate
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "info_manuals.jsonl"
PER_MANUAL = 14
_ENTRY = re.compile(r"^\* (.+?):\s+(.+?)\.\s+\(line\s+(\d+)\)\s*$")
_HEADER = re.compile(r"^File: ([^,]+),\s+Node: ([^,\t]+)")

Node = tuple[str, list[str], int]  # (file name, its lines, where the node's header is)
Entry = tuple[str, str, str, str, int]  # (manual, index node, term, target node, line in the node)


def _read(root: Path) -> tuple[dict[tuple[str, str], Node], list[Entry]]:
    """Every node by (manual, name), and every index entry, of the info files under `root`."""
    nodes: dict[tuple[str, str], Node] = {}
    entries: list[Entry] = []
    for f in sorted(root.glob("*.gz")):
        lines = gzip.decompress(f.read_bytes()).decode("utf-8", "replace").split("\n")
        current: tuple[str, str] | None = None
        for i, line in enumerate(lines):
            if (m := _HEADER.match(line)) and i > 0 and lines[i - 1].startswith("\x1f"):
                current = (m.group(1).replace(".info", ""), m.group(2).strip())
                nodes[current] = (f.name, lines, i)
            elif (m := _ENTRY.match(line)) and current and "index" in current[1].lower():
                term = re.sub(r"\s*<\d+>$", "", m.group(1).strip())
                entries.append((current[0], current[1], term, m.group(2).strip(), int(m.group(3))))
    return nodes, entries


def _snippet(lines: list[str], start: int, line: int) -> str | None:
    """The opening words of the paragraph at (or after) the entry's line of its node."""
    i = start + line - 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    text: list[str] = []
    while i < len(lines) and lines[i].strip() and not lines[i].startswith("\x1f"):
        text.append(lines[i])
        i += 1
    words = normalise(" ".join(text)).split()
    return " ".join(words[:10]) if len(words) >= 5 else None


def _category(index_node: str) -> str:
    name = index_node.lower()
    return "concept" if "concept" in name else "general" if name == "index" else "option-command"


def cases(root: Path) -> list[Case]:
    nodes, entries = _read(root)
    targets: dict[str, set[tuple[str, str, int]]] = defaultdict(set)
    for manual, _, term, node, line in entries:
        targets[term.lower()].add((manual, node, line))
    by_manual: dict[str, list[Case]] = defaultdict(list)
    seen: set[str] = set()
    for manual, index_node, term, node, line in entries:
        if (manual, node) not in nodes or term.lower() in seen or len(targets[term.lower()]) > 1:
            continue
        if normalise(term) == normalise(node) or len(normalise(term)) < 3:
            continue
        fname, lines, start = nodes[(manual, node)]
        if (snippet := _snippet(lines, start, line)) is None:
            continue
        seen.add(term.lower())
        by_manual[manual].append({"query": term, "gold": [{"doc": fname, "text": snippet}],
                                  "category": _category(index_node), "exclude_docs": []})
    out: list[Case] = []
    for manual, found in sorted(by_manual.items()):
        step = max(1.0, len(found) / PER_MANUAL)
        for k in range(min(PER_MANUAL, len(found))):
            out.append({"id": f"info-{manual}-{k:02d}", **found[int(k * step)]})
    return out


def main() -> int:
    return generate("info_manuals", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
