"""PDF headings from the outline (bookmarks), contents pages, bare page numbers.

Regressions from an unseen-corpus pass: ReportLab's user guide (a word of a drawing set in 85 pt
headed 483 of 671 chunks; contents entries written leader-first became headings), prawn's
manual, booktabs (its page number, 83 % down the page, kept on all 18 pages).
"""

from __future__ import annotations

import pymupdf

from assets.parsing import parse_document
from assets.parsing.pdf_layout import Line, Region, strip_running_lines
from assets.parsing.pdf_outline import title_key
from connectors.config import ParseConfig
from connectors.documents import Block, ParseResult

CFG = ParseConfig(ocr=False)
A4 = pymupdf.paper_rect("a4")
BODY = (
    "The committee reviewed the budget for the coming year and agreed to increase funding "
    "for the library, the museum and the public gardens. Members asked for a detailed plan "
    "before the next meeting so that the costs can be compared with last year."
)


def _save(doc: pymupdf.Document) -> bytes:
    data: bytes = doc.tobytes(garbage=3, deflate=True)
    doc.close()
    return data


def _body(page: pymupdf.Page, y: float, text: str = BODY, height: float = 80) -> None:
    rc = page.insert_textbox(pymupdf.Rect(50, y, 545, y + height), text, fontname="helv", fontsize=10)
    assert rc >= 0


def _heading(page: pymupdf.Page, y: float, text: str, size: float = 14, x: float = 50) -> None:
    page.insert_text((x, y), text, fontname="hebo", fontsize=size)


def _paths(blocks: list[Block]) -> list[tuple[str, list[str]]]:
    """(paragraph text's start, heading path) of every paragraph, as a chunker builds them."""
    stack: list[tuple[int, str]] = []
    out = []
    for b in blocks:
        if b.kind == "heading":
            stack = [(lvl, t) for lvl, t in stack if lvl < b.level] + [(b.level, b.text)]
        elif b.kind == "paragraph":
            out.append((b.text[:20], [t for _, t in stack]))
    return out


def _headings(r: ParseResult) -> list[tuple[str, int, int | None]]:
    return [(b.text, b.level, b.page) for b in r.blocks if b.kind == "heading"]


def _manual(outline: bool) -> bytes:
    """A manual whose p2 demo drawing holds a word in 60 pt; section titles differ from the
    outline's in numbering, case and spacing; one section is a run-in title in the body font."""
    doc = pymupdf.open()
    p1 = doc.new_page(width=A4.width, height=A4.height)
    _heading(p1, 60, "Chapter 1", size=18, x=240)  # a title on two centred lines (two blocks)
    _heading(p1, 82, "Basics of drawing", size=18, x=210)
    _heading(p1, 120, "1.1 Colours")
    _body(p1, 130)
    p2 = doc.new_page(width=A4.width, height=A4.height)
    _body(p2, 60, "The demo below paints a word in layers. " + BODY)
    p2.insert_text((120, 250), "SPUMONI", fontname="hebo", fontsize=60)
    _heading(p2, 320, "SHAPES")  # "1.2 Shapes" in the outline
    _body(p2, 330)
    p3 = doc.new_page(width=A4.width, height=A4.height)
    _body(p3, 60, "Paths and lines. Lines are stroked with the current colour. " + BODY)
    _heading(p3, 200, "Chapter 2 Text")
    _body(p3, 210, "Text is placed with a text object. " + BODY)
    if outline:
        doc.set_toc([
            [1, "Chapter 1  Basics of draw-\ning", 1],
            [2, "1.1 Colours", 1],
            [2, "1.2 Shapes", 2],
            [2, "1.3 Paths and lines", 3],
            [1, "Chapter 2 Text", 3],
        ])
    return _save(doc)


def test_outline_levels_headings_and_bounds_font_headings() -> None:
    r = parse_document(_manual(outline=True), "manual.pdf", CFG)
    assert _headings(r) == [
        ("Chapter 1 Basics of drawing", 1, 1),  # two blocks, one title, hyphen/space/case apart
        ("1.1 Colours", 2, 1),
        ("SPUMONI", 3, 2),  # a font heading nests under the outline heading before it
        ("SHAPES", 2, 2),  # found without its number
        ("Paths and lines", 2, 3),  # split off the paragraph it starts
        ("Chapter 2 Text", 1, 3),
    ]
    assert all(b.meta.get("outline") for b in r.blocks if b.kind == "heading" and b.text != "SPUMONI")
    paths = _paths(r.blocks)
    assert paths[-1] == ("Text is placed with ", ["Chapter 2 Text"])
    assert ("Lines are stroked wi", ["Chapter 1 Basics of drawing", "Paths and lines"]) in paths
    assert sum("SPUMONI" in p for _, p in paths) == 0  # it heads no paragraph beyond its own
    assert r.blocks[0].kind == "heading" and r.title == "Chapter 1 Basics of drawing"


