"""Bad input found by a robustness pass, each with a clear dead letter instead of a stall or a
silent loss: a .docx with many styles (parse time grew with styles x paragraphs), a package part
that unpacks past the source's `max_file_mb`, XML nested past libxml2's 2,048 levels (indexed in
part with a warning only), and a FIFO or a link to a device in a local source (left out unseen).
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from assets.listing import run_listing
from assets.parsing import parse_document
from assets.runtime import Runtime
from connectors.config import config_from_dict
from connectors.errors import CorruptDocument, TooLarge
from connectors.store import DocumentStore
from tests.fixtures import docgen
from tests.timeouts import alarm

# ---------------------------------------------------------------- docx styles


def _rewrite_docx(styles_xml: str = "", body_xml: str = "") -> bytes:
    """python-docx's blank document with extra `w:style` elements and its body replaced."""
    import docx

    buf = io.BytesIO()
    docx.Document().save(buf)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "word/styles.xml":
                data = data.replace(b"</w:styles>", styles_xml.encode() + b"</w:styles>")
            elif item.filename == "word/document.xml":
                head, _ = data.decode().split("<w:body>", 1)
                data = (head + "<w:body>" + body_xml + "</w:body></w:document>").encode()
            zout.writestr(item.filename, data)
    return out.getvalue()


def _many_styles(n_styles: int, n_paragraphs: int) -> bytes:
    """A small file (a few hundred KB at 50,000 x 50,000) whose styles part lists `n_styles`
    paragraph styles and whose body holds `n_paragraphs` unstyled paragraphs."""
    styles = "".join(f'<w:style w:type="paragraph" w:styleId="S{i}"><w:name w:val="S{i}"/></w:style>'
                     for i in range(n_styles))
    body = "".join(f"<w:p><w:r><w:t>Paragraph {i} of the quarterly report text.</w:t></w:r></w:p>"
                   for i in range(n_paragraphs))
    return _rewrite_docx(styles, body)


def _count_style_type_reads(monkeypatch: pytest.MonkeyPatch, budget: int) -> list[int]:
    """Count reads of a `w:style` element's type (what each scan of the styles part reads, once
    per style); past `budget` the parse fails at once, rather than running for minutes."""
    from docx.oxml.styles import CT_Style

    original = CT_Style.type
    assert isinstance(original, property) and original.fget is not None
    reads = [0]

    def counted(element: Any) -> Any:
        reads[0] += 1
        if reads[0] > budget:
            raise AssertionError(f"style types read more than {budget} times: the styles are scanned per paragraph")
        return original.fget(element)

    monkeypatch.setattr(CT_Style, "type", property(counted, original.fset))
    return reads


def test_docx_styles_are_scanned_once_per_document_not_per_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    """python-docx's `paragraph.style` scans every style for the default one (and by XPath for
    the id) per paragraph: 2,000 x 2,000 took 14 s and 50,000 x 50,000 (426 KB) would have taken
    about 2.5 hours. The styles are now read into a dict once per document: the reads grow with
    styles + paragraphs, not their product (3,000 x 3,000 read 9 million types before)."""
    n = 3000
    data = _many_styles(n, n)
    reads = _count_style_type_reads(monkeypatch, budget=4 * n)
    r = parse_document(data, "styles.docx")
    assert [b.kind for b in r.blocks] == ["paragraph"] * n
    assert r.blocks[-1].text == f"Paragraph {n - 1} of the quarterly report text."
    assert 0 < reads[0] <= 2 * n  # once per style element, plus once per distinct paragraph style


def _library_chain(paragraph: Any) -> list[str]:
    """A paragraph's style chain as python-docx resolves it (the lookup the parser used to make
    per paragraph): the reference the dict must match."""
    names: list[str] = []
    try:
        style = paragraph.style
    except (KeyError, ValueError, AttributeError):
        return names
    for _ in range(4):
        if style is None:
            break
        names.append(style.name or "")
        style = style.base_style
    return names


