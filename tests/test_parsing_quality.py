"""Parse-quality metrics, the Great Expectations batch check and the parse report CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets.parsing.report import main as report_main
from connectors.config import ParseQualityThresholds
from connectors.documents import Block, ParseResult
from quality.expectations import validate_batch
from quality.metrics import document_metrics, page_metrics, word_share
from tests.fixtures import docgen


def test_page_metrics_separate_prose_from_junk() -> None:
    prose = page_metrics("The quick brown fox jumps over the lazy dog, 12 times in 2024.")
    junk = page_metrics("~|}{ Il1| ;;::: //\\\\ rnrn xzq ^^^ @@@ ¬¬ ©© ")
    assert prose["word_share"] == 1.0 and prose["alnum_share"] > 0.9
    assert junk["word_share"] < 0.3 and junk["alnum_share"] < 0.5
    assert word_share("") == 0.0 and word_share("1 2 3") == 0.0
    assert word_share("café naïve I a") == 1.0


def test_text_written_without_spaces_is_words_and_passes_the_quality_check() -> None:
    """Found by an adversarial pass: a Chinese or Japanese page is one whitespace token per
    clause, its punctuation inside it, so every CJK document was refused as low quality
    ("word-like token share 0.00 < 0.4") and never indexed."""
    from assets.parse_stage import parse_problems
    from assets.parsing import parse_document

    pages = {"tokyo.md": "# 東京\n\n東京は日本の首都です。浅草寺や東京タワーなど、多くの観光地があります。\n",
             "beijing.txt": "北京是中华人民共和国的首都，也是全国的政治、文化中心。\n",
             "thai.txt": "ภาษาไทยเป็นภาษาราชการของประเทศไทย\n"}
    for name, text in pages.items():
        result = parse_document(text.encode(), name)
        assert parse_problems(result, ParseQualityThresholds()) == [], name
        assert result.metrics["word_share"] == 1.0, name
    assert word_share("Ã©Ã¨ Ã¢â‚¬ Â©Â®") < 0.4  # mojibake of Latin text is still no words


def test_document_metrics_counts_pages_routes_and_repeats() -> None:
    blocks = [
        Block("paragraph", "Real text on the first page of the report.", page=1),
        Block("paragraph", "Confidential draft", page=2),
        Block("paragraph", "Confidential draft", page=3),
    ]
    pm = [
        {"page": 1, "route": "text", "chars": 43},
        {"page": 2, "route": "ocr", "chars": 18, "ocr_confidence": 80.0},
        {"page": 3, "route": "ocr", "chars": 18, "ocr_confidence": 90.0},
    ]
    r = ParseResult(blocks=blocks, format="pdf", page_metrics=pm)
    m = document_metrics(r, n_bytes=500_000)
    assert m["pages"] == 3 and m["empty_page_share"] == round(2 / 3, 4)
    assert m["routes"] == {"text": 1, "ocr": 2} and m["ocr_pages"] == 2
    assert m["ocr_confidence"] == 85.0
    assert m["repeated_line_share"] == round(1 / 3, 4)
    assert m["chars_per_mb"] == round(m["chars"] / 0.5, 1)


def test_unpaginated_document_counts_as_one_page() -> None:
    r = ParseResult(blocks=[Block("paragraph", "short")], format="text")
    m = document_metrics(r, n_bytes=5)
    assert m["pages"] == 1 and m["empty_page_share"] == 1.0


def test_validate_batch_flags_bad_documents() -> None:
    good = {
        "alnum_share": 0.9,
        "word_share": 0.9,
        "chars_per_page": 2000,
        "empty_page_share": 0.0,
        "repeated_line_share": 0.01,
    }
    rows = [{"doc": f"good{i}.pdf", **good} for i in range(9)]
    rows.append({"doc": "scan.pdf", **good, "chars_per_page": 3, "empty_page_share": 1.0})
    t = ParseQualityThresholds(max_failure_share=0.3, warn_failure_share=0.05)
    out = validate_batch(rows, t)
    assert out["success"] is True and out["warn"] is True and out["documents"] == 10
    by_col = {r["column"]: r for r in out["results"]}
    assert by_col["empty_page_share"]["unexpected_docs"] == ["scan.pdf"]
    assert by_col["chars_per_page"]["unexpected_share"] == 0.1
    assert by_col["alnum_share"]["success"] and not by_col["alnum_share"]["warn"]

    bad = [{**row, "word_share": 0.1} for row in rows]  # systematic failure (e.g. mojibake)
    out = validate_batch(bad, t)
    assert out["success"] is False
    by_col = {r["column"]: r for r in out["results"]}
    assert not by_col["word_share"]["success"]
    assert len(by_col["word_share"]["unexpected_docs"]) == 10
    assert validate_batch([], t)["success"] is True


def test_parse_report_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_bytes(docgen.MARKDOWN.encode())
    (tmp_path / "docs" / "table.pdf").write_bytes(docgen.pdf_table())
    (tmp_path / "docs" / "blob.txt").write_bytes(docgen.binary_blob())
    (tmp_path / "docs" / "secret.pdf").write_bytes(docgen.pdf_encrypted())
    out = tmp_path / "report.txt"
    assert (
        report_main(
            [str(tmp_path / "docs"), "--out", str(out), "--jsonl", str(tmp_path / "r.jsonl")]
        )
        == 0
    )
    text = out.read_text()
    assert "== guide.md  (markdown" in text and "[heading1] Setup Guide" in text
    assert "pages: 1:layout(tables=1)" in text
    assert "ERROR format-mismatch (FormatMismatch)" in text
    assert "ERROR encrypted (EncryptedDocument)" in text
    assert "summary: 4 file(s), 2 failed" in text
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 4


def test_a_batch_within_every_bound_gets_gx_s_verdict_without_starting_gx() -> None:
    from quality.expectations import _run_gx, expectation_specs

    t = ParseQualityThresholds(max_failure_share=0.3, warn_failure_share=0.05)
    rows = [{"doc": f"d{i}.md", "alnum_share": 0.9, "word_share": 0.8 + i / 100, "chars_per_page": 900 + i,
             "empty_page_share": 0.0, "repeated_line_share": None if i % 2 else 0.01} for i in range(6)]
    rows.append({"doc": "edge.md", "alnum_share": t.min_alnum_share, "word_share": t.min_word_share,
                 "chars_per_page": t.min_chars_per_page, "empty_page_share": t.max_empty_page_share,
                 "repeated_line_share": float("nan")})  # on the bounds (inclusive) and a missing value
    fast = validate_batch(rows, t)
    slow = _run_gx(rows, t, expectation_specs(t), "doc")
    assert fast["ran_gx"] is False and slow["ran_gx"] is True
    assert {**fast, "ran_gx": True} == slow  # the same report, to the last field

    one_out = [*rows, {**rows[0], "doc": "scan.pdf", "chars_per_page": 3}]
    assert validate_batch(one_out, t)["ran_gx"] is True  # anything unexpected: GX judges and names it
    odd = [{**rows[0], "word_share": "0.9"}]
    assert validate_batch(odd, t)["ran_gx"] is True  # a value that is not a number: GX coerces it


def test_repeated_lines_refuse_only_a_paginated_document() -> None:
    """Found on GLib's API reference: four good pages ("Since: 2.4" and one memory-barrier note
    under each function) were dead letters for repeated lines, a sign of running headers only in
    a document with pages."""
    from assets.parse_stage import validate_parse

    t = ParseQualityThresholds()
    html = {"pages": 1, "repeated_line_share": 0.6, "alnum_share": 0.9, "word_share": 0.9}
    assert validate_parse(html, t) == []
    assert validate_parse({**html, "pages": 12}, t) == ["repeated-line share 0.60 > 0.5"]
