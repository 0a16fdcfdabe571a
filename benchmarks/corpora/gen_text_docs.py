"""Generate ``benchmarks/evalsets/text_docs.jsonl`` from plain-text documentation files.

    python -m benchmarks.corpora.gen_text_docs [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/text_docs``, laid out by ``fetch.sh``) is 49 plain-text files as Debian 12
ships them in ``/usr/share/doc`` (gzip-compressed where Debian compresses them) and Vim's help:

- ``faq/``: eight FAQs, each in its own layout: numbered entries ("1.5 Is GNU Midnight Commander
  Public Domain?", mc, slrn, sed, procmail), ``Q:``/``A:`` pairs (screen), unnumbered question
  lines over an indented answer (tcsh, xterm) and reStructuredText section titles (docutils'
  FAQ.txt, from its PyPI sdist);
- ``vimhelp/``: twenty Vim 9.0 help files (reference and user manual);
- ``text/``: 21 READMEs, NEWS files and notes (setext-underlined, numbered, outline-mode and
  dashed section titles).

Every question is read off the documents' own structure, none is written by hand:

- ``faq``: every FAQ entry's question as the file writes it (its number and ``Q:`` removed, lines
  joined); gold = the file + the answer's first eight normalised words. The question is also in
  the file (and in a contents list, where the FAQ has one): nothing is excluded, as in
  python_faq. Entries are questions ("?"), or problem statements ending in "." or "!"; numbered
  topic headings ("Unix platforms") are not entries. At most 12 per file, spread evenly.
- ``vimhelp``: command, option and function entries (a line of ``*tags*`` over a command line
  at column 0 and its tab-indented description): the query is the description's first sentence
  (at most 14 words, ``|links|``, ``{args}`` and ``[count]`` brackets and quotes removed), gold =
  the file + the description's first eight words. A file with fewer than six such entries is
  filled up with its section titles (the user manual's ``*08.1*`` titles, a title under a
  ``====`` rule), gold = the first words after the title. At most 6 per file, spread evenly.
- ``text``: section titles (a setext underline, an outline-mode ``*``/``**`` line, a numbered
  title line, a ``---- TITLE ----`` rule, a short title line at column 0 over an indented
  paragraph), gold = the file + the first eight words of the section's first paragraph. At
  most 5 per file, spread evenly.

A question asked twice (a "Bug fixes" heading in each NEWS release) is dropped with both its
answers (`unique_questions`). Categories: ``faq``, ``vimhelp``, ``text``.
"""

from __future__ import annotations

import gzip
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from benchmarks.corpora.evalset_tools import Case, generate, opening_words, unique_questions
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "text_docs.jsonl"
GOLD_WORDS = 8
CAPS = {"faq": 12, "vimhelp": 6, "text": 5}

Para = tuple[int, int]  # [start, end) line indices of a run of non-blank lines
Found = tuple[str, str]  # (query, gold snippet)

_NUMBER = re.compile(r"^(\s*)(\d+(?:\.\d+)*)\.?\s+(\S.*)$")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")
_TAGS = re.compile(r"(?:\s*\*[^*\s]+\*)+\s*$")
_RULE_TITLE = re.compile(r"^-{3,}\s+(\S.*?)\s+-{3,}$")
_BULLET = re.compile(r"^\s*(?:[*+o•-]|\d+\))\s")