def test_without_an_outline_font_sizes_decide_as_before() -> None:
    r = parse_document(_manual(outline=False), "manual.pdf", CFG)
    levels = {t: lvl for t, lvl, _ in _headings(r)}
    assert levels["SPUMONI"] == 1 and levels["1.1 Colours"] == 3
    assert "Paths and lines" not in levels
    assert not any(b.meta.get("outline") for b in r.blocks)


def test_an_outline_whose_titles_are_not_in_the_text_is_not_used() -> None:
    doc = pymupdf.open(stream=_manual(outline=False), filetype="pdf")
    doc.set_toc([[1, "Bookmark one", 1], [1, "Bookmark two", 2], [1, "Bookmark three", 3]])
    r = parse_document(_save(doc), "manual.pdf", CFG)
    assert {t: lvl for t, lvl, _ in _headings(r)}["SPUMONI"] == 1


def test_title_key_ignores_case_spacing_hyphenation_and_ligatures() -> None:
    assert title_key("Conﬁguration  Files") == title_key("configuration files")
    assert title_key("Col-\nors of the WORLD") == title_key("Colors of the world")
    assert title_key("2.8 Colors") != title_key("Colors")


def test_outline_heading_in_a_file_name_heading() -> None:
    """prawn's manual heads each example with its file name; the outline has its title."""
    doc = pymupdf.open()
    for n, name in enumerate(["fill_and_stroke", "stroke_cap"], start=1):
        page = doc.new_page(width=A4.width, height=A4.height)
        _heading(page, 60, f"graphics/{name}.rb", size=18)
        _body(page, 80)
        page.insert_text((60, 300), "and stroked with blue", fontname="hebo", fontsize=40)
        _body(page, 320)
    doc.set_toc([[1, "Graphics", 1], [2, "Fill and stroke", 1], [2, "Stroke cap", 2]])
    r = parse_document(_save(doc), "prawn.pdf", CFG)
    assert _headings(r) == [
        ("graphics/fill_and_stroke.rb", 2, 1),
        ("and stroked with blue", 3, 1),
        ("graphics/stroke_cap.rb", 2, 2),
        ("and stroked with blue", 3, 2),
    ]


# ---------------------------------------------------------------- contents pages


def _contents_leader_first() -> bytes:
    """A contents page written like ReportLab's: each entry's dot leader and page number are
    drawn before its title on the same baseline; entries in 12 pt over a 10 pt body."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4.width, height=A4.height)
    _heading(page, 60, "Table of contents", size=18)
    entries = [("1.1 Apples", 2), ("1.2 Pears", 3), ("1.3 Plums", 4)]
    for i, (title, number) in enumerate(entries):
        y = 100 + 18 * i
        page.insert_text((200, y), " .  .  .  .  .  .  .  .  .  .  .  . " + str(number), fontname="helv", fontsize=12)
        page.insert_text((70, y), title, fontname="helv", fontsize=12)
    for title, _ in entries:
        page = doc.new_page(width=A4.width, height=A4.height)
        _heading(page, 60, title, size=12)
        _body(page, 75)
    return _save(doc)


def test_contents_entry_with_its_leader_drawn_first_is_no_heading() -> None:
    r = parse_document(_contents_leader_first(), "toc.pdf", CFG)
    assert [(t, p) for t, _, p in _headings(r)] == [
        ("Table of contents", 1), ("1.1 Apples", 2), ("1.2 Pears", 3), ("1.3 Plums", 4),
    ]
    first = [b.text for b in r.blocks if b.page == 1]
    assert any(t.startswith("1.1 Apples . . .") and t.rstrip().endswith("4") for t in first), first
    assert not any(t.strip().isdigit() or t.startswith(".") for t in first)


def test_contents_entries_of_the_outline_are_demoted() -> None:
    doc = pymupdf.open(stream=_contents_leader_first(), filetype="pdf")
    doc.set_toc([[1, "Table of contents", 1], [1, "1.1 Apples", 2], [1, "1.2 Pears", 3], [1, "1.3 Plums", 4]])
    r = parse_document(_save(doc), "toc.pdf", CFG)
    assert [(t, lvl, p) for t, lvl, p in _headings(r)] == [
        ("Table of contents", 1, 1), ("1.1 Apples", 1, 2), ("1.2 Pears", 1, 3), ("1.3 Plums", 1, 4),
    ]


# ---------------------------------------------------------------- bare page numbers


def test_page_number_outside_the_margin_zone_is_dropped() -> None:
    """booktabs: the page number sits 83 % down the page, below the text; it stayed in the
    text, between a paragraph's end on one page and its continuation on the next."""
    doc = pymupdf.open()
    for n in (1, 2):
        page = doc.new_page(width=A4.width, height=A4.height)
        _body(page, 150, f"Part {n} of the text. " + BODY * 3, height=300)
        page.insert_text((295, 700), str(n), fontname="helv", fontsize=10)
    r = parse_document(_save(doc), "booktabs.pdf", CFG)
    assert [b.text for b in r.blocks if b.text.strip().isdigit()] == []
    assert sum(p["stripped_lines"] for p in r.page_metrics) == 2


