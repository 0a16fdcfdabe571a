"""What a parser produces: ordered, typed blocks with provenance, plus quality metrics.

These records sit in `connectors/` (the bottom layer) because both sides of the pipeline use them:
the parsers in `assets/parsing/` build them and `quality/metrics.py` measures them. Keeping them
here means no module imports back up the layers (see the import table in docs/architecture.md);
`assets.parsing.types` re-exports them for older imports.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["title", "heading", "paragraph", "list_item", "table", "code", "caption"]


@dataclass
class Block:
    kind: BlockKind
    text: str  # tables: GitHub-flavoured Markdown with the header row
    level: int = 0  # heading level (1 = top); 0 for non-headings
    page: int | None = None  # 1-based page for paginated formats
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. {"route": "ocr"}, {"attachment": name}

    def to_dict(self) -> dict[str, Any]:
        # by hand, as `asdict` would give it: asdict recurses into every field of every block
        return {"kind": self.kind, "text": self.text, "level": self.level, "page": self.page,
                "meta": copy.deepcopy(self.meta) if self.meta else {}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Block:
        return cls(**d)


@dataclass
class ParseResult:
    blocks: list[Block]
    title: str | None = None
    format: str = "text"  # detected format: pdf, html, markdown, text, email, docx
    metadata: dict[str, Any] = field(default_factory=dict)  # email subject/from/date/thread ids, ...
    metrics: dict[str, Any] = field(default_factory=dict)  # document-level metrics
    page_metrics: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