def read(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace").expandtabs(8).replace("\r", "").split("\n")


def read_raw(path: Path) -> list[str]:
    """The lines with their tabs (Vim help's columns are tabs)."""
    return path.read_text(encoding="utf-8", errors="replace").split("\n")


def paragraphs(lines: list[str]) -> list[Para]:
    out: list[Para] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        out.append((i, j))
        i = j
    return out


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def joined(lines: list[str], para: Para) -> str:
    return " ".join(lines[k].strip() for k in range(*para))


def snippet(lines: list[str], paras: list[Para], k: int, strip: str = "") -> str | None:
    """The first GOLD_WORDS words from paragraph k on (a short paragraph runs on into the next)."""
    words: list[str] = []
    while k < len(paras) and len(words) < GOLD_WORDS:
        text = joined(lines, paras[k])
        if strip and not words:
            text = re.sub(strip, "", text, count=1)
        words += normalise(text).split()
        k += 1
    return " ".join(words[:GOLD_WORDS]) if len(words) >= 4 else None


def spread(found: list[Found], cap: int) -> list[Found]:
    """At most `cap` items, evenly spaced through the file (no sampling: deterministic)."""
    if len(found) <= cap:
        return found
    step = len(found) / cap
    return [found[int(k * step)] for k in range(cap)]


# ---- FAQs -----------------------------------------------------------------------------------

def _is_entry(question: str) -> bool:
    q = question.rstrip()
    return "?" in q or q.endswith((".", "!"))


def faq_qa(lines: list[str], paras: list[Para]) -> list[Found]:
    """``Q:`` paragraphs answered by the next paragraph, which starts ``A:``."""
    out: list[Found] = []
    for k, (s, e) in enumerate(paras[:-1]):
        if lines[s].lstrip().startswith("Q:") and lines[paras[k + 1][0]].lstrip().startswith("A:"):
            gold = snippet(lines, paras, k + 1, strip=r"^A:\s*")
            if gold:
                out.append((joined(lines, (s, e)).strip()[2:].strip(), gold))
    return out


def faq_numbered(lines: list[str], paras: list[Para]) -> list[Found]:
    """A short paragraph opening with a number ("1.5", "4.10.", "3.") over an answer paragraph
    that is not numbered itself (a contents list runs its numbered lines together)."""
    out: list[tuple[str, str, str]] = []
    for k, (s, e) in enumerate(paras[:-1]):
        m = _NUMBER.match(lines[s])
        if not m or len(m.group(1)) > 2 or e - s > 3:
            continue
        if any(_NUMBER.match(lines[x]) for x in range(s + 1, e)):
            continue
        nxt = paras[k + 1][0]
        if _NUMBER.match(lines[nxt]) or indent(lines[nxt]) < indent(lines[s]):
            continue
        question = " ".join([m.group(3).strip()] + [lines[x].strip() for x in range(s + 1, e)])
        if _is_entry(question) and (gold := snippet(lines, paras, k + 1)):
            out.append((m.group(2), question, gold))
    # a number used twice is a list inside an answer ("1. Edit the header..."), not an entry
    labels = Counter(label for label, _, _ in out)
    return [(question, gold) for label, question, gold in out if labels[label] == 1]


def faq_titles(lines: list[str], paras: list[Para]) -> list[Found]:
    """reStructuredText section titles that ask a question (a title line over its underline)."""
    out: list[Found] = []
    for k, (s, e) in enumerate(paras[:-1]):
        if e - s != 2 or not _UNDERLINE.match(lines[s + 1]) or "?" not in lines[s]:
            continue
        same_length = abs(len(lines[s + 1].strip()) - len(lines[s].strip())) <= 2
        if same_length and (gold := snippet(lines, paras, k + 1)):
            out.append((lines[s].strip(), gold))
    return out


def faq_lines(lines: list[str], paras: list[Para]) -> list[Found]:
    """Unnumbered question lines (no bullet) over a more indented answer."""
    out: list[Found] = []
    for k, (s, e) in enumerate(paras[:-1]):
        text = joined(lines, (s, e))
        if e - s > 3 or not text.endswith("?") or _BULLET.match(lines[s]):
            continue
        if indent(lines[paras[k + 1][0]]) > indent(lines[s]) and (gold := snippet(lines, paras, k + 1)):
            out.append((text, gold))
    return out


FAQ_STYLES: list[Callable[[list[str], list[Para]], list[Found]]] = [faq_qa, faq_numbered, faq_titles, faq_lines]


def faq_entries(path: Path) -> list[Found]:
    """The entries of the layout that finds the most in this file (one FAQ, one layout)."""
    lines = read(path)
    paras = paragraphs(lines)
    return max((style(lines, paras) for style in FAQ_STYLES), key=len)


# ---- Vim help -------------------------------------------------------------------------------

def _query_words(sentence: str) -> str:
    s = re.sub(r"\|([^|\s]+)\|", r"\1", sentence)
    s = re.sub(r"[{}\[\]]", "", s)
    s = re.sub(r"(?<![\w])'([^'\s]+)'", r"\1", s)
    words = s.split()
    return " ".join(words[:14]).rstrip(".,;:")


def vim_commands(lines: list[str]) -> list[Found]:
    """Entries: a line ending in *tags* (the tags alone, or after a command form), then command
    lines at column 0 until a blank line; the description follows the first command line's
    tab (if it starts with a capital) or is the next tab-indented lines."""
    out: list[Found] = []
    i = 0
    while i < len(lines):
        if not _TAGS.search(lines[i]) or not lines[i].strip():
            i += 1
            continue
        j = i
        desc: list[str] = []
        while j < len(lines) and lines[j].strip():
            line = lines[j]
            body = _TAGS.sub("", line)
            if line[:1] not in ("\t", " ") and "\t" in body:
                left, right = body.split("\t", 1)
                right = right.strip()
                if len(left) <= 40 and not left.rstrip().endswith(".") and right[:1].isupper():
                    desc = [right]
                    j += 1
                    break
            elif line[:1] == "\t" and body.strip() and j > i and not desc:
                prev = lines[j - 1]
                after_command = prev[:1] not in ("\t", " ", "") and not prev.rstrip().endswith(".")
                if after_command and body.strip()[:1].isupper():
                    desc = [body.strip()]
                    j += 1
                    break
            j += 1
        if desc:
            # the description's own lines: tab-indented, up to a blank line, an example or a tag
            while j < len(lines) and lines[j][:1] == "\t" and lines[j].strip() and not _TAGS.search(lines[j]):
                desc.append(lines[j].strip())
                if lines[j].rstrip().endswith(">"):
                    break
                j += 1
            text = " ".join(desc)
            text = text[:-1] if text.endswith(">") else text
            plain = re.sub(r"\b(e\.g|i\.e|etc)\.", r"\1", text)
            first = re.split(r"(?<=[^\s.])\.(?:\s|$)", plain, maxsplit=1)[0]
            query = _query_words(first)
            gold = opening_words(text, GOLD_WORDS)
            if len(query.split()) >= 3 and len(gold.split()) >= 4:
                out.append((query, gold))
        i = max(j, i + 1)
    return out


def vim_sections(lines: list[str]) -> list[Found]:
    """Section titles: the user manual's ``*08.1*  Title`` lines and a title under a ``====``
    rule; gold = the first paragraph after it."""
    out: list[Found] = []
    paras = paragraphs(lines)
    for i, line in enumerate(lines):
        m = re.match(r"^\*\d+\.\d+\*\s+(\S.*)$", line)
        if m:
            title = _TAGS.sub("", m.group(1))
        elif i > 0 and re.match(r"^={20,}\s*$", lines[i - 1]) and line.strip():
            title = re.sub(r"^\d+\.\s*", "", _TAGS.sub("", line))
        else:
            continue
        title = _query_words(title.strip())
        k = next((k for k, (s, _) in enumerate(paras) if s > i), None)
        if k is not None and len(title.split()) >= 2 and (gold := snippet(lines, paras, k)):
            out.append((title, gold))
    return out


# ---- README / NEWS ------------------------------------------------------------------------

def _title(lines: list[str], s: int, e: int, outline: bool) -> tuple[str, int] | None:
    """The section title that paragraph [s, e) opens with, and its last line, if it has one."""
    line = lines[s]
    if e - s >= 2 and _UNDERLINE.match(lines[s + 1]) and not _UNDERLINE.match(line):
        if abs(len(lines[s + 1].strip()) - len(line.strip())) <= 3:
            return line.strip(), s + 1  # setext: a title over its underline
        return None
    if outline and re.match(r"^\*+ \S", line):
        return line.lstrip("* ").strip(), s  # Emacs outline mode: "* Noteworthy changes..."
    if e - s == 1 and (m := _RULE_TITLE.match(line.strip())):
        return m.group(1), s  # "------ SYSTEM REQUIREMENTS ------"
    if e - s == 1 and (m := _NUMBER.match(line)) and len(m.group(1)) <= 2:
        return m.group(3).strip(), s  # "1.  Checking the rc file" alone on its line
    over_indented = e - s >= 3 and indent(lines[s + 1]) >= 4 and indent(lines[s + 2]) >= 4
    short_title = re.match(r"[A-Za-z][^:,\\]*$", line) is not None and len(line.split()) <= 8
    if over_indented and short_title:
        return line.strip(), s  # a title at column 0 over its indented text (KNOWN_BUGS)
    return None


def text_sections(path: Path) -> list[Found]:
    lines = read(path)
    outline = "-*- outline -*-" in "\n".join(lines[:3])
    titled: dict[int, tuple[str, int]] = {}
    for s, e in paragraphs(lines):
        if found := _title(lines, s, e, outline):
            titled[s] = found
    skip = {i for s, (_, last) in titled.items() for i in range(s, last + 1)}
    out: list[Found] = []
    for _, (title, last) in sorted(titled.items()):
        if title.endswith((".", ":", ",", ";")) or not 2 <= len(title.split()) <= 12:
            continue
        # the section's own first words: the lines after the title, past blank lines, rules and
        # the titles of its subsections
        words: list[str] = []
        i = last + 1
        while i < len(lines) and len(words) < GOLD_WORDS:
            if i in skip or not lines[i].strip() or _UNDERLINE.match(lines[i]):
                # a blank line after a short paragraph runs on into the next; a title stops
                if words and lines[i].strip():
                    break
                i += 1
                continue
            words += normalise(lines[i]).split()
            i += 1
        if len(words) >= 4:
            out.append((title, " ".join(words[:GOLD_WORDS])))
    return out


def cases(root: Path) -> list[Case]:
    made: list[Case] = []

    def add(category: str, path: Path, found: list[Found]) -> None:
        seen: set[str] = set()
        kept: list[Found] = []
        for query, gold in found:  # one file asking a question twice keeps the first
            if query.lower() not in seen:
                seen.add(query.lower())
                kept.append((query, gold))
        for query, gold in spread(kept, CAPS[category]):
            query = " ".join(query.split())
            made.append({"id": "", "query": query, "category": category, "exclude_docs": [],
                         "gold": [{"doc": path.relative_to(root).as_posix(), "text": gold}]})

    for path in sorted((root / "faq").iterdir()):
        add("faq", path, faq_entries(path))
    for path in sorted((root / "vimhelp").iterdir()):
        lines = read_raw(path)
        found = vim_commands(lines)
        if len(found) < CAPS["vimhelp"]:
            found = found + vim_sections(lines)[: CAPS["vimhelp"] - len(found)]
        add("vimhelp", path, found)
    for path in sorted((root / "text").iterdir()):
        add("text", path, text_sections(path))
    return unique_questions(made, "text_docs")


def main() -> int:
    return generate("text_docs", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
