"""Generate ``benchmarks/evalsets/sphinx_rst.jsonl``: a Sphinx site's reST sources, asked in other words.

    python -m benchmarks.corpora.gen_sphinx_rst [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/sphinx_rst``, laid out by ``fetch.sh``) is the documentation of Sphinx 7.2.6
as its source distribution ships it: the 92 ``doc/**/*.rst`` files (section adornments, ``..
confval::`` / ``.. rst:directive::`` / ``.. event::`` definitions, ``:ref:`` labels, directives,
option lists), paths as under ``doc/`` (``usage/configuration.rst``). What the queries are made
from but must not be indexed lies in ``CORPORA/_extra/sphinx_rst``: the ``CHANGES`` file (the
corpus's ``changes.rst`` only includes it) and the ``sphinx/ext`` modules' sources.

Every question but the control is worded by someone other than the target section's author, at
another place and time, so its wording is not the target heading's:

- ``changelog``: a ``CHANGES`` entry that names exactly one ``:confval:``, ``:rst:dir:``,
  ``:rst:role:`` or ``:event:`` defined in the corpus ("autodoc: Add new event:
  autodoc-before-process-signature"), its issue numbers and reST markup removed; gold = the file of
  the definition + the first plain words of the definition's text. One entry per name; 50 of them
  at random.
- ``xref-context``: the sentence around a ``:ref:`` to a labelled section of another file, the
  reference replaced by its link text (or its label's words); gold = the labelled section's file +
  the first plain words of its first paragraph; the file holding the sentence is excluded. 45 at
  random.
- ``ext-docstring``: the first paragraph of a ``sphinx.ext`` module's docstring ("Add links to
  module code in Python object descriptions.") -> the extension's page
  ``usage/extensions/NAME.rst`` (any chunk).
- ``heading`` (the control, words copied from the target): 30 section titles of two words or more
  at random, gold = the section's file + the first plain words of its first paragraph.

"First plain words" (`plain_snippet`) are the first run of eight words without markup characters
in the paragraph, so any faithful reading of the reST keeps them verbatim. A question asked twice
is dropped (`unique_questions`). Seed 7.
"""

from __future__ import annotations

import ast
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, corpora_dir, generate, unique_questions

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "sphinx_rst.jsonl"
SEED = 7
CHANGELOG_CASES = 50
XREF_CASES = 45
HEADING_CASES = 30

ADORN = re.compile(r"^([=\-`:'\"~^_*+#<>.!$%&(),/;?@\[\\\]{|}])\1{2,}\s*$")
MARK = re.compile(r"[`*|:\[\]<>_{}=#\\]|\]\(|https?")
LABEL = re.compile(r"^\.\. _([^:]+):\s*$")
DEFINITION = re.compile(r"^\s*\.\. (confval|rst:directive|rst:role|event)::\s*(?:\.\. )?([\w.:-]+?)(?:::)?(?:\s|\(|$)")
CHANGES_ROLE = re.compile(r":(confval|rst:dir|rst:role|event):`([^`<]+)`")
ROLE_OF = {"confval": "confval", "rst:dir": "rst:directive", "rst:role": "rst:role", "event": "event"}
REF = re.compile(r":ref:`([^`]+)`")


def plain_snippet(par: str, n: int = 8, min_words: int = 5) -> str | None:
    """The first ``n`` words of the first run of at least ``min_words`` words of ``par`` that hold
    no markup character, so any faithful parse keeps them verbatim; None if there is none."""
    runs: list[list[str]] = []
    cur: list[str] = []
    for w in par.split():
        if MARK.search(w) or not re.search(r"[A-Za-z0-9]", w):
            if cur:
                runs.append(cur)
                cur = []
        else:
            cur.append(w)
    if cur:
        runs.append(cur)
    runs = [r for r in runs if len(r) >= min_words]
    return " ".join(runs[0][:n]) if runs else None


def strip_rst_inline(s: str) -> str:
    """``s`` without reST inline markup: roles and references keep their text, literals their words."""
    s = re.sub(r":[\w:+-]+:`~?!?([^`<]*?)\s*<[^>]*>`", r"\1", s)
    s = re.sub(r":[\w:+-]+:`~?!?([^`]*)`", r"\1", s)
    s = re.sub(r"`([^`<]*?)\s*<[^>]*>`__?", r"\1", s)
    s = s.replace("``", "")
    s = re.sub(r"`([^`]*)`_?", r"\1", s)
    s = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", s)
    return re.sub(r"\s+", " ", s).strip()


def first_par(lines: list[str], i: int) -> str | None:
    """The first paragraph from line ``i`` on that has a plain snippet, skipping blank lines,
    field lists (directive options) and directives; None once the next section heading comes."""
    j = i
    while j < len(lines):
        s = lines[j].strip()
        if s and j + 1 < len(lines) and ADORN.match(lines[j + 1]) and not ADORN.match(lines[j]):
            return None
        if not s or re.match(r"^:[\w -]+:", s) or s.startswith(".. ") or ADORN.match(s):
            j += 1
            continue
        par = []
        while j < len(lines) and lines[j].strip():
            par.append(lines[j].strip())
            j += 1
        txt = " ".join(par)
        if plain_snippet(txt):
            return txt
    return None


@dataclass
class Section:
    doc: str
    title: str
    par: str | None  # its first paragraph with a plain snippet


@dataclass
class Docs:
    files: dict[str, list[str]]
    sections: list[Section] = field(default_factory=list)
    labels: dict[str, Section] = field(default_factory=dict)  # ``.. _label:`` -> the section it labels
    defs: dict[tuple[str, str], Section] = field(default_factory=dict)  # (directive, name) -> definition


