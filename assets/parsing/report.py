"""Human-readable parse report for a folder: compare what the parser saw with the originals.

    python -m assets.parsing.report DIR [--out FILE] [--jsonl FILE] [--no-ocr] [--lines N]

For every file under DIR (recursively, sorted): detected format, title, per-page routes, the
document metrics, warnings, errors (reason class + message) and the first lines of the
extracted text, then a summary by format and by failure reason with parse speed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.parsing import document_title, parse_document
from connectors.config import ParseConfig
from connectors.documents import ParseResult
from connectors.errors import ParseError

__all__ = ["main", "report_file", "walk"]

_METRIC_KEYS = (
    "chars",
    "pages",
    "chars_per_page",
    "alnum_share",
    "word_share",
    "empty_page_share",
    "repeated_line_share",
    "ocr_pages",
    "blocks",
    "headings",
    "tables",
)


def walk(root: Path) -> Iterator[Path]:
    """Files under `root`, sorted, skipping hidden files and folders."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            yield path


def _routes(result: ParseResult) -> str:
    parts = []
    for p in result.page_metrics:
        extra = []
        if p.get("columns", 1) > 1:
            extra.append(f"cols={p['columns']}")
        if p.get("tables"):
            extra.append(f"tables={p['tables']}")
        if p.get("route") == "ocr":
            extra.append(f"junk={p.get('ocr_junk_share', 0):.2f}")
        suffix = f"({', '.join(extra)})" if extra else ""
        parts.append(f"{p['page']}:{p['route']}{suffix}")
    return " ".join(parts)


def _preview(result: ParseResult, n_lines: int) -> list[str]:
    out: list[str] = []
    for b in result.blocks:
        tag = f"{b.kind}{b.level or ''}" + (f" p{b.page}" if b.page else "")
        if b.meta.get("quoted"):
            tag += " quoted"
        for i, line in enumerate(b.text.split("\n")):
            prefix = f"[{tag}]" if i == 0 else " " * (len(tag) + 2)
            out.append(f"    {prefix} {line[:160]}")
            if len(out) >= n_lines:
                return out
    return out


def report_file(path: Path, root: Path, config: ParseConfig, n_lines: int) -> tuple[str, dict[str, Any]]:
    """(report text, JSON-able record) for one file."""
    rel = path.relative_to(root).as_posix()
    data = path.read_bytes()
    start = time.perf_counter()
    record: dict[str, Any] = {"doc": rel, "bytes": len(data)}
    try:
        result = parse_document(data, rel, config)
    except ParseError as e:
        ms = (time.perf_counter() - start) * 1000
        record.update(ms=round(ms, 1), error=e.reason, error_class=type(e).__name__, message=str(e))
        return (
            f"== {rel}  ({len(data):,} bytes, {ms:.0f} ms)\n   ERROR {e.reason} "
            f"({type(e).__name__}): {e}\n",
            record,
        )
    ms = (time.perf_counter() - start) * 1000
    record.update(
        ms=round(ms, 1),
        format=result.format,
        title=document_title(result.title, rel),
        warnings=result.warnings,
        **result.metrics,
    )
    lines = [
        f"== {rel}  ({result.format}, {len(data):,} bytes, {ms:.0f} ms)",
        f"   title: {document_title(result.title, rel)!r}",
    ]
    if result.page_metrics:
        lines.append(f"   pages: {_routes(result)}")
    m = result.metrics
    lines.append("   metrics: " + ", ".join(f"{k}={m[k]}" for k in _METRIC_KEYS if k in m))
    if m.get("ocr_pages"):
        lines.append(f"   ocr: {m['ocr_pages']} page(s), confidence={m.get('ocr_confidence')}")
    for w in result.warnings:
        lines.append(f"   warning: {w}")
    lines.append("   --- text ---")
    lines.extend(_preview(result, n_lines))
    return "\n".join(lines) + "\n", record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m assets.parsing.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("dir", type=Path, help="folder of documents to parse")
    ap.add_argument("--out", type=Path, help="write the report here instead of stdout")
    ap.add_argument("--jsonl", type=Path, help="also write one JSON record per document")
    ap.add_argument("--no-ocr", action="store_true", help="parse with OCR disabled")
    ap.add_argument("--lines", type=int, default=8, help="text lines shown per document")
    args = ap.parse_args(argv)
    if not args.dir.is_dir():
        print(f"not a folder: {args.dir}", file=sys.stderr)
        return 2
    config = ParseConfig(ocr=not args.no_ocr)
    out = args.out.open("w", encoding="utf-8") if args.out else sys.stdout
    records: list[dict[str, Any]] = []
    try:
        for path in walk(args.dir):
            text, record = report_file(path, args.dir, config, args.lines)
            out.write(text + "\n")
            records.append(record)
        out.write(_summary(records))
    finally:
        if args.out:
            out.close()
    if args.jsonl:
        with args.jsonl.open("w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, default=str) + "\n")
    return 0


def _summary(records: list[dict[str, Any]]) -> str:
    formats: dict[str, list[float]] = defaultdict(list)
    reasons: Counter[str] = Counter()
    for r in records:
        if "error" in r:
            reasons[r["error"]] += 1
        else:
            formats[r["format"]].append(r["ms"])
    lines = [f"== summary: {len(records)} file(s), {sum(reasons.values())} failed"]
    for fmt, times in sorted(formats.items()):
        lines.append(f"   {fmt:9s} {len(times):5d} docs  {sum(times) / len(times):8.1f} ms/doc")
    for reason, n in reasons.most_common():
        lines.append(f"   failed: {reason} x {n}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
