"""Data and markup formats: CSV/TSV, JSON/JSONL, XML, reStructuredText; their sniffing."""

from __future__ import annotations

import json

import pytest

from assets.parsing import parse_document
from assets.parsing.sniff import detect_format
from connectors.config import ParseConfig
from connectors.documents import ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, FormatMismatch
from quality.metrics import word_share
from tests.fixtures import docgen

CFG = ParseConfig()


def _kinds(result: ParseResult) -> list[tuple[str, str]]:
    return [(b.kind, b.text) for b in result.blocks]


# ---------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("name", "data", "fmt"),
    [
        ("a.csv", b"a,b\n1,2\n", "csv"),
        ("a.tsv", b"a\tb\n1\t2\n", "csv"),
        ("a.json", b'{"a": 1}', "json"),
        ("a.jsonl", b'{"a": 1}\n{"a": 2}\n', "jsonl"),
        ("a.xml", b"<?xml version='1.0'?><r><p>x</p></r>", "xml"),
        ("data", b"<?xml version='1.0'?><r><p>x</p></r>", "xml"),
        ("a.rst", b"Title\n=====\n\ntext\n", "rst"),
    ],
)
def test_text_formats_route_by_extension(name: str, data: bytes, fmt: str) -> None:
    assert detect_format(data, name).format == fmt


