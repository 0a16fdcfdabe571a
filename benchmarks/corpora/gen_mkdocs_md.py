"""Generate ``benchmarks/evalsets/mkdocs_md.jsonl``: two MkDocs sites' Markdown, asked in other words.

    python -m benchmarks.corpora.gen_mkdocs_md [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/mkdocs_md``, laid out by ``fetch.sh``) is the Markdown source of two MkDocs
documentation sites as their source distributions ship them, 82 files: pymdown-extensions 10.8.1
(``docs/src/markdown`` under ``pymdownx/``, its hidden ``.snippets/`` include folder left out) and
Python-Markdown 3.6 (``docs/`` under ``markdown/``). Both are written in the dialect they document:
admonitions (``!!! note``), pymdownx blocks (``/// tab``), attribute lists (``# Title {: #id }``),
fenced code, tables of options, meta-data headers. The extensions' Python sources, which the
``docstring`` questions come from and which must not be indexed, lie in ``CORPORA/_extra/mkdocs_md``.

Every question but the two controls is worded apart from the target heading:

- ``changelog``: an entry of pymdown-extensions' changelog (``pymdownx/about/changelog.md``, in the
  corpus) of the form "**NEW**/**FIX**: Extension: what changed", Markdown removed, "Extension:"
  kept; gold = that extension's page (any chunk); the changelog itself is excluded. At most four
  entries per extension, 35 at random.
- ``xref-context``: the sentence around a Markdown link ``[text](page.md#anchor)`` to another file
  (changelogs and release notes left out); gold = the target page, + the first plain words of the
  anchored section's first paragraph when the link has an anchor; the linking file is excluded.
  40 at random.
- ``docstring``: the description a pymdownx module's docstring gives under its ``pymdownx.NAME``
  line, and the description between ``#`` rule lines of a Python-Markdown extension's header
  comment -> the extension's page (any chunk). Python-Markdown 3.6's headers no longer have that
  form, so all 16 are pymdownx's (kept so, for numbers comparable with the first measurement).
- ``option-row``: the description cell of a row of an options table ("Option | Type | Default |
  Description"), at least six words; gold = the page + the cell's first plain words (a control of
  table reading: the words are the page's). 25 at random.
- ``heading`` (the control, words copied from the target): 25 titles of level 2 or deeper, two
  words or more; gold = the page + the first plain words of the section's first paragraph.

"First plain words" are `gen_sphinx_rst.plain_snippet`'s: the first run of eight words without
markup characters, so any faithful reading of the Markdown keeps them. A question asked twice is
dropped (`unique_questions`). Seed 11.
"""

from __future__ import annotations

import ast
import posixpath
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, corpora_dir, generate, unique_questions
from benchmarks.corpora.gen_sphinx_rst import plain_snippet

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "mkdocs_md.jsonl"
SEED = 11
CHANGELOG = "pymdownx/about/changelog.md"
CHANGELOG_CASES = 35
CHANGELOG_PER_PAGE = 4
XREF_CASES = 40
OPTION_CASES = 25
HEADING_CASES = 25

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(\{[^}]*\})?\s*#*$")
NOT_PROSE = re.compile(r"^\s*(///|!!!|\?\?\?|\||-|\*|\d+\.|<|\[|:)")  # blocks, lists, tables, HTML
CHANGE = re.compile(r"-\s+\*\*(NEW|FIX|BREAK|FIX[A-Z]*)\*\*:\s+([\w ]+?):\s+(.*)", re.S)
LINK = re.compile(r"\[([^\]]+)\]\(([^)#\s]*\.md)?(#[^)\s]*)?\)")


def strip_md_inline(s: str) -> str:
    """``s`` without Markdown inline markup: links keep their text, code its words."""
    s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", s)
    s = s.replace("`", "")
    s = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", s)
    s = re.sub(r"#!\w+\s*", "", s)
    return re.sub(r"\s+", " ", s).strip()


def slug(title: str) -> str:
    """MkDocs' (Python-Markdown toc's) default anchor of a heading."""
    t = re.sub(r"[^\w\s-]", "", strip_md_inline(title)).strip().lower()
    return re.sub(r"[-\s]+", "-", t)


