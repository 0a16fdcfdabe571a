"""Markdown tokens from markdown-it-pyrs (the Rust port of markdown-it), in markdown-it-py's shape.

markdown-it-py reads Markdown at about 1 MB/s on these machines; on a link-dense documentation
tree (Node.js' API docs: 7.7 MB of Markdown) it was three quarters of parsing and the largest
part of a `bindery plan`. markdown-it-pyrs builds a CommonMark syntax tree about ten times
faster. `tokens(text)` flattens that tree into the token stream `assets.parsing.markdown._blocks`
reads, so one block builder serves both parsers, and on real documents the blocks are the same:
`tests/test_markdown_fast.py` compares them document by document.

What the block builder reads, and how the tree gives it:

- block tokens `*_open` / `*_close` for headings (tag `h1`..`h6`), lists, list items, block
  quotes, tables and table rows, and the leaf tokens `fence` / `code_block` (content, info) and
  `html_block`;
- one `inline` token per paragraph, heading and table cell. The builder only joins the text of
  its children (text, entities and escapes, code spans, a space per line break, an image's alt
  text; emphasis and link markup and raw inline HTML tags dropped), so the child here is that
  text, joined once. A tight list item's text sits directly in
  the item in the tree; markdown-it-py wraps it in a hidden paragraph, and so does this.
- autolinks show their address through markdown-it-py's own `normalizeLinkText`, as it does.

One difference is known and kept: past markdown-it-py's nesting limit (20 levels: ten nested
lists, twenty `>`) it silently drops the text, and the Rust parser keeps it. On random
Markdown-like noise (20,000 strings of markup fragments) the two differ more often, about 7 % (runs
of `*`, raw HTML comments across lines), and markdown-it-pyrs 0.4 panics on a `[` followed by a
code span that never closes (`see [`foo`): the panic is caught and markdown-it-py parses that
document, but Rust prints a three-line "panicked at" note on stderr first. None of the 742 real
files panicked or differed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markdown_it.common.normalize_url import normalizeLinkText

__all__ = ["Tok", "available", "tokens"]

try:
    import markdown_it_pyrs
except ImportError:  # the product ships it; without it markdown-it-py parses alone
    _RS = None
else:
    _RS = markdown_it_pyrs.MarkdownIt("commonmark").enable("table")


@dataclass(slots=True)
class Tok:
    """The parts of a markdown-it-py `Token` the block builder reads."""

    type: str
    tag: str = ""
    content: str = ""
    info: str = ""
    children: list[Tok] | None = field(default=None)


# tree node -> the token pair markdown-it-py emits around its children
_CONTAINERS = {"bullet_list": "bullet_list", "ordered_list": "ordered_list", "list_item": "list_item",
               "blockquote": "blockquote", "table": "table", "trow": "tr", "thead": "thead", "tbody": "tbody"}
_BLOCKS = {*_CONTAINERS, "root", "paragraph", "heading", "lheading", "tcell", "fence", "code_block", "html_block", "hr"}
_WRAPPERS = {"em", "strong", "link", "strikethrough"}  # markup around text: the text is kept


def available() -> bool:
    return _RS is not None


def tokens(text: str) -> list[Tok]:
    """markdown-it-py's block token stream for `text` (CommonMark + GFM tables)."""
    assert _RS is not None, "markdown-it-pyrs is not installed"
    out: list[Tok] = []
    # CommonMark replaces NUL with U+FFFD, as markdown-it-py does; the Rust port drops it
    _block(_RS.tree(text.replace("\x00", "\ufffd")), out)
    return out


def _block(node: Any, out: list[Tok]) -> None:
    name = node.name
    if name in ("heading", "lheading"):  # ATX and setext
        out += [Tok("heading_open", tag=f"h{node.meta['level']}"), _inline(node.children), Tok("heading_close")]
    elif name == "paragraph":
        out += [Tok("paragraph_open"), _inline(node.children), Tok("paragraph_close")]
    elif name == "tcell":
        out += [Tok("td_open"), _inline(node.children), Tok("td_close")]
    elif name in ("fence", "code_block"):
        out.append(Tok(name, content=node.meta.get("content", ""), info=node.meta.get("info", "")))
    elif name == "html_block":
        out.append(Tok(name, content=node.meta.get("content", "")))
    elif name == "hr":
        out.append(Tok("hr"))
    elif name in _CONTAINERS or name == "root":
        kind = _CONTAINERS.get(name)
        if kind:
            out.append(Tok(f"{kind}_open"))
        _children(node.children, out)
        if kind:
            out.append(Tok(f"{kind}_close"))


def _children(children: list[Any], out: list[Tok]) -> None:
    """Block children; a run of inline nodes (a tight list item's text) becomes one hidden
    paragraph, as markdown-it-py makes it."""
    run: list[Any] = []
    for child in children:
        if child.name in _BLOCKS:
            if run:
                out += [Tok("paragraph_open"), _inline(run), Tok("paragraph_close")]
                run = []
            _block(child, out)
        else:
            run.append(child)
    if run:
        out += [Tok("paragraph_open"), _inline(run), Tok("paragraph_close")]


def _inline(nodes: list[Any]) -> Tok:
    """The inline token of a paragraph, heading or cell. Its children are reduced at once to the
    one text the builder's `_inline_text` would join from markdown-it-py's flat children."""
    parts: list[str] = []
    for node in nodes:
        _text(node, parts)
    return Tok("inline", children=[Tok("text", content="".join(parts))])


def _text(node: Any, parts: list[str]) -> None:
    name = node.name
    if name in ("text", "text_special"):  # text_special: an entity or an escaped character
        parts.append(node.meta.get("content", ""))
    elif name in ("softbreak", "hardbreak"):
        parts.append(" ")
    elif name == "autolink":
        parts.append(normalizeLinkText("".join(c.meta.get("content", "") for c in node.children)))
    elif name in _WRAPPERS or name in ("code_inline", "image"):  # an image's alt text is its text
        for child in node.children:
            _text(child, parts)
    # html_inline and anything unknown: no text, as markdown-it-py's builder reads it
