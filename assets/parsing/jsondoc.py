"""JSON and JSON Lines as readable text.

Data files are not prose, so the aim is blocks a person (and an embedder) can read with the
field names attached to every value:

* scalars become "key.path: value" lines, grouped into one paragraph per object (at most
  MAX_LINES lines a paragraph);
* an array of objects that share their keys (homogeneous: every item an object, the key union
  at most MAX_COLUMNS and no item missing most of the keys) becomes a table with one column
  per (flattened) key, in row groups that repeat the header;
* an array of scalars is one line "key: a, b, c";
* a top-level key whose value is an object or array gets a heading, so the chunker keeps each
  section's lines together and the heading path says where a value came from.

JSON Lines: one record per line; homogeneous records form one table, others one paragraph per
record (meta {"record": line number}). A line that is not JSON is skipped with a warning. Text
that is not valid JSON at all is indexed as plain text with a warning (configuration files with
comments, truncated exports), never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, cut_label, table_row_groups
from connectors.documents import Block, ParseResult

__all__ = ["load_json", "parse_json", "parse_jsonl"]

MAX_LINES = 25
MAX_COLUMNS = 20
MAX_VALUE_CHARS = 2000
MAX_KEY_CHARS = 200  # a key is repeated in the dotted path of every value under it
# ... and so is the whole path: past this many characters only its last keys are kept, after
# "…" (900 nested keys of 190 characters put 171,000 characters before each of 1,000 values:
# 175 million characters of text from a 225 KB file)
MAX_PATH_CHARS = 400  # (text far larger than its file is refused for every format: `assets.parsing`)
_TITLE_KEYS = ("title", "name", "subject", "headline")


def load_json(text: str) -> Any:
    """`json.loads`, keeping an integer of more digits than Python converts (4,300,
    `sys.get_int_max_str_digits`) as its digits: its ValueError, no JSONDecodeError, failed the
    whole document as a parser crash (a notebook showing a large factorial as JSON)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # only the digits limit: parsed again, each integer through `_int`
        return json.loads(text, parse_int=_int)


def _int(digits: str) -> int | str:
    try:
        return int(digits)
    except ValueError:
        return digits


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _shorten(clean_inline(value if isinstance(value, str) else json.dumps(value)))


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + " …"


_END = object()


def _json_prefix(value: Any, limit: int) -> tuple[str, bool]:
    """`json.dumps(value, ensure_ascii=False)`, stopped once past `limit` characters, and whether
    it is whole. One pass with a stack: the standard encoder serialises everything (or, lazily,
    passes each piece up through one generator per level)."""
    out: list[str] = []
    size = 0
    stack: list[tuple[Iterator[Any], bool, list[bool]]] = []  # (items, is an object, [first])
    cur: Any = value
    while True:
        if isinstance(cur, dict):
            piece = "{"
            stack.append((iter(cur.items()), True, [True]))
        elif isinstance(cur, list):
            piece = "["
            stack.append((iter(cur), False, [True]))
        elif isinstance(cur, str) and len(cur) > limit:  # cut, with no closing quote: the end
            return "".join([*out, json.dumps(cur[:limit], ensure_ascii=False)[:-1]]), False
        else:
            piece = json.dumps(cur, ensure_ascii=False)
        nxt: Any = _END  # the next value to write, once this piece and any closers are out
        while stack:
            items, is_object, first = stack[-1]
            item: Any = next(items, _END)
            if item is _END:
                piece += "}" if is_object else "]"
                stack.pop()
                continue
            piece += "" if first[0] else ", "
            first[0] = False
            if is_object:
                piece += json.dumps(str(item[0]), ensure_ascii=False) + ": "
                item = item[1]
            nxt = item
            break
        out.append(piece)
        size += len(piece)
        if nxt is _END:
            return "".join(out), True
        if size > limit:
            return "".join(out), False
        cur = nxt


