"""Generate ``benchmarks/evalsets/notebooks.jsonl``: real Jupyter notebooks, asked of their prose and code.

    python -m benchmarks.corpora.gen_notebooks [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/notebooks``, laid out by ``fetch.sh``) is 68 Jupyter notebooks (.ipynb,
nbformat 4 JSON as their projects keep them, outputs and embedded images included) from four PyPI
source distributions: nbsphinx 0.9.5's documentation (``nbsphinx/``, 31: nbsphinx documents itself
in notebooks, so they are mostly Markdown prose), IPython 8.18.1's examples (``ipython/``, 22),
xarray 2024.6.0's example gallery (``xarray/``, 9) and emcee 3.1.6's tutorials (``emcee/``, 6).
The notebooks are read here with the ``json`` module, not with any parser under test.

A Markdown cell's ATX heading (``#`` .. ``######``, outside fenced code) opens a section that runs
over the cells below it to the next heading, as a notebook's table of contents shows it. A
section's *opening words* are the first plain words of its first prose line (no image, HTML,
table, fence or math line; cut before the first link, inline HTML or ``$``), at least five.

- ``heading`` (the control, words copied from the target): a section's heading (two words or
  more, Markdown removed); gold = the notebook + the section's opening words.
- ``prose``: a sentence of a section's prose that is *not* its first sentence (8 to 40 words,
  no math, URL or lead-in ending in a colon, Markdown removed), verbatim; gold = the notebook +
  the section's opening words, so a hit must hold the start of the section the sentence belongs
  to, not just the sentence.
- ``code-comment``: a ``#`` comment in a code cell that reads as prose (four words or more, not
  commented-out code), consecutive comment lines joined; gold = the notebook + the first words of
  the code line below it (at least three words).

Gold snippets are taken from one source line each: the file is JSON, in which a line break is the
two characters ``\\n`` and so one more word (``n``) in the normalised whole-page text that
``write_checked`` checks against; a snippet that does not occur exactly once in that text
(``\\uXXXX`` escapes, text repeated by an output) is dropped. At most 8 questions per notebook,
taken round-robin over the categories in a random order (seed ``SEED``); questions asked twice
are dropped (``unique_questions``).
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.corpora.evalset_tools import Case, generate, opening_words, unique_questions
from benchmarks.naive import page_text
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "notebooks.jsonl"
SEED = 13
PER_NOTEBOOK = 8
CATEGORIES = ("heading", "prose", "code-comment")

HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
REF_LINK = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
HTML = re.compile(r"<[^>]+>")
# a line that is no prose: image, HTML, table row, rule, directive/label, math block, blockquote
NOT_PROSE = re.compile(r"^\s*(!\[|<|\||---|\*\*\*|\(.*\)=$|\$\$|\\\[|:::|```|~~~|>|\.\. |\{)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[(])")
CODE_LIKE = re.compile(r"[=(){}\[\];]|^\s*(import|from|def|class|return|print|for|if|plt\.|np\.)\b|:\s*$")


def cell_lines(cell: dict[str, Any]) -> list[str]:
    """A cell's source lines, as nbformat 4 writes them (a list of strings) or one string."""
    src = cell.get("source", "")
    text = "".join(src) if isinstance(src, list) else str(src)
    return text.splitlines()


def strip_md(s: str) -> str:
    """Markdown inline markup removed: links to their text, emphasis and code marks, HTML tags."""
    s = LINK.sub(r"\1", s)
    s = REF_LINK.sub(r"\1", s)
    s = HTML.sub(" ", s)
    s = re.sub(r"[*`]+|(?<!\w)_+|_+(?!\w)", "", s)  # emphasis and code marks, not snake_case
    return " ".join(s.split())


def plain_head(line: str) -> str:
    """A prose line up to its first link, inline HTML or math: the words any reading keeps in order."""
    cut = len(line)
    for pat in (r"\[", r"<", r"\$", r"\]\("):
        m = re.search(pat, line)
        if m:
            cut = min(cut, m.start())
    head = line[:cut]
    head = re.sub(r"^\s*([-*+]|\d+\.)\s+", "", head)  # a list item's marker
    return head


class Section:
    def __init__(self, heading: str, level: int) -> None:
        self.heading = heading
        self.level = level
        self.prose: list[str] = []  # Markdown prose lines, in order (paragraph breaks as "")
        self.snippet: str | None = None


