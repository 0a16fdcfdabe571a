"""Excel .xlsx/.xlsm workbooks with openpyxl (read-only, cached formula values).

One level-1 heading per non-empty sheet ("Sheet: <name>"), then the sheet's content as laid
out by `tabular.sheet_blocks`: tables of rows in groups that repeat the header row, and lone
cells (titles, notes) as paragraphs. Blocks carry meta {"sheet": name}. Hidden sheets are
skipped with a warning; formulas are read as the values Excel last cached (a workbook written
by a program that never calculated it has none, which is reported).
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from assets.parsing.package import check_package
from assets.parsing.tabular import cell_text, sheet_blocks
from assets.parsing.textutil import TextBudget
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, ParseError

__all__ = ["parse_xlsx"]

MAX_COLUMNS = 512  # read-only sheets with a bogus dimension can claim 16384 columns
_UNCACHED_FORMULA = re.compile(
    rb"(?:</(?:\w+:)?f>|<(?:\w+:)?f\b[^>]*/>)\s*(?:<(?:\w+:)?v\s*/>|<(?:\w+:)?v>\s*</(?:\w+:)?v>)?"
    rb"\s*</(?:\w+:)?c>"
)


def _uncached_formulas(data: bytes) -> int:
    """Formula cells stored without a cached value (read as empty with data_only)."""
    n = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                if info.filename.startswith("xl/worksheets/") and info.file_size < 64 << 20:
                    n += len(_UNCACHED_FORMULA.findall(zf.read(info)))
    except (zipfile.BadZipFile, OSError, RuntimeError):
        return 0
    return n


def _load(data: bytes) -> Any:
    import openpyxl  # lazy: only workbooks need it
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        return openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
    except (zipfile.BadZipFile, InvalidFileException, KeyError, OSError) as e:
        raise CorruptDocument(f"workbook cannot be opened: {type(e).__name__}: {e}") from None
    except Exception as e:  # malformed XML inside the package surfaces as many types
        raise CorruptDocument(f"workbook is damaged: {type(e).__name__}: {e}") from None


def _rows(ws: Any, budget: TextBudget) -> list[list[str]]:
    """A sheet's cell texts, each cell's text spent from the file's budget as it is read: one
    shared string of 100 KB in 9,000 cells took 12 GB before the finished text could be refused."""
    rows: list[list[str]] = []
    for values in ws.iter_rows(values_only=True):
        # a row costs a line even when empty: openpyxl yields one for every row up to the last, and
        # a single row numbered 100,000,000 (a 1.5 KB file) made 100 M of them, 13.8 GB
        budget.spend(1)
        row = []
        for value in values[:MAX_COLUMNS]:
            text = cell_text(value)
            budget.spend(len(text) + 1)  # + a separator: empty cells inside a row are written too
            row.append(text)
        rows.append(row)
    return rows


def parse_xlsx(data: bytes) -> ParseResult:
    """Parse an .xlsx workbook into sheet headings and table blocks."""
    check_package(data, "workbook")
    wb = _load(data)
    blocks: list[Block] = []
    warnings: list[str] = []
    sheets: list[dict[str, Any]] = []
    budget = TextBudget(len(data), "xlsx")
    formula_gaps = _uncached_formulas(data)
    try:
        for ws in wb.worksheets:
            name = ws.title
            if getattr(ws, "sheet_state", "visible") != "visible":
                warnings.append(f"sheet {name!r} is hidden and was skipped")
                continue
            try:
                ws.reset_dimensions()  # trust the cells, not the stored dimension
                rows = _rows(ws, budget)
            except ParseError:
                raise
            except Exception as e:  # one damaged sheet must not hide the others
                warnings.append(f"sheet {name!r} could not be read: {type(e).__name__}: {e}")
                continue
            body = sheet_blocks(rows, {"sheet": name})
            sheets.append({"name": name, "rows": len(rows), "blocks": len(body)})
            if not body:
                continue
            blocks.append(Block("heading", f"Sheet: {name}", level=1, meta={"sheet": name}))
            blocks.extend(body)
        if not wb.worksheets and getattr(wb, "chartsheets", None):
            warnings.append("workbook holds chart sheets only")
    finally:
        wb.close()
    if not blocks:
        n = len(wb.worksheets)
        raise EmptyDocument(f"workbook has {n} sheet(s) but no cell holds a value")
    if formula_gaps:
        warnings.append(
            f"{formula_gaps} formula cell(s) have no cached value (the workbook was never "
            "recalculated by a spreadsheet program); they are indexed as empty"
        )
    props = wb.properties
    title = (props.title or "").strip() if props is not None else ""
    if not title:  # a lone cell at the top of the first sheet is the workbook's own title
        top = next((b for b in blocks if b.kind != "heading"), None)
        if (
            top
            and top.kind == "paragraph"
            and top.meta.get("row") == 1
            and "\n" not in top.text
            and len(top.text) <= 150
        ):
            title = top.text
    metadata: dict[str, Any] = {"sheets": sheets}
    if props is not None and props.creator:
        metadata["author"] = props.creator
    return ParseResult(blocks=blocks, title=title or None, format="xlsx", metadata=metadata, warnings=warnings)
