"""Generate ``benchmarks/evalsets/glib_api.jsonl`` from GLib's API reference (gtk-doc HTML).

    python -m benchmarks.corpora.gen_glib_api [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/glib_api``, laid out by ``fetch.sh``) is every page of GLib 2.74's
reference as Debian ships it in ``libglib2.0-doc``: 100 pages, the symbol index and the list of
deprecated symbols among them (they name every symbol, as the published site does). An API
reference is a command reference's kin: a developer types a bare identifier.

For 60 functions documented in a ``div.refsect2`` (an ``<h3>`` "name ()", the signature, then
the description), picked evenly through the pages, at most two a page, two queries with one
gold (the page and the first ten normalised words of the description):

- `symbol`: the bare identifier (``g_hash_table_insert``), as a developer types it;
- `summary`: the description's first sentence, verbatim: a control, the words are in the page.

A function whose description has fewer than five words, is a deprecation notice, or whose first
sentence another function shares, is left out.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from bs4 import BeautifulSoup

from benchmarks.corpora.evalset_tools import Case, generate
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "glib_api.jsonl"
FUNCTIONS = 60

Function = tuple[str, str, str, str]  # (page, name, first sentence, gold snippet)


def _functions(page: Path) -> list[Function]:
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "lxml")
    found: list[Function] = []
    for div in soup.select("div.refsect2"):
        h3 = div.find("h3")
        if not h3 or not h3.get_text().strip().endswith("()"):
            continue
        p = div.find("p", recursive=False)
        if p is None or "since" in (p.get("class") or []):
            continue
        text = re.sub(r"\s+([.,;:)])", r"\1", " ".join(p.get_text(" ").split()))
        words = normalise(text).split()
        if len(words) < 5 or "deprecated" in normalise(text)[:40]:
            continue
        first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
        found.append((page.name, h3.get_text().strip()[:-2].strip(), first, " ".join(words[:10])))
    return found


def cases(root: Path) -> list[Case]:
    pages = [_functions(p) for p in sorted(root.glob("glib-*.html"))]
    shared = Counter(normalise(f[2]) for fs in pages for f in fs)
    spread: list[Function] = []
    for fs in pages:
        fs = [f for f in fs if shared[normalise(f[2])] == 1]
        if fs:  # a third and two thirds into the page: not always its first function
            spread += [fs[len(fs) // 3]] + ([fs[2 * len(fs) // 3]] if len(fs) >= 6 else [])
    step = len(spread) / FUNCTIONS
    out: list[Case] = []
    for k in range(FUNCTIONS):
        doc, name, first, snippet = spread[int(k * step)]
        gold = [{"doc": doc, "text": snippet}]
        out.append({"id": f"glib-sym-{k:02d}", "query": name, "gold": gold, "category": "symbol", "exclude_docs": []})
        out.append({"id": f"glib-sum-{k:02d}", "query": first, "gold": gold, "category": "summary",
                    "exclude_docs": []})
    return out


def main() -> int:
    return generate("glib_api", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