def read_notebook(path: Path) -> tuple[list[Section], list[tuple[str, str]]]:
    """The notebook's sections and its (comment, next code line) pairs."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells") or [c for ws in nb.get("worksheets", []) for c in ws.get("cells", [])]
    sections: list[Section] = []
    comments: list[tuple[str, str]] = []
    for cell in cells:
        kind = cell.get("cell_type")
        if kind == "markdown":
            fenced = False
            for line in cell_lines(cell):
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                if fenced:
                    continue
                m = HEADING.match(line)
                if m:
                    sections.append(Section(strip_md(m.group(2)), len(m.group(1))))
                elif sections:
                    sections[-1].prose.append(line)
            if sections:
                sections[-1].prose.append("")  # a cell ends a paragraph
        elif kind == "code":
            lines = cell_lines(cell)
            block: list[str] = []
            for line in lines:
                s = line.strip()
                if s.startswith("#") and not s.startswith(("#!", "#%%", "# In[")):
                    block.append(s.lstrip("#").strip())
                    continue
                if block and s:
                    text = " ".join(block)
                    if (len(text.split()) >= 4 and not CODE_LIKE.search(text)
                            and sum(w.isalpha() for w in text.split()) >= 0.7 * len(text.split())):
                        comments.append((text, line))
                block = []
    for sec in sections:
        for line in sec.prose:
            if not line.strip() or NOT_PROSE.match(line):
                continue
            snip = opening_words(plain_head(line))
            if len(snip.split()) >= 5:
                sec.snippet = snip
            break  # the first prose line only: if it gives no snippet, the section has none
    return sections, comments


def sentences(sec: Section) -> list[str]:
    """The section's prose sentences in order (paragraphs joined; non-prose lines left out)."""
    paras: list[str] = []
    cur: list[str] = []
    for line in [*sec.prose, ""]:
        if not line.strip() or NOT_PROSE.match(line) or re.match(r"^\s*([-*+]|\d+\.)\s+", line):
            if cur:
                paras.append(" ".join(cur))
            cur = []
            if line.strip() and not NOT_PROSE.match(line):  # a list item is a paragraph of its own
                paras.append(re.sub(r"^\s*([-*+]|\d+\.)\s+", "", line))
            continue
        cur.append(line.strip())
    out: list[str] = []
    for p in paras:
        out.extend(s.strip() for s in SENTENCE_END.split(p) if s.strip())
    return out


def notebook_cases(root: Path, path: Path, rng: random.Random) -> list[Case]:
    doc = path.relative_to(root).as_posix()
    page = normalise(page_text(path))

    def once(snippet: str) -> bool:
        return page.count(snippet) == 1

    sections, comments = read_notebook(path)
    pools: dict[str, list[Case]] = defaultdict(list)

    def case(query: str, category: str, snippet: str) -> Case:
        return {"id": "", "query": query, "gold": [{"doc": doc, "text": snippet}],
                "category": category, "exclude_docs": []}

    for sec in sections:
        if sec.snippet is None or not once(sec.snippet):
            continue
        if len(sec.heading.split()) >= 2:
            pools["heading"].append(case(sec.heading, "heading", sec.snippet))
        later = [strip_md(s) for s in sentences(sec)[1:]]
        later = [s for s in later if 8 <= len(s.split()) <= 40 and "$" not in s and "\\" not in s
                 and "http" not in s and not s.endswith(":")
                 and normalise(s) not in normalise(sec.heading)]
        if later:
            pools["prose"].append(case(rng.choice(later), "prose", sec.snippet))
    for text, code in comments:
        snip = opening_words(code)
        if len(snip.split()) >= 3 and once(snip):
            pools["code-comment"].append(case(text, "code-comment", snip))

    for pool in pools.values():
        rng.shuffle(pool)
    order = list(CATEGORIES)
    rng.shuffle(order)
    picked: list[Case] = []
    while len(picked) < PER_NOTEBOOK and any(pools[c] for c in order):
        for c in order:
            if pools[c] and len(picked) < PER_NOTEBOOK:
                picked.append(pools[c].pop())
    return picked


def cases(root: Path) -> list[Case]:
    rng = random.Random(SEED)
    out: list[Case] = []
    for path in sorted(root.rglob("*.ipynb")):
        out.extend(notebook_cases(root, path, rng))
    return unique_questions(out, "nb")


def main() -> int:
    return generate("notebooks", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