def _line(text: str, y: float, x: float = 50, size: float = 10) -> Line:
    return Line(text, x, y, x + 6 * len(text), y + size * 1.2, size=size)


def test_numbers_in_the_body_are_kept() -> None:
    body = [_line("A paragraph line of body text here.", 100 + 12 * i) for i in range(5)]
    # the last row of a table: its cells share the row
    row = [_line("Total", 300), _line("42", 300, x=200)]
    kept, n = strip_running_lines([Region(50, 100, 545, 320, lines=body + row)], A4.height, set())
    assert n == 0 and len(kept[0].lines) == 7
    # a list of numbers, close together
    numbers = [_line(str(k), 300 + 12 * k) for k in range(1, 4)]
    kept, n = strip_running_lines([Region(50, 100, 545, 340, lines=body + numbers)], A4.height, set())
    assert n == 0
    # a chapter's number set large at the top of its page
    big = _line("2", 100, size=30)
    rest = [_line("A paragraph line of body text here.", 160 + 12 * i) for i in range(5)]
    kept, n = strip_running_lines([Region(50, 100, 545, 240, lines=[big, *rest])], A4.height, set())
    assert n == 0
    # ... but a page number set apart at the top or bottom goes, as "Page 3" or "- 3 -" does
    for text in ("3", "Page 3", "- 3 -", "3 of 9"):
        kept, n = strip_running_lines(
            [Region(50, 100, 545, 400, lines=[*body, _line(text, 400)])], A4.height, set()
        )
        assert n == 1 and all(ln.text != text for r in kept for ln in r.lines), text


def test_an_outline_entry_anchored_a_page_early_is_found_on_the_next_page() -> None:
    """hyperref often anchors a section at the foot of the page before its heading (7 of
    nicematrix's first 30 entries): the entry is looked for at the top of the next page, not
    lost, and the section keeps the outline's level (it came out nested under its sibling)."""
    doc = pymupdf.open()
    for title in ("1 Introduction", "2 Methods", "3 Results"):
        page = doc.new_page(width=A4.width, height=A4.height)
        _heading(page, 80, title, size=16)
        _body(page, 100)
        _heading(page, 220, f"{title[0]}.1 Details", size=12)
        _body(page, 240)
    doc.set_toc([[1, "1 Introduction", 1], [2, "1.1 Details", 1], [1, "2 Methods", 2], [2, "2.1 Details", 2],
                 [1, "3 Results", 2], [2, "3.1 Details", 3]])  # "3 Results" anchored on page 2
    r = parse_document(_save(doc), "early.pdf", CFG)
    assert ("3 Results", 1, 3) in _headings(r)


def test_a_books_listing_braces_survive_the_sidebar_rule() -> None:
    """The rule for a slide's sidebar (a line repeated at a page's side on half the pages is
    running text) applies to slide-shaped pages only: on a book's portrait pages a listing's
    closing braces, repeated at the left edge at the same heights, stay (all were lost)."""
    doc = pymupdf.open()
    for n in range(2):
        page = doc.new_page(width=A4.width, height=A4.height)
        y = 80.0
        for i in range(12):
            page.insert_text((50, y), f"int f{n}{i}(void) {{", fontname="cour", fontsize=9)
            page.insert_text((50, y + 11), "}", fontname="cour", fontsize=9)
            y += 30
        page.insert_text((50, y), f"/* end of part {n} */", fontname="cour", fontsize=9)
    r = parse_document(_save(doc), "book.pdf", CFG)
    text = "\n".join(b.text for b in r.blocks)
    assert text.count("}") >= 22  # (a page's first "}" can read as a running line, as before)
