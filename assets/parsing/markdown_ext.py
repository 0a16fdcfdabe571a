"""The Markdown extensions documentation sites are written in, rewritten to what they render.

MkDocs (Material, pymdown-extensions) and Python-Markdown sites write markup CommonMark reads as
something else (a measured pass over 82 real pages of Python-Markdown's and pymdown-extensions'
own documentation):

* meta-data without a `---` fence (`title: Footnotes Extension` as the first lines: 35 of 36
  Python-Markdown pages) was the opening paragraph, and the page had no title;
* an admonition (`!!! note "Title"`, collapsible `??? tip` / `???+ tip`) or a content tab
  (`=== "Tab"`) is a marker line over a body indented four spaces: the marker was folded into the
  text and a body after a blank line became a code block (55 of 96 admonitions);
* a pymdownx block (`/// note | Title` … `///`) kept its fence lines as text (224 of 1,124
  chunks);
* attribute lists (`{: .class }`, `{#id}` after a heading) and inline-highlight prefixes
  (`` `#!py3 True` ``) were read as words.

`rewrite` turns each into plain Markdown before the tokenizer sees it: a marker becomes its
label ("See Also: " before the body's first line, as the reST reader labels an admonition), the
body is dedented (and rewritten in turn), and fence lines, options and attribute lists go.
Fenced code is left alone.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

__all__ = ["in_fence", "rewrite", "split_meta", "without_code_spans"]

# Python-Markdown's meta-data: `key: value` lines, a value continued on lines indented 4 spaces
_META_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_-]*):[ \t]*(.*)$")
_META_MORE = re.compile(r"^(?: {4,}|\t)(.*)$")
# a lone `Note: the parser ...` paragraph is text, so one line counts as meta-data only under a
# key such pages use
_META_KEYS = {"title", "summary", "description", "authors", "author", "date", "tags", "keywords", "template",
              "icon", "status", "hide", "subtitle", "lang", "slug", "category", "categories", "search"}

_MARKER = re.compile(r"""^(?P<kind>!!!|\?\?\?\+?|===)[ \t]+(?:(?P<type>[\w-]+)(?:[ \t]+[\w-]+)*)?"""
                     r"""[ \t]*(?:"(?P<title>[^"]*)")?[ \t]*$""")
_BLOCK_OPEN = re.compile(r"^(?P<fence>/{3,})[ \t]*(?P<type>[\w-]+)[ \t]*(?:\|[ \t]*(?P<title>.*?))?[ \t]*$")
_OPTION = re.compile(r"^(?: {4,}|\t)[\w-]+:")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# {: .class }, {#id}, {: #id .class }, { .class } (not a format spec such as {:.2f})
# (only #id, .class and key=value tokens: "node_metadata{.h, .cc}" is a file name)
# Every quantifier possessive and a match starting only where a run of blanks starts, so each
# attempt reads its characters once: linear, whatever the line (a review's hostile lines took
# quadratic time)
_ATTR_PART = r"""(?:[#.][A-Za-z_][\w-]*+|[A-Za-z_][\w-]*+=(?:"[^"\n]*+"|'[^'\n]*+'|[^\s}]++))"""
_ATTR_LIST = re.compile(r"(?<![ \t])[ \t]*+\{:?[ \t]*+" + _ATTR_PART + r"(?:[ \t]++" + _ATTR_PART + r")*+[ \t]*+\}")
_TICKS = re.compile(r"`+")
_INLINE_HIGHLIGHT = re.compile(r"`#!\w+[ \t]+")
_ICON = re.compile(r":(?:octicons|material|fontawesome|simple)-[\w-]+:")
_EMPTY_LINK = re.compile(r"\[[ \t]*\](?:\[[^\]\n]*\]|\([^)\n]*\))")  # what an icon-only link leaves
_SNIPPET = re.compile(r"^-{1,}8<-{1,}[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\S+)[ \t]*$")  # pymdownx snippets' include line
_LABELS = {"seealso": "See also", "tldr": "TL;DR"}
# A reference link whose definition is not in the file (MkDocs sites keep them in a shared
# snippet the page includes) stays "[Critic Markup][critic-markup]" in CommonMark: every chunk's
# summary carried the slug. Outside code spans it reads as its label. Not after a word or a
# bracket, not before one: `matrix[i][j]` and "[len][name][len][name]" are not links.
# (possessive: one pass over a label, whatever follows it)
_REFERENCE = re.compile(r"(?<![\w\]])\[([^\[\]\n]++)\]\[([^\[\]\n]*+)\](?!\[)")
_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:")
_WORDS = re.compile(r"[a-z0-9]+")
_UNLABELLED_BLOCKS = {"html", "define"}  # pymdownx blocks whose type names no section a reader sees


def split_meta(text: str) -> tuple[dict[str, Any], str]:
    """(meta-data, the rest) for a page opening with Python-Markdown meta-data; ({}, text) else."""
    lines = text.split("\n")
    meta: dict[str, Any] = {}
    key = None
    i = 0
    while i < len(lines) and lines[i].strip():
        if (m := _META_LINE.match(lines[i])) is not None:
            key = m.group(1).lower()
            meta[key] = m.group(2).strip()
        elif key is not None and (more := _META_MORE.match(lines[i])) is not None:
            meta[key] = f"{meta[key]} {more.group(1).strip()}".strip()
        else:
            return {}, text
        i += 1
    if not meta or (len(meta) == 1 and next(iter(meta)) not in _META_KEYS):
        return {}, text
    return meta, "\n".join(lines[i:])