def _nested_value(value: list[Any]) -> str:
    """A nested list as a cell: its JSON, cut like any value. Only as much is serialised as the
    cut keeps: each level of a deep document serialised all that lay below it (516 KB: 29 s)."""
    limit = 4 * MAX_VALUE_CHARS
    while True:
        text, whole = _json_prefix(value, limit)
        text = clean_inline(text)
        # mostly whitespace, which the cut does not count: serialise further, within a bound (past
        # it the cell is what that much JSON holds, not the whole value's first 2,000 characters)
        if whole or len(text) > MAX_VALUE_CHARS or limit >= 64 * MAX_VALUE_CHARS:
            return _shorten(text)
        limit *= 4


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _flat_row(obj: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """An object flattened to dotted keys; lists of scalars joined, other lists as JSON."""
    out: dict[str, str] = {}
    for k, v in obj.items():
        key = _join(prefix, k)
        if isinstance(v, dict):
            out.update(_flat_row(v, key))
        elif isinstance(v, list):
            if all(_is_scalar(x) for x in v):
                out[key] = ", ".join(_scalar(x) for x in v)
            else:
                out[key] = _nested_value(v)
        else:
            out[key] = _scalar(v)
    return out


def _table_columns(items: list[Any]) -> list[str] | None:
    """Columns when `items` is a homogeneous array of objects, else None."""
    if len(items) < 2 or not all(isinstance(x, dict) and x for x in items):
        return None
    rows = [_flat_row(x) for x in items]
    columns: list[str] = []
    seen: set[str] = set()
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                columns.append(k)
    if len(columns) > MAX_COLUMNS:
        return None
    if any(len(r) < 0.5 * len(columns) for r in rows):
        return None  # items with mostly different keys are records, not rows
    return columns


class _Writer:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)
        if len(self.lines) >= MAX_LINES:
            self.flush()

    def flush(self, meta: dict[str, Any] | None = None) -> None:
        if self.lines:
            self.blocks.append(Block("paragraph", "\n".join(self.lines), meta=meta or {}))
            self.lines = []

    def value(self, path: str, value: Any, depth: int) -> None:
        """Emit `value` found at `path` (a dotted key path, '' for the root)."""
        label = path or "value"
        if isinstance(value, dict):
            scalars = [(k, v) for k, v in value.items() if _is_scalar(v)]
            nested = [(k, v) for k, v in value.items() if not _is_scalar(v)]
            for k, v in scalars:
                self.line(f"{_join(path, k)}: {_scalar(v)}")
            for k, v in nested:
                if depth == 0:
                    self.flush()
                    self.blocks.append(Block("heading", clean_inline(str(k)), level=1))
                self.value(_join(path, k), v, depth + 1)
            if depth <= 1:
                self.flush()
        elif isinstance(value, list):
            if all(_is_scalar(x) for x in value):
                self.line(f"{label}: {', '.join(_scalar(x) for x in value)}")
                return
            columns = _table_columns(value)
            if columns is not None:
                self.flush()
                rows = [[_flat_row(x).get(c, "") for c in columns] for x in value]
                self.blocks.extend(table_row_groups(columns, rows, meta={"json_path": label}))
                return
            for i, item in enumerate(value):
                self.value(_bounded(f"{label}[{i}]"), item, depth + 1)
                if isinstance(item, dict):
                    self.flush()
        else:
            self.line(f"{label}: {_scalar(value)}")


def _join(path: str, key: Any) -> str:
    # a key is repeated in the path of every value under it: a long one is cut (a 150 KB
    # object under one enormous key made hundreds of MB of text)
    key = cut_label(str(key), MAX_KEY_CHARS)
    return _bounded(f"{path}.{key}") if path else key


def _bounded(path: str) -> str:
    """`path` itself when short, else "…" and as many of its last keys as fit MAX_PATH_CHARS."""
    if len(path) <= MAX_PATH_CHARS:
        return path
    tail = path[len(path) - MAX_PATH_CHARS + 1 :]
    dot = tail.find(".")
    return "…" + (tail[dot:] if 0 <= dot < len(tail) - 1 else tail)


def _title(value: Any) -> str | None:
    if isinstance(value, dict):
        for k in _TITLE_KEYS:
            v = value.get(k)
            if isinstance(v, str) and 0 < len(v.strip()) <= 200:
                return clean_inline(v)
    return None


def _as_text(data: bytes, fmt: str, error: str) -> ParseResult:
    from assets.parsing.text import parse_text

    result = parse_text(data)
    result.warnings.append(f"not valid {fmt} ({error}); indexed as plain text")
    return result


def parse_json(data: bytes) -> ParseResult:
    """Parse a JSON document into key-path paragraphs, headings and tables."""
    text, encoding = decode_text(data)
    try:
        value = load_json(text.lstrip("\ufeff"))
    except (json.JSONDecodeError, RecursionError) as e:
        return _as_text(data, "JSON", str(e))
    w = _Writer()
    w.value("", value, 0)
    w.flush()
    return ParseResult(blocks=w.blocks, title=_title(value), format="json", metadata={"encoding": encoding})


def parse_jsonl(data: bytes) -> ParseResult:
    """Parse JSON Lines: one table for homogeneous records, else a paragraph per record."""
    text, encoding = decode_text(data)
    records: list[tuple[int, Any]] = []
    bad: list[int] = []
    for n, line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((n, load_json(line)))
        except (json.JSONDecodeError, RecursionError):
            bad.append(n)
    if not records:
        return _as_text(data, "JSON Lines", f"none of {len(bad)} lines parses as JSON")
    warnings = [f"{len(bad)} line(s) are not JSON and were skipped: {bad[:10]}"] if bad else []
    values = [v for _, v in records]
    columns = _table_columns(values)
    blocks: list[Block] = []
    if columns is not None:
        rows = [[_flat_row(v).get(c, "") for c in columns] for v in values]
        blocks = table_row_groups(columns, rows)
    else:
        for n, v in records:
            w = _Writer()
            w.value("", v, 1)
            w.flush()
            for b in w.blocks:
                b.meta["record"] = n
            blocks.extend(w.blocks)
    return ParseResult(
        blocks=blocks,
        title=None,
        format="jsonl",
        metadata={"encoding": encoding, "records": len(records)},
        warnings=warnings,
    )