def _styled_document() -> bytes:
    """Every way a paragraph finds its style: built-in, custom based on a heading (through a
    chain longer than four), an unknown id, a character style's id, none at all."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    d = docx.Document()
    d.add_heading("Annual Report", level=0)
    d.add_paragraph("Plain body text.")
    d.add_heading("Results", level=2)
    base = d.styles["Heading 3"]
    for i in range(6):  # Custom5 -> Custom4 -> ... -> Custom0 -> Heading 3
        style = d.styles.add_style(f"Custom{i}", WD_STYLE_TYPE.PARAGRAPH)
        style.base_style = base
        base = style
    d.add_paragraph("Near a heading.", style="Custom1")
    d.add_paragraph("Too far from a heading.", style="Custom5")
    d.add_paragraph("A bullet.", style="List Bullet")
    d.add_paragraph("Figure 1: revenue.", style="Caption")
    d.add_paragraph("print('hello')", style="macro")
    d.add_paragraph("Contents", style="TOC Heading")
    d.add_paragraph("Unknown id.")._p.style = "NoSuchStyle"
    d.add_paragraph("A character style's id.")._p.style = "Heading1Char"
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


@pytest.mark.parametrize("make", [docgen.docx_document, _styled_document])
def test_docx_style_chains_match_python_docx(make: Any) -> None:
    import docx

    from assets.parsing.docx import _Styles

    document = docx.Document(io.BytesIO(make()))
    styles = _Styles(document)
    paragraphs = list(document.paragraphs)
    assert paragraphs and [styles.chain(p) for p in paragraphs] == [_library_chain(p) for p in paragraphs]


def test_docx_blocks_from_styles_are_unchanged() -> None:
    r = parse_document(_styled_document(), "report.docx")
    assert [(b.kind, b.level, b.text) for b in r.blocks] == [
        ("heading", 1, "Annual Report"),
        ("paragraph", 0, "Plain body text."),
        ("heading", 2, "Results"),
        ("heading", 3, "Near a heading."),
        ("paragraph", 0, "Too far from a heading."),
        ("list_item", 0, "A bullet."),
        ("caption", 0, "Figure 1: revenue."),
        ("code", 0, "print('hello')"),
        ("paragraph", 0, "Unknown id."),
        ("paragraph", 0, "A character style's id."),
    ]


# ---------------------------------------------------------------- odf styles


def _odt_with_styles(styles: list[tuple[str, str]], paragraph_style: str) -> bytes:
    body = "".join(f'<style:style style:name="{name}" style:parent-style-name="{parent}"/>'
                   for name, parent in styles)
    content = (f'<?xml version="1.0"?><office:document-content {docgen._ODF_NS}><office:automatic-styles>'
               f'{body}</office:automatic-styles><office:body><office:text><text:p text:style-name='
               f'"{paragraph_style}">Opening</text:p><text:p>Words.</text:p></office:text></office:body>'
               "</office:document-content>")
    return docgen._zip([("mimetype", b"application/vnd.oasis.opendocument.text"), ("content.xml", content.encode())])


def test_a_long_chain_of_odf_styles_is_resolved_in_linear_time() -> None:
    """20,000 styles each deriving from the next took 50 s: the chain was walked from every style."""
    n = 20000
    styles = [(f"S{i}", f"S{i + 1}") for i in range(n)] + [(f"S{n}", "Heading_20_2")]
    with alarm(10):
        result = parse_document(_odt_with_styles(styles, "S0"), "chain.odt")
    assert (result.blocks[0].kind, result.blocks[0].level, result.blocks[0].text) == ("heading", 2, "Opening")


@pytest.mark.parametrize(("styles", "kind"), [
    ([("P1", "P2"), ("P2", "Title")], "heading"),           # derived from a heading style, two steps up
    ([("P1", "P2"), ("P2", "P1")], "paragraph"),            # a cycle with no heading in it
    ([("P2", "Heading_20_1"), ("P1", "P2"), ("P3", "P1")], "heading"),  # a chain met half-resolved
    ([("P1", "Standard")], "paragraph"),
])
def test_odf_style_chains_resolve_as_before(styles: list[tuple[str, str]], kind: str) -> None:
    assert parse_document(_odt_with_styles(styles, "P1"), "styled.odt").blocks[0].kind == kind


# ---------------------------------------------------------------- package parts and max_file_mb


def test_a_package_part_over_the_sources_max_file_mb_is_too_large() -> None:
    """A 187 KB .docx whose document part unpacked to 50 MB was parsed for minutes; the size a
    source allows a file (`max_file_mb`, parse_document's `max_bytes`) now bounds each part once
    unpacked too, as it bounds a .gz file's content."""
    body = "<w:p><w:r><w:t>lorem ipsum dolor sit amet</w:t></w:r></w:p>" * 40_000  # ~2.4 MB
    data = _rewrite_docx(body_xml=body)
    assert len(data) < 100_000
    with pytest.raises(TooLarge, match=r"docx part word/document.xml unpacks to 2\.\d MB, over the 1\.0 MB limit "
                                       r"\(the source's max_file_mb"):
        parse_document(data, "bomb.docx", max_bytes=1_000_000)
    assert len(parse_document(data, "bomb.docx", max_bytes=10_000_000).blocks) == 40_000
    assert len(parse_document(data, "bomb.docx").blocks) == 40_000  # no limit given: the fixed one


# ---------------------------------------------------------------- XML nesting


def _deep_xml(depth: int) -> bytes:
    return ("<doc><p>Important opening paragraph about the quarterly plan.</p>" + "<a>" * depth + "deep"
            + "</a>" * depth + "<p>Closing paragraph about the merger plan zebra.</p></doc>").encode()


@pytest.mark.parametrize("depth", [3000, 100_000])
def test_xml_nested_past_2048_levels_is_corrupt_not_indexed_in_part(depth: int) -> None:
    """libxml2 stops at 2,048 levels even with huge_tree, and recovery kept only what came
    before: the closing paragraph was silently lost (status OK, one block, a warning), and at
    100,000 levels the reason was "no text could be extracted". As for HTML, it is now a
    corrupt dead letter that says the nesting is too deep."""
    with pytest.raises(CorruptDocument, match=r"nests elements more than 2,048 levels deep.*not indexed in part"):
        parse_document(_deep_xml(depth), "deep.xml")


def test_xml_nested_deep_but_within_the_limit_is_parsed_whole() -> None:
    r = parse_document(_deep_xml(1000), "deep.xml")
    assert not r.warnings and "merger plan zebra" in r.blocks[-1].text


# ---------------------------------------------------------------- elements with thousands of attributes


def _attributes(n: int) -> str:
    return " ".join(f'a{i}="x"' for i in range(n))


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("name", "make"), [
    ("flood.xml", lambda n: f"<r {_attributes(n)}><p>Plain words about the quarterly plan.</p></r>".encode()),
    ("flood.html", lambda n: f"<html><body><p {_attributes(n)}>Plain words.</p></body></html>".encode()),
    ("flood.docx", lambda n: _rewrite_docx(body_xml=f"<w:p {_attributes(n)}><w:r><w:t>x</w:t></w:r></w:p>")),
])
def test_an_element_with_thousands_of_attributes_is_refused_before_libxml2_spends_hours_on_it(
        name: str, make: Any) -> None:
    """libxml2's time grows with the square of one element's attributes, inside one native call
    the parse time limit cannot stop: 80,000 attributes (870 KB) held a sync for 53 s against a
    5 s limit (an attacker pass). Such an element is refused as corrupt, at once; 200,000 would
    have taken lxml past two minutes."""
    with alarm(10):
        with pytest.raises(CorruptDocument, match=r"an element with more than 512 attributes"):
            parse_document(make(200_000), name)
    assert parse_document(make(300), name).blocks  # far more than real markup has, still read