def test_xhtml_is_html_and_html_error_page_named_json_is_mismatch() -> None:
    xhtml = b'<?xml version="1.0"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml">'
    xhtml += b"<body><p>Hi</p></body></html>"
    assert detect_format(xhtml, "page.xhtml").format == "html"
    d = detect_format(xhtml, "page.xml")
    assert d.format == "html" and d.warnings
    with pytest.raises(FormatMismatch, match="error page"):
        parse_document(b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", "x.json")


# ---------------------------------------------------------------- CSV


def test_csv_is_a_markdown_table_with_its_header() -> None:
    r = parse_document(docgen.csv_bytes(), "population.csv", CFG)
    assert r.format == "csv" and len(r.blocks) == 1
    table = r.blocks[0]
    assert table.kind == "table"
    assert table.meta["table_header"] == ("| Country | Year | Population (m) | Capital |\n|---|---|---|---|")
    assert "| Germany | 2023 | 84.5 | Berlin |" in table.text
    assert table.meta["rows"] == [1, 3] and r.metadata["delimiter"] == ","
    assert r.metrics["alnum_share"] > 0.8  # table pipes do not count as junk


def test_tsv_and_semicolon_delimiters_are_detected() -> None:
    r = parse_document(docgen.csv_bytes(delimiter="\t"), "pop.tsv", CFG)
    assert r.metadata["delimiter"] == "\t" and r.metadata["columns"] == 4
    r = parse_document(docgen.csv_bytes(delimiter=";"), "pop.csv", CFG)
    assert r.metadata["delimiter"] == ";"
    assert "| France | 2023 | 68.2 | Paris |" in r.blocks[0].text


def test_csv_without_header_gets_generated_column_names() -> None:
    r = parse_document(docgen.csv_bytes(docgen.CSV_ROWS[1:]), "nohead.csv", CFG)
    assert r.metadata["header_generated"] is True
    assert r.blocks[0].text.startswith("| column 1 | column 2 | column 3 | column 4 |")
    assert "| France | 2023 | 68.2 | Paris |" in r.blocks[0].text


def test_year_header_row_is_a_header() -> None:
    data = docgen.csv_bytes([["Region", "2022", "2023"], ["North", "5", "7"], ["South", "3", "4"]])
    r = parse_document(data, "stats.csv", CFG)
    assert r.metadata["header_generated"] is False
    assert r.blocks[0].meta["table_header"].startswith("| Region | 2022 | 2023 |")


def test_long_csv_is_split_in_row_groups_that_repeat_the_header() -> None:
    rows = [["id", "name"]] + [[str(i), f"item {i}"] for i in range(1, 121)]
    r = parse_document(docgen.csv_bytes(rows), "items.csv", CFG)
    tables = [b for b in r.blocks if b.kind == "table"]
    assert len(tables) == 3
    assert [t.meta["rows"] for t in tables] == [[1, 50], [51, 100], [101, 120]]
    assert all(t.text.startswith("| id | name |\n|---|---|\n") for t in tables)
    assert "| 120 | item 120 |" in tables[-1].text


def test_quoted_fields_with_delimiters_and_newlines_stay_in_their_cell() -> None:
    data = b'name,comment\nann,"likes a, b\nand c"\nbob,"says ""hi"""\n'
    r = parse_document(data, "c.csv", CFG)
    assert "| ann | likes a, b and c |" in r.blocks[0].text
    assert '| bob | says "hi" |' in r.blocks[0].text


def test_csv_of_only_separators_is_empty() -> None:
    with pytest.raises(EmptyDocument):
        parse_document(b",,,\n,,,\n", "blank.csv", CFG)


# ---------------------------------------------------------------- JSON


def test_json_flattens_to_key_paths_headings_and_tables() -> None:
    r = parse_document(json.dumps(docgen.JSON_DOC).encode(), "catalogue.json", CFG)
    assert r.format == "json" and r.title == "Service catalogue"
    assert _kinds(r) == [
        ("paragraph", "title: Service catalogue\nversion: 3"),
        ("heading", "owner"),
        ("paragraph", "owner.team: platform\nowner.contact.email: ops@example.com"),
        ("heading", "services"),
        ("table", "| name | port | tier |\n|---|---|---|\n| search | 8080 | gold |\n| ingest | 9090 | silver |"),
        ("heading", "tags"),
        ("paragraph", "tags: internal, beta"),
    ]
    assert r.metrics["word_share"] == 1.0  # key paths count as words


def test_json_heterogeneous_array_is_one_paragraph_per_item() -> None:
    doc = {"events": [{"type": "start", "at": 1}, {"kind": "stop", "reason": "done", "code": 0}]}
    r = parse_document(json.dumps(doc).encode(), "events.json", CFG)
    paras = [b.text for b in r.blocks if b.kind == "paragraph"]
    assert paras == [
        "events[0].type: start\nevents[0].at: 1",
        "events[1].kind: stop\nevents[1].reason: done\nevents[1].code: 0",
    ]


def test_invalid_json_is_indexed_as_text_with_a_warning() -> None:
    r = parse_document(b'{"a": 1, // a comment\n "b": 2}', "tsconfig.json", CFG)
    assert r.format == "json" and "not valid JSON" in r.warnings[0]
    assert "a comment" in r.blocks[0].text


def test_jsonl_homogeneous_records_are_a_table_and_bad_lines_are_reported() -> None:
    lines = [json.dumps({"q": f"question {i}", "a": f"answer {i}"}) for i in range(3)]
    data = "\n".join([*lines[:2], "{not json", lines[2]]).encode()
    r = parse_document(data, "qa.jsonl", CFG)
    assert r.blocks[0].kind == "table" and "| question 2 | answer 2 |" in r.blocks[0].text
    assert r.metadata["records"] == 3 and "[3]" in r.warnings[0]


def test_jsonl_mixed_records_keep_their_line_number() -> None:
    data = b'{"id": 1, "text": "first"}\n[1, 2]\n"loose string"\n'
    r = parse_document(data, "mixed.jsonl", CFG)
    assert [(b.text, b.meta["record"]) for b in r.blocks] == [
        ("id: 1\ntext: first", 1),
        ("value: 1, 2", 2),
        ("value: loose string", 3),
    ]


def test_word_share_accepts_identifiers_but_not_junk() -> None:
    assert word_share("user.address.city ops@example.com items.0.name") == 1.0
    assert word_share("l.l x.q") == 0.0


# ---------------------------------------------------------------- XML


def test_xml_headings_paragraphs_records_and_no_external_entities() -> None:
    r = parse_document(docgen.XML_DOC, "guide.xml", CFG)
    assert r.format == "xml" and r.title == "Field Guide"
    assert [(b.kind, b.level, b.text) for b in r.blocks] == [
        ("heading", 1, "Field Guide"),
        ("heading", 2, "Birds"),
        ("paragraph", 0, "Robins sing at dawn in spring."),
        ("list_item", 0, "Look for the red breast."),
        ("code", 0, "count = birds.count()"),
        ("heading", 2, "XML Developer Guide"),
        ("paragraph", 0, "id: bk101\nauthor: Gambardella\nprice: 44.95"),
    ]
    assert "root:" not in "\n".join(b.text for b in r.blocks)  # /etc/passwd never read


def test_xml_tables_become_markdown() -> None:
    data = b"""<doc><table><title>Sizes</title><tgroup><thead><row><entry>Size</entry>
    <entry>Teeth</entry></row></thead><tbody><row><entry>Small</entry><entry>12</entry></row>
    </tbody></tgroup></table></doc>"""
    r = parse_document(data, "t.xml", CFG)
    assert _kinds(r) == [
        ("caption", "Sizes"),
        ("table", "| Size | Teeth |\n|---|---|\n| Small | 12 |"),
    ]


def test_broken_xml_is_recovered_with_a_warning_or_corrupt() -> None:
    r = parse_document(b"<doc><p>Kept text before the break</p><p>unclosed", "b.xml", CFG)
    assert "Kept text before the break" in r.blocks[0].text and "not well-formed" in r.warnings[0]
    with pytest.raises(CorruptDocument, match="not well-formed"):
        parse_document(b"<?xml version='1.0'?>\nnot xml at all", "c.xml", CFG)


# ---------------------------------------------------------------- reStructuredText


def test_rst_sections_code_lists_notes_and_tables() -> None:
    r = parse_document(docgen.RST_DOC.encode(), "install.rst", CFG)
    assert r.format == "rst" and r.title == "Install Guide"
    got = [(b.kind, b.level, b.text) for b in r.blocks]
    assert got == [
        ("heading", 1, "Install Guide"),
        ("paragraph", 0, "Intro with inline code and a link."),
        ("heading", 2, "Requirements"),
        ("list_item", 0, "Python 3.11"),
        ("list_item", 0, "A C compiler"),
        ("list_item", 0, "nested bullet"),
        ("paragraph", 0, "Usage example:"),
        ("code", 0, "$ bindery sync\ndone"),
        ("code", 0, "import bindery\nbindery.run()"),
        ("paragraph", 0, "Note: Back up first."),
        ("heading", 3, "Options"),
        ("table", 0, "| Name | Value |\n|---|---|\n| alpha | 1 |\n| beta | 2 |"),
    ]
    assert r.blocks[5].meta["depth"] == 1
    assert r.blocks[8].meta["language"] == "python"


def test_rst_grid_table_and_expanded_literal_marker() -> None:
    text = (
        "Data\n----\n\nSee the table ::\n\n    raw text\n\n"
        "+--------+-------+\n| Name   | Score |\n+========+=======+\n| Ann    | 9     |\n"
        "+--------+-------+\n| Bob    | 7     |\n+--------+-------+\n"
    )
    r = parse_document(text.encode(), "d.rst", CFG)
    assert _kinds(r) == [
        ("heading", "Data"),
        ("paragraph", "See the table"),
        ("code", "raw text"),
        ("table", "| Name | Score |\n|---|---|\n| Ann | 9 |\n| Bob | 7 |"),
    ]


def test_a_docbook_faq_question_heads_its_answer() -> None:
    faq = (b"<?xml version='1.0'?><article><title>Foo FAQ</title><qandaset><qandadiv><title>General</title>"
           b"<qandaentry><question><para>How do I frob the widget?</para></question>"
           b"<answer><para>Use the frobnicator.</para></answer></qandaentry>"
           b"<qandaentry><question><para>Why is it slow?</para></question>"
           b"<answer><para>Because of the cache.</para></answer></qandaentry></qandadiv></qandaset></article>")
    r = parse_document(faq, "faq.xml", CFG)
    assert [(b.kind, b.level, b.text) for b in r.blocks] == [
        ("heading", 1, "Foo FAQ"), ("heading", 2, "General"),
        ("heading", 3, "How do I frob the widget?"), ("paragraph", 0, "Use the frobnicator."),
        ("heading", 3, "Why is it slow?"), ("paragraph", 0, "Because of the cache."),
    ]


def test_a_docbook_faq_question_quoting_code_keeps_the_code_out_of_its_heading() -> None:
    faq = (b"<?xml version='1.0'?><article><title>Foo FAQ</title><qandaset><qandaentry><question>"
           b"<para>Why does the build fail with this:</para><screen>ld: cannot find -lc</screen></question>"
           b"<answer><para>Install the static C library.</para></answer></qandaentry></qandaset></article>")
    r = parse_document(faq, "faq.xml", CFG)
    assert [(b.kind, b.text) for b in r.blocks][1:] == [
        ("heading", "Why does the build fail with this:"), ("code", "ld: cannot find -lc"),
        ("paragraph", "Install the static C library.")]
