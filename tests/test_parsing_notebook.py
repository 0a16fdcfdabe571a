"""Jupyter notebooks read as what they render as (`assets.parsing.notebook`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assets.chunking import chunk_blocks, is_side_text
from assets.parsing import parse_document
from connectors.config import ChunkConfig
from connectors.errors import CorruptDocument, EmptyDocument


def _nb(cells: list[dict[str, Any]], **meta: Any) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells}).encode()


def _md(*lines: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": [f"{ln}\n" for ln in lines]}


def _code(src: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": src, "outputs": list(outputs)}


NB = _nb([
    _md("# Fitting an OLS model", "", "We fit an *ordinary least squares* model to the Longley data."),
    _code("import statsmodels.api as sm\n# load the data and add a constant\nX = sm.add_constant(data.exog)",
          {"output_type": "stream", "name": "stdout", "text": ["loaded 16 rows\n"]}),
    _md("## Checking the residuals", "", "- a Q-Q plot", "- a Durbin-Watson test"),
    _code("res.summary()", {"output_type": "execute_result", "execution_count": 2, "metadata": {},
                            "data": {"text/plain": ["<class 'statsmodels.iolib.summary.Summary'>"],
                                     "image/png": "iVBORw0KGgo="}}),
    {"cell_type": "raw", "metadata": {}, "source": ".. note:: raw text for nbconvert"},
], kernelspec={"name": "ir", "language": "R", "display_name": "R"})


def test_cells_read_as_headings_prose_and_code_in_order() -> None:
    r = parse_document(NB, "examples/ols.ipynb")
    assert r.format == "notebook" and r.title == "Fitting an OLS model"
    own = [(b.kind, b.level, b.text) for b in r.blocks if not is_side_text(b)]
    assert own == [
        ("heading", 1, "Fitting an OLS model"),
        ("paragraph", 0, "We fit an ordinary least squares model to the Longley data."),
        ("code", 0, "import statsmodels.api as sm\n# load the data and add a constant\nX = sm.add_constant(data.exog)"),
        ("heading", 2, "Checking the residuals"),
        ("list_item", 0, "a Q-Q plot"), ("list_item", 0, "a Durbin-Watson test"),
        ("code", 0, "res.summary()"),
        ("paragraph", 0, ".. note:: raw text for nbconvert"),
    ]
    assert all(b.meta.get("language") == "r" for b in r.blocks if b.kind == "code" and not is_side_text(b))
    # no JSON scaffolding reaches the text
    assert not any('"cell_type"' in b.text or "execution_count" in b.text for b in r.blocks)


def test_outputs_are_side_text_and_images_are_left_out() -> None:
    side = [b.text for b in parse_document(NB, "ols.ipynb").blocks if is_side_text(b)]
    assert side == ["loaded 16 rows", "<class 'statsmodels.iolib.summary.Summary'>"]
    long = _nb([_code("print(x)", {"output_type": "stream", "name": "stdout", "text": "y" * 10_000})])
    out = [b.text for b in parse_document(long, "x.ipynb").blocks if is_side_text(b)]
    assert len(out) == 1 and len(out[0]) < 2_100


def test_nbformat_3_notebooks_are_read() -> None:
    v3 = json.dumps({"nbformat": 3, "metadata": {"name": "old"}, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 1, "source": ["Old style"]},
        {"cell_type": "markdown", "source": ["Cells under a worksheet."]},
        {"cell_type": "code", "language": "python", "input": ["a = 1"], "outputs": []}]}]}).encode()
    r = parse_document(v3, "old.ipynb")
    assert [(b.kind, b.text) for b in r.blocks] == [("heading", "Old style"), ("paragraph", "Cells under a worksheet."),
                                                    ("code", "a = 1")]
    assert r.title == "Old style"


def test_json_that_is_no_notebook_is_read_as_json_with_a_warning() -> None:
    r = parse_document(b'{"title": "settings", "retries": 3}', "settings.ipynb")
    assert r.format == "notebook" and any("no notebook cells" in w for w in r.warnings)
    assert any("retries: 3" in b.text for b in r.blocks)


def test_a_notebooks_chunks_hold_its_prose_and_code_not_its_outputs() -> None:
    r = parse_document(NB, "ols.ipynb")
    chunks = chunk_blocks(r.blocks, ChunkConfig(), title=r.title)
    text = "\n".join(c.embed_text for c in chunks)
    assert "add a constant" in text and "Durbin-Watson" in text
    assert "loaded 16 rows" not in text and "Summary'>" not in text


def test_odd_notebooks_read_or_fail_clearly() -> None:
    """A helper's pass: a cell opening with "---" lost its text as front matter, deep nesting
    was a RecursionError, outputs that are no list a TypeError, and an nbformat 3 notebook with
    no cells was indexed as JSON data."""
    rule = parse_document(_nb([_md("---", "title: Shown", "---", "", "Kept paragraph")]), "r.ipynb")
    assert "title: Shown" in " ".join(b.text for b in rule.blocks)
    with pytest.raises(CorruptDocument, match=r"nested too deep|not valid JSON"):
        parse_document(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "deep.ipynb")
    odd = parse_document(_nb([{"cell_type": "code", "source": "x = 1", "outputs": 5}]), "odd.ipynb")
    assert [b.text for b in odd.blocks] == ["x = 1"]
    for empty in (_nb([]), json.dumps({"nbformat": 3, "worksheets": []}).encode()):
        with pytest.raises(EmptyDocument):
            parse_document(empty, "empty.ipynb")


def test_a_truncated_notebook_is_corrupt_not_its_raw_json_as_text() -> None:
    """A bad-input pass: a notebook cut short by a copy was read as plain text, so a sync
    replaced its indexed version with `{ "cells": [ ...` and recorded nothing anyone saw. It
    is now a corrupt document (a dead letter; the version indexed before stays)."""
    whole = _nb([_md("# Gannet migration analysis", "", "Flight distances by season.")])
    with pytest.raises(CorruptDocument, match="not valid JSON"):
        parse_document(whole[: len(whole) * 85 // 100], "gannet.ipynb")


def test_an_integer_too_long_for_python_does_not_fail_the_notebook() -> None:
    """An output of 5,000 digits as JSON (a large factorial): Python's int limit raised a
    ValueError, the notebook and its JSON fallback a "parser failed" dead letter."""
    big = "7" * 5000
    nb = _nb([_md("# Factorials", "", "We show a large factorial."),
              _code("math.factorial(2000)", {"output_type": "execute_result", "metadata": {},
                                             "data": {"application/json": 0, "text/plain": big}})])
    r = parse_document(nb.replace(b'"application/json": 0', b'"application/json": ' + big.encode()), "f.ipynb")
    assert r.format == "notebook" and r.title == "Factorials"
    assert r.blocks[-1].text.startswith("7777") and is_side_text(r.blocks[-1])
    data = parse_document(b'{"id": "n1", "value": ' + big.encode() + b"}", "big.json")
    assert data.blocks[0].text.startswith("id: n1\nvalue: 7777")
    lines = parse_document(b'{"v": ' + big.encode() + b'}\n{"v": 1}\n', "big.jsonl")
    assert not lines.warnings and "7777" in lines.blocks[0].text


def test_a_nul_in_a_code_cell_is_not_stored() -> None:
    """`"\\u0000"` in a cell's JSON reached the chunks as NUL, which no PostgreSQL text column
    takes: every sync of the source failed writing them, with no dead letter."""
    r = parse_document(_nb([_md("# Control bytes"), _code('sep = "\u0000"\nprint(sep)')]), "nul.ipynb")
    assert [b.text for b in r.blocks] == ["Control bytes", 'sep = "\ufffd"\nprint(sep)']