@dataclass
class Section:
    doc: str
    level: int
    title: str
    line: int
    par: str | None = None  # its first paragraph with a plain snippet


@dataclass
class Docs:
    files: dict[str, list[str]]
    toc: dict[str, list[Section]]  # each file's headings, in order
    anchors: dict[tuple[str, str], Section]  # (file, slug) -> section


def first_par(lines: list[str], start: int) -> str | None:
    """The first prose paragraph after line ``start`` (before the next heading) with a plain
    snippet; fenced code, blocks, admonitions, lists, tables and HTML are skipped."""
    j, in_fence = start + 1, False
    while j < len(lines) and not re.match(r"^#{1,6}\s", lines[j]):
        if FENCE.match(lines[j]):
            in_fence = not in_fence
            j += 1
            continue
        if in_fence or not lines[j].strip() or NOT_PROSE.match(lines[j]):
            j += 1
            continue
        buf = []
        while j < len(lines) and lines[j].strip() and not re.match(r"^\s*(```|///)", lines[j]):
            buf.append(lines[j].strip())
            j += 1
        txt = " ".join(buf)
        if plain_snippet(txt):
            return txt
    return None


def headings(doc: str, lines: list[str]) -> list[Section]:
    """The ATX headings of a file outside fenced code, each with its first paragraph."""
    out: list[Section] = []
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else HEADING.match(line)
        if m:
            out.append(Section(doc, len(m.group(1)), m.group(2), i))
    for s in out:
        s.par = first_par(lines, s.line)
    return out


def read_docs(root: Path) -> Docs:
    docs = Docs({}, {}, {})
    for p in sorted(root.rglob("*.md")):
        doc = p.relative_to(root).as_posix()
        docs.files[doc] = p.read_text(encoding="utf-8").splitlines()
        docs.toc[doc] = headings(doc, docs.files[doc])
        for s in docs.toc[doc]:
            docs.anchors[(doc, slug(s.title))] = s
    return docs


def _case(query: str, category: str, doc: str, text: str | None, exclude: list[str] | None = None) -> Case:
    return {"id": "", "query": query, "gold": [{"doc": doc, "text": text}], "category": category,
            "exclude_docs": exclude or []}


def changelog_cases(root: Path, docs: Docs) -> list[Case]:
    """Changelog entries "NEW/FIX: Extension: ..." of an extension with its own page."""
    page_of: dict[str, str] = {}  # an extension page's title, letters only -> the page
    for doc, toc in docs.toc.items():
        title = next((s.title for s in toc if s.level == 1), None)
        if doc.startswith("pymdownx/ext") and title is not None:
            page_of[re.sub(r"\W", "", title.lower())] = doc
    out: list[Case] = []
    per_page: dict[str, int] = {}
    for entry in re.split(r"\n(?=-\s+\*\*)", (root / CHANGELOG).read_text(encoding="utf-8")):
        m = CHANGE.match(entry)
        page = page_of.get(re.sub(r"\W", "", m.group(2).lower())) if m else None
        if m is None or page is None:
            continue
        q = strip_md_inline(m.group(2) + ": " + m.group(3).split("\n\n")[0])
        if len(q.split()) < 7 or len(q) > 400:
            continue
        per_page[page] = per_page.get(page, 0) + 1
        if per_page[page] <= CHANGELOG_PER_PAGE:
            out.append(_case(q, "changelog", page, None, [CHANGELOG]))
    return out


def _link_case(docs: Docs, doc: str, flat: str, m: re.Match[str]) -> Case | None:
    """The case of one link in paragraph ``flat`` of ``doc``, or None if it makes none."""
    tgt = posixpath.normpath(posixpath.join(posixpath.dirname(doc), m.group(2))) if m.group(2) else doc
    if tgt == doc or tgt not in docs.files:
        return None
    anchor = (m.group(3) or "")[1:]
    snippet = None
    if anchor:
        s = docs.anchors.get((tgt, anchor))
        if s is None or not s.par:
            return None
        snippet = plain_snippet(s.par)
    sent = next((x for x in re.split(r"(?<=[.!?])\s+", flat) if m.group(0) in x), None)
    if not sent:
        return None
    q = strip_md_inline(re.sub(r"^([-*]|\d+\.)\s+", "", sent))
    if len(q.split()) < 7 or len(q) > 350 or q.startswith(("!!!", "///", "|", "[")):
        return None
    return _case(q, "xref-context", tgt, snippet, [doc])


