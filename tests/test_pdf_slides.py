"""PDF slide decks (beamer): drawn boxes are no tables, frame titles are headings, the
navigation sidebar repeated on every slide is running text, slides are no table continuations."""

from __future__ import annotations

import pymupdf

from assets.parsing import parse_document
from connectors.config import ParseConfig
from connectors.documents import ParseResult

CFG = ParseConfig(ocr=False)
W, H = 363.0, 272.0  # beamer's 128 mm x 96 mm
SIDEBAR = ["Ziele und Inhalt", "Was ist Syntax?", "Was ist Semantik?", "Grundlage der Syntax"]
SLIDES = [
    ("Die Lernziele der heutigen Vorlesung.", "Lernziele", "Die Begriffe Syntax und Semantik erklären können."),
    ("Beobachtungen zu einem Text.", "Beobachtungen", "Wir haben keine Ahnung, was der Text bedeutet."),
    ("Zur Syntax von Programmiersprachen.", "Definition", "Eine Syntax legt fest, wie Texte gebaut sind."),
    ("Was bedeutet ein Satz?", "Beispiel", "Ein Satz kann zwei verschiedene Bedeutungen haben."),
]


def _save(doc: pymupdf.Document) -> bytes:
    data = doc.tobytes()
    doc.close()
    return bytes(data)


def _block_box(page: pymupdf.Page, y: float, title: str, body: str) -> None:
    """A beamer block: a coloured title bar and a lighter body, with rounded corners."""
    page.draw_rect(pymupdf.Rect(28, y, 290, y + 14), color=None, fill=(0.2, 0.2, 0.7), radius=0.3)
    page.draw_rect(pymupdf.Rect(28, y + 14, 290, y + 60), color=None, fill=(0.9, 0.9, 0.95), radius=0.1)
    page.insert_text((30, y + 10), title, fontname="hebo", fontsize=10, color=(1, 1, 1))
    for k, line in enumerate((body, "Dazu gibt es weitere Regeln und Beispiele.")):
        page.insert_text((34, y + 28 + 13 * k), line, fontname="helv", fontsize=8)


def _slide(doc: pymupdf.Document, number: int, title: str, block: str, body: str) -> None:
    page = doc.new_page(width=W, height=H)
    page.draw_rect(page.rect, color=None, fill=(1, 1, 1))  # the frame's background
    page.draw_rect(pymupdf.Rect(306, 0, W, H), color=None, fill=(0.85, 0.85, 0.85))  # sidebar
    page.draw_rect(pymupdf.Rect(306, 40 + 14 * number, W, 52 + 14 * number), color=None, fill=(0.6, 0.6, 0.9))
    for k, entry in enumerate(SIDEBAR):
        page.insert_text((309, 50 + 14 * k), entry, fontname="helv", fontsize=5)
    page.insert_text((351, 266), f"1.{number + 1}", fontname="helv", fontsize=4)
    page.insert_text((9, 19), title, fontname="hebo", fontsize=10)  # the frame title
    page.insert_text((12, 40), "Einleitende Worte zu dieser Folie der Vorlesung.", fontname="helv", fontsize=8)
    _block_box(page, 60, block, body)
    _block_box(page, 140, "Zusammenfassung", "Syntax und Semantik sind verschiedene Dinge.")


def _deck() -> bytes:
    doc = pymupdf.open()
    for number, (title, block, body) in enumerate(SLIDES):
        _slide(doc, number, title, block, body)
    return _save(doc)


def _parse(data: bytes) -> ParseResult:
    return parse_document(data, "deck.pdf", CFG)


def test_slide_boxes_are_no_tables() -> None:
    r = _parse(_deck())
    assert [b for b in r.blocks if b.kind == "table"] == []
    text = "\n".join(b.text for b in r.blocks)
    for _, block, body in SLIDES:
        assert block in text and body in text
    assert "| I |" not in text and "Lernziele Die Begriffe" not in text
    assert all(m["tables"] == 0 for m in r.page_metrics)


def test_frame_titles_are_headings() -> None:
    r = _parse(_deck())
    headings = [(b.page, b.text) for b in r.blocks if b.kind == "heading"]
    assert [(n + 1, s[0]) for n, s in enumerate(SLIDES)] == [h for h in headings if h[1] in {s[0] for s in SLIDES}]
    for page in range(1, len(SLIDES) + 1):
        first = next(b for b in r.blocks if b.page == page)
        assert first.kind == "heading" and first.text == SLIDES[page - 1][0]


def test_sidebar_repeated_on_every_slide_is_dropped() -> None:
    r = _parse(_deck())
    text = "\n".join(b.text for b in r.blocks)
    for entry in SIDEBAR:
        assert entry not in text
    words = sum(len(b.text.split()) for b in r.blocks)
    assert words < 170  # the slides' own words (about 150), not a sidebar copy per slide


def _ruled_grid(page: pymupdf.Page, x: float, y: float, rows: list[list[str]]) -> None:
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            rect = pymupdf.Rect(x + 70 * j, y + 16 * i, x + 70 * (j + 1), y + 16 * (i + 1))
            page.draw_rect(rect, color=(0, 0, 0), width=0.6)
            page.insert_text((rect.x0 + 3, rect.y1 - 4), cell, fontname="helv", fontsize=8)


def test_ruled_table_on_a_slide_stays_a_table_and_slides_do_not_continue_it() -> None:
    doc = pymupdf.open()
    for n in range(2):
        page = doc.new_page(width=W, height=H)
        page.draw_rect(page.rect, color=None, fill=(1, 1, 1))
        page.insert_text((9, 19), f"Messwerte der Reihe {n + 1}.", fontname="hebo", fontsize=10)
        rows = [["Probe", "Wert", "Ort"], [f"A{n}", "40", "Nord"], [f"B{n}", "70", "Süd"]]
        _ruled_grid(page, 20, 40 + 100 * n, rows)  # slide 1's ends mid-slide, slide 2's is lower
        page.insert_text((20, 250), "Die Werte sind gerundet.", fontname="helv", fontsize=8)
    r = _parse(_save(doc))
    tables = [b for b in r.blocks if b.kind == "table"]
    assert [t.page for t in tables] == [1, 2]
    assert all("Probe" in t.text.split("\n")[0] for t in tables)
    assert all("continued_from_page" not in t.meta for t in tables)


def test_table_ending_mid_page_is_not_continued_by_the_next_pages_table() -> None:
    """A table continues on the next page only when it runs off the foot of its page: a slide
    ending in a table and the next one opening with another are two tables."""
    doc = pymupdf.open()
    first = doc.new_page(width=W, height=H)
    first.insert_text((9, 19), "Preise im Vergleich", fontname="hebo", fontsize=10)
    _ruled_grid(first, 20, 40, [["Name", "Menge", "Preis"], ["Teil A", "3", "9"], ["Summe", "3", "9"]])
    second = doc.new_page(width=W, height=H)
    _ruled_grid(second, 20, 20, [["Stadt", "Jahr", "Zahl"], ["Lübeck", "2006", "12"], ["Kiel", "2007", "14"]])
    second.insert_text((20, 200), "Eine Bemerkung unter der Tabelle steht hier.", fontname="helv", fontsize=8)
    tables = [b for b in _parse(_save(doc)).blocks if b.kind == "table"]
    assert [t.page for t in tables] == [1, 2]
    assert "continued_from_page" not in tables[1].meta
    assert tables[1].text.split("\n")[0].startswith("| Stadt")
