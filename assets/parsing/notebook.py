"""Jupyter notebooks (.ipynb) as the document a reader sees: prose, headings and code in order.

A notebook is JSON: read as JSON data (`jsondoc`) or as text, its prose came out as
`"source": [...]` lines between execution counts and cell ids, and its headings were lost. Here
each cell becomes what it renders as:

* a Markdown cell is parsed as Markdown (`markdown.parse_markdown`): its `#` lines are headings,
  so sections span the cells below them, as in the notebook's table of contents;
* a code cell is a `code` block in the kernel's language (`metadata.kernelspec.language`, else
  `language_info.name`);
* a raw cell is a paragraph; nbformat 3's heading cells are headings;
* an output's plain text (a stream, a result's `text/plain`) is kept as side text, at most
  MAX_OUTPUT_CHARS of it: shown, not indexed (`assets.chunking.is_side_text`). Outputs are what
  a run printed (logs, warnings, data frames), not what the author wrote; images, HTML and
  tracebacks are left out.

The title is the first level-1 heading, else the first heading, else `metadata.title`. JSON that
is no notebook (no `cells` list) is read as JSON data, with a warning. A file that is no JSON at
all (truncated by a copy, nested past the decoder's depth) is corrupt: a notebook is JSON, and
read as text it had replaced the notebook's indexed version with its raw JSON, quietly (a
bad-input pass), where a corrupt file keeps the version indexed before and is a dead letter.
"""

from __future__ import annotations

from typing import Any

from assets.parsing.jsondoc import load_json
from assets.parsing.markdown import parse_markdown
from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument

__all__ = ["parse_notebook"]

MAX_OUTPUT_CHARS = 2000


def _text(source: Any) -> str:
    """A cell's `source` (a string, or the list of lines nbformat writes)."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _language(meta: Any) -> str:
    meta = meta if isinstance(meta, dict) else {}
    for key, field in (("kernelspec", "language"), ("language_info", "name"), ("kernelspec", "name")):
        section = meta.get(key)
        if isinstance(section, dict) and isinstance(section.get(field), str) and section[field].strip():
            return str(section[field]).strip().lower()
    return "python"


def _outputs(cell: dict[str, Any]) -> list[Block]:
    """The plain text a code cell printed, as side text (see the module docstring)."""
    texts = []
    outputs = cell.get("outputs")
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict):
            continue
        if out.get("output_type") == "stream":
            texts.append(_text(out.get("text")))
        elif out.get("output_type") in ("execute_result", "display_data", "pyout"):
            data = out.get("data")
            data = data if isinstance(data, dict) else out  # nbformat 3: no "data"
            texts.append(_text(data.get("text/plain", data.get("text"))))
    text = "".join(texts).strip()
    if not text:
        return []
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS].rstrip() + " …"
    return [Block("code", text, meta={"side": "output"})]


def _cell_blocks(cell: dict[str, Any], language: str) -> list[Block]:
    kind = cell.get("cell_type")
    if kind == "markdown":  # a cell opening with "---" shows a rule, not front matter to hide
        return parse_markdown(_text(cell.get("source")), front_matter=False).blocks
    if kind == "code":
        code = _text(cell.get("source", cell.get("input"))).strip("\n")  # nbformat 3 names it input
        return ([Block("code", code, meta={"language": language})] if code.strip() else []) + _outputs(cell)
    if kind == "heading":  # nbformat 3
        level = cell.get("level")
        level = level if isinstance(level, int) and 1 <= level <= 6 else 1
        text = clean_inline(_text(cell.get("source")))
        return [Block("heading", text, level=level)] if text else []
    if kind == "raw":
        text = _text(cell.get("source")).strip()
        return [Block("paragraph", text)] if text else []
    return []


def _cells(nb: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The notebook's cells, in order (nbformat 4: `cells`; 3: its worksheets'), or None for
    JSON that is no notebook. A notebook without cells has none: an empty document."""
    cells = nb.get("cells")
    if cells is None and isinstance(nb.get("worksheets"), list):
        cells = [c for w in nb["worksheets"] if isinstance(w, dict) and isinstance(w.get("cells"), list)
                 for c in w["cells"]]
    if cells is None and "nbformat" in nb:
        cells = []
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else None


def parse_notebook(data: bytes) -> ParseResult:
    text, encoding = decode_text(data)
    try:
        nb = load_json(text)
    except ValueError as e:
        raise CorruptDocument(f"notebook is not valid JSON ({e}): truncated or damaged") from None
    except RecursionError:
        raise CorruptDocument("notebook JSON is nested too deep to read") from None
    cells = _cells(nb) if isinstance(nb, dict) else None
    if cells is None or not isinstance(nb, dict):
        from assets.parsing.jsondoc import parse_json

        result = parse_json(data)
        result.warnings.append("named .ipynb but holds no notebook cells; read as JSON data")
        return result
    meta: dict[str, Any] = nb["metadata"] if isinstance(nb.get("metadata"), dict) else {}
    language = _language(meta)
    blocks = [b for cell in cells for b in _cell_blocks(cell, language)]
    headings = [b for b in blocks if b.kind == "heading"]
    title = next((b.text for b in headings if b.level == 1), headings[0].text if headings else None)
    if not title and isinstance(meta.get("title"), str):
        title = clean_inline(meta["title"]) or None
    return ParseResult(blocks=blocks, title=title, format="notebook",
                       metadata={"encoding": encoding, "notebook": {"language": language, "cells": len(cells)}})
