"""Compatibility re-export: parse records now live in `connectors.documents` (below assets and quality)."""

from __future__ import annotations

from connectors.documents import Block, BlockKind, ParseResult

__all__ = ["Block", "BlockKind", "ParseResult"]