def _label(kind: str, type_: str | None, title: str | None) -> str:
    if kind == "///" and (type_ or "") in _UNLABELLED_BLOCKS:
        return ""  # `/// html | div.result`: the title is an element, not words
    if title is not None:
        return title.strip()
    t = (type_ or "").lower()
    return _LABELS.get(t, t.replace("-", " ").capitalize())


def _labelled(label: str, body: list[str]) -> list[str]:
    """`body` with `label` before its first line where that is running text, else on a line of
    its own."""
    out = list(body)
    first = next((k for k, ln in enumerate(out) if ln.strip()), None)
    if not label:
        return out
    if first is not None and re.match(r"[\w\"'(*_`\[]", out[first].lstrip()) and not _FENCE.match(out[first]):
        out[first] = f"{label}: {out[first].lstrip()}"
        return out
    return [f"{label}:", "", *out]


def _indented_body(lines: list[str], j: int) -> tuple[list[str], int]:
    """The lines from `j` indented 4 spaces or more (blank lines within), dedented; the index after."""
    body: list[str] = []
    while j < len(lines) and (not lines[j].strip() or lines[j].startswith(("    ", "\t"))):
        body.append(lines[j][4:] if lines[j].startswith("    ") else lines[j][1:] if lines[j].startswith("\t") else "")
        j += 1
    while body and not body[-1].strip():
        body.pop()
        j -= 1
    return body, j


def _undefined_link(m: re.Match[str], defined: set[str]) -> bool:
    """Whether `[label][ref]` is a reference link the file does not define: a label with a
    letter, and a ref that is empty or names the label's words ("[Critic Markup][critic-markup]",
    "[the docs][docs]"; "[WARN][auth]" in a log line is not a link)."""
    label, ref = m.group(1), m.group(2).strip()
    if not re.search("[A-Za-z]", label) or (ref or label).strip().lower() in defined:
        return False
    said = set(_WORDS.findall(label.lower()))
    return not ref or set(_WORDS.findall(ref.lower())) <= said


def _outside_code(line: str, defined: set[str]) -> str:
    """A line without attribute lists, icons and undefined reference links (outside its code
    spans) and without inline-highlight prefixes (inside them). `defined`: the reference labels
    the file defines, lower-cased."""
    line = _INLINE_HIGHLIGHT.sub("`", line) if "#!" in line else line
    if "{" not in line and ":" not in line and "][" not in line:
        return line

    def prose(text: str) -> str:
        text = _EMPTY_LINK.sub("", _ICON.sub("", _ATTR_LIST.sub("", text)))
        if "][" not in text:
            return text
        return _REFERENCE.sub(lambda m: m.group(1) if _undefined_link(m, defined) else m.group(0), text)

    parts, at = [], 0
    for start, end in _code_spans(line):
        parts += [prose(line[at:start]), line[start:end]]
        at = end
    parts.append(prose(line[at:]))
    return "".join(parts)


def without_code_spans(line: str) -> str:
    """`line` with its code spans left out."""
    parts, at = [], 0
    for start, end in _code_spans(line):
        parts.append(line[at:start])
        at = end
    parts.append(line[at:])
    return "".join(parts)


def _code_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each code span: a run of backticks up to the next run of the same length,
    as CommonMark pairs them. Each run's partner is looked up in a per-length index, not searched
    for: a line of runs of ever longer lengths made a regex's search quadratic (a review)."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for n, (a, b) in enumerate(runs):
        by_length.setdefault(b - a, []).append(n)
    spans: list[tuple[int, int]] = []
    n = 0
    while n < len(runs):
        a, b = runs[n]
        same = by_length[b - a]
        k = bisect.bisect_right(same, n)
        if k < len(same):  # the next run of this length closes the span
            close = same[k]
            spans.append((a, runs[close][1]))
            n = close + 1
        else:
            n += 1
    return spans


def in_fence(fence: str | None, line: str) -> tuple[str | None, bool]:
    """(the fence open after `line`, given the one open before it; whether `line` is fenced
    code, its fences included)."""
    if (f := _FENCE.match(line)) is not None and (fence is None or f.group(1).startswith(fence)):
        return (None if fence is not None else f.group(1)[0] * 3), True
    return fence, fence is not None


def rewrite(text: str, depth: int = 0, defined: set[str] | None = None) -> str:
    """`text` with the extensions above rewritten to plain Markdown (see the module's doc)."""
    if "!!!" not in text and "???" not in text and "===" not in text and "///" not in text \
            and "{" not in text and "#!" not in text and ":" not in text and "8<" not in text and "][" not in text:
        return text
    lines = text.split("\n")
    if defined is None:
        defined = {m.group(1).strip().lower() for ln in lines if (m := _DEFINITION.match(ln))}
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence, code = in_fence(fence, line)
        if code:
            out.append(line)
            i += 1
            continue
        if depth < 20 and (m := _MARKER.match(line)) is not None and (m.group("type") or m.group("title") is not None):
            body, i = _indented_body(lines, i + 1)
            out += ["", *_labelled(_label(m.group("kind"), m.group("type"), m.group("title")),
                                   rewrite("\n".join(body), depth + 1, defined).split("\n")), ""]
            continue
        if depth < 20 and (b := _BLOCK_OPEN.match(line)) is not None:
            close = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == b.group("fence")), None)
            if close is not None:
                j = i + 1
                while j < close and _OPTION.match(lines[j]):
                    j += 1  # the block's options (`    type: warning`)
                inner = rewrite("\n".join(lines[j:close]), depth + 1, defined).split("\n")
                out += ["", *_labelled(_label("///", b.group("type"), b.group("title")), inner), ""]
                i = close + 1
                continue
        if not _SNIPPET.match(line):  # what it includes is another file, indexed as itself
            out.append(_outside_code(line, defined))
        i += 1
    return "\n".join(out)