def _is_heading(lines: list[str], i: int) -> bool:
    line = lines[i]
    return (i + 1 < len(lines) and bool(line.strip()) and not line.startswith(" ")
            and bool(ADORN.match(lines[i + 1])) and len(lines[i + 1].strip()) >= len(line.strip())
            and not ADORN.match(line))


def read_docs(root: Path) -> Docs:
    """Every file's lines, its sections (title-over-adornment), labels and object definitions."""
    docs = Docs({p.relative_to(root).as_posix(): p.read_text(encoding="utf-8").splitlines()
                 for p in sorted(root.rglob("*.rst"))})
    for doc, lines in docs.files.items():
        pending: list[str] = []
        for i, line in enumerate(lines):
            m = LABEL.match(line)
            if m:
                pending.append(m.group(1).lower())
                continue
            if _is_heading(lines, i):
                sec = Section(doc, line.strip(), first_par(lines, i + 2))
                docs.sections.append(sec)
                docs.labels.update(dict.fromkeys(pending, sec))
                pending = []
            m = DEFINITION.match(line)
            if m:
                docs.defs[(m.group(1), m.group(2))] = Section(doc, m.group(2), first_par(lines, i + 1))
    return docs


def _case(query: str, category: str, doc: str, text: str | None, exclude: list[str] | None = None) -> Case:
    return {"id": "", "query": query, "gold": [{"doc": doc, "text": text}], "category": category,
            "exclude_docs": exclude or []}


def changelog_cases(docs: Docs, changes: str) -> list[Case]:
    """One case per CHANGES entry naming a single defined object (the first entry for each)."""
    out: list[Case] = []
    seen: set[tuple[str, str]] = set()
    for entry in re.split(r"\n(?=\* )", changes):
        if not entry.startswith("* "):
            continue
        entry = entry.split("\n\n")[0]
        refs = {(ROLE_OF[r], n.strip()) for r, n in CHANGES_ROLE.findall(entry)}
        if len(refs) != 1:
            continue
        key = refs.pop()
        d = docs.defs.get(key)
        snippet = plain_snippet(d.par) if d and d.par else None
        if d is None or snippet is None or key in seen:
            continue
        q = strip_rst_inline(re.sub(r"^\*\s+(#\d+(, #\d+)*:?\s*)?", "", entry))
        if len(q.split()) < 5 or len(q) > 400:
            continue
        seen.add(key)
        out.append(_case(q, "changelog", d.doc, snippet))
    return out


def xref_cases(docs: Docs) -> list[Case]:
    """The sentence around every ``:ref:`` to a labelled section of another file."""
    out: list[Case] = []
    for doc, lines in docs.files.items():
        for par in re.split(r"\n\s*\n", "\n".join(lines)):
            flat = " ".join(par.split())
            for m in REF.finditer(flat):
                mm = re.match(r"(.*?)\s*<([^>]+)>$", m.group(1))
                label = (mm.group(2) if mm else m.group(1)).lower()
                sec = docs.labels.get(label)
                snippet = plain_snippet(sec.par) if sec and sec.par else None
                if sec is None or sec.doc == doc or snippet is None:
                    continue
                sent = next((s for s in re.split(r"(?<=[.!?])\s+", flat) if m.group(0) in s), None)
                if not sent:
                    continue
                words = mm.group(1) if mm else label.replace("-", " ").replace("_", " ")
                q = strip_rst_inline(sent.replace(m.group(0), words))
                if len(q.split()) < 7 or len(q) > 350 or q.startswith(".."):
                    continue
                out.append(_case(q, "xref-context", sec.doc, snippet, [doc]))
    return out


def docstring_cases(root: Path, source: Path) -> list[Case]:
    """The first docstring paragraph of each ``sphinx.ext`` module that has its own page."""
    out: list[Case] = []
    ext = source / "sphinx" / "ext"
    for py in sorted([*map(str, ext.glob("*.py")), *map(str, ext.glob("*/__init__.py"))]):
        path = Path(py)
        name = path.parent.name if path.name == "__init__.py" else path.stem
        doc = f"usage/extensions/{name}.rst"
        ds = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not (root / doc).exists() or not ds:
            continue
        q = ds.strip().split("\n\n")[0].replace("\n", " ")
        if len(q.split()) >= 3:
            out.append(_case(q, "ext-docstring", doc, None))
    return out


def heading_cases(docs: Docs) -> list[Case]:
    """Section titles of two words or more (the control)."""
    out: list[Case] = []
    for s in docs.sections:
        snippet = plain_snippet(s.par) if s.par else None
        if snippet and len(s.title.split()) >= 2 and s.title.lower() not in ("getting started", "examples"):
            out.append(_case(s.title, "heading", s.doc, snippet))
    return out


def cases(root: Path, extra: Path) -> list[Case]:
    docs = read_docs(root)
    rng = random.Random(SEED)
    changelog = changelog_cases(docs, (extra / "CHANGES").read_text(encoding="utf-8"))
    rng.shuffle(changelog)
    xref = xref_cases(docs)
    rng.shuffle(xref)
    headings = heading_cases(docs)
    rng.shuffle(headings)
    out = (changelog[:CHANGELOG_CASES] + xref[:XREF_CASES] + docstring_cases(root, extra)
           + headings[:HEADING_CASES])
    return unique_questions(out, "sx")


def main() -> int:
    return generate("sphinx_rst", lambda root: cases(root, corpora_dir() / "_extra" / "sphinx_rst"), OUT)


if __name__ == "__main__":
    sys.exit(main())