# ---------------------------------------------------------------- FIFOs and devices in a local source


def _rt(tmp_path: Path, **source: Any) -> Runtime:
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"),
                            "sources": [{"name": "s", "kind": "local", "root": str(tmp_path / "src"), **source}]})
    return Runtime(cfg, DocumentStore(cfg.database_url))


@pytest.mark.timeout(60)
def test_a_fifo_and_a_link_to_a_device_are_dead_letters_and_the_rest_syncs(tmp_path: Path) -> None:
    """`mkfifo corpus/pipe.txt` and `ln -s /dev/zero corpus/zero.txt` left no trace: now each is
    a dead letter with its reason, and a FIFO replaced by a file clears its own."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.txt").write_text("A good file about zebras crossing the river every spring.\n")
    os.mkfifo(src / "pipe.txt")
    (src / "zero.txt").symlink_to("/dev/zero")
    rt = _rt(tmp_path)
    res = run_listing(rt, "s")
    assert {d.external_id for d in rt.store.documents("s")} == {"good.txt"} and res.counts["failed"] == 2
    dead = {d.external_id: d for d in rt.store.dead_letters(source="s")}
    assert {k: d.reason for k, d in dead.items()} == {"pipe.txt": "not-a-file", "zero.txt": "external-symlink"}
    assert "named pipe" in dead["pipe.txt"].error
    rt = _rt(tmp_path, follow_external_symlinks=True)
    run_listing(rt, "s")
    dead = {d.external_id: d for d in rt.store.dead_letters(source="s")}
    assert dead["zero.txt"].reason == "not-a-file" and "character device" in dead["zero.txt"].error
    (src / "pipe.txt").unlink()
    (src / "pipe.txt").write_text("Now a real file about okapis.\n")
    run_listing(rt, "s")
    assert {d.external_id for d in rt.store.dead_letters(source="s")} == {"zero.txt"}
    assert {d.external_id for d in rt.store.documents("s")} == {"good.txt", "pipe.txt"}


@pytest.mark.slow
def test_a_lone_surrogate_in_a_title_or_a_text_is_replaced_and_the_source_still_syncs(tmp_path: Path) -> None:
    """JSON and YAML escapes decode `\\ud800` to a lone surrogate, which no UTF-8 encoder takes: in
    a Markdown front matter's title it failed every write of the source's parses (exit 1 on every
    sync, no dead letter, the good files never indexed); in a text the chunker's tokenizer
    dead-lettered the document (a fuzzing pass). Each becomes U+FFFD."""
    from tests.bindery_fixture import Deployment

    dep = Deployment(tmp_path)
    dep.write("notes/plan.md", '---\ntitle: "Office \\ud800 move"\n---\n\n# Plan\n\nThe office move plan for Lyon.\n')
    dep.write("notes/harbour.json", '{"title": "Harbour", "body": "Pilots board \\udfff ships at the harbour mouth."}')
    out = dep.cli("sync")
    assert out["dead_letters"] == 0 and not dep.cli("dlq", "list")
    hit = dep.cli("query", "office move plan Lyon")["hits"][0]
    assert hit["doc"] == "notes/plan.md" and hit["title"] == "Office \ufffd move"
    assert dep.cli("query", "pilots board ships harbour")["hits"][0]["doc"] == "notes/harbour.json"