def xref_cases(docs: Docs) -> list[Case]:
    """The sentence around every link to another page of the corpus (changelogs left out)."""
    out: list[Case] = []
    for doc, lines in docs.files.items():
        if "changelog" in doc or "release-" in doc:
            continue
        text = re.sub(r"```.*?```", "", "\n".join(lines), flags=re.S)
        for par in re.split(r"\n\s*\n", text):
            flat = " ".join(par.split())
            out += [c for m in LINK.finditer(flat) if (c := _link_case(docs, doc, flat, m)) is not None]
    return out


def docstring_cases(root: Path, source: Path) -> list[Case]:
    """Each extension module's own description of itself -> the extension's page."""
    out: list[Case] = []
    for py in sorted(map(str, (source / "pymdownx").glob("*.py"))):
        name = Path(py).stem
        doc = f"pymdownx/extensions/{name}.md"
        if not (root / doc).exists():
            doc = f"pymdownx/extras/{name}.md"
        if not (root / doc).exists():
            continue
        ds = ast.get_docstring(ast.parse(Path(py).read_text(encoding="utf-8"))) or ""
        m = re.search(r"pymdownx\.\w+\n(.*?)(\n\n|$)", ds, re.S)
        if m and len(m.group(1).split()) >= 4:
            out.append(_case(" ".join(m.group(1).split()), "docstring", doc, None))
    for py in sorted(map(str, (source / "markdown" / "extensions").glob("*.py"))):
        src = Path(py).read_text(encoding="utf-8")
        u = re.search(r"Python-Markdown\.github\.io/extensions/(\w+)", src)
        m = re.search(r"^# ={5,}\n#\s*\n# (.+?)\n#\s*\n", src, re.M | re.S)
        if u and m and (root / f"markdown/extensions/{u.group(1)}.md").exists():
            out.append(_case(" ".join(m.group(1).replace("#", " ").split()), "docstring",
                             f"markdown/extensions/{u.group(1)}.md", None))
    return out


def option_cases(docs: Docs) -> list[Case]:
    """The description cells of every options table (header row starting "Option |")."""
    out: list[Case] = []
    for doc, lines in docs.files.items():
        for i, line in enumerate(lines):
            if not (re.match(r"^\s*Option\s*\|", line) and i + 1 < len(lines)
                    and re.match(r"^[\s|:-]+$", lines[i + 1])):
                continue
            j = i + 2
            while j < len(lines) and "|" in lines[j]:
                cell = [c.strip() for c in lines[j].strip().strip("|").split("|")][-1]
                desc, snippet = strip_md_inline(cell), plain_snippet(cell, n=8, min_words=4)
                if len(desc.split()) >= 6 and snippet:
                    out.append(_case(desc, "option-row", doc, snippet))
                j += 1
    return out


def heading_cases(docs: Docs) -> list[Case]:
    """Titles of level 2 or deeper, of two words or more (the control)."""
    return [_case(strip_md_inline(s.title), "heading", s.doc, plain_snippet(s.par))
            for toc in docs.toc.values() for s in toc
            if s.level >= 2 and s.par and len(s.title.split()) >= 2]


def cases(root: Path, extra: Path) -> list[Case]:
    docs = read_docs(root)
    rng = random.Random(SEED)
    picked: list[Case] = []
    for found, keep in ((changelog_cases(root, docs), CHANGELOG_CASES), (xref_cases(docs), XREF_CASES),
                        (docstring_cases(root, extra), None), (option_cases(docs), OPTION_CASES),
                        (heading_cases(docs), HEADING_CASES)):
        if keep is not None:
            rng.shuffle(found)
        picked += found[:keep]
    return unique_questions(picked, "md")


def main() -> int:
    return generate("mkdocs_md", lambda root: cases(root, corpora_dir() / "_extra" / "mkdocs_md"), OUT)


if __name__ == "__main__":
    sys.exit(main())
