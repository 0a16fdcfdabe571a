"""Stage versions of a full stage configuration, chained the way the data flows.

parse -> chunk chain (a parse change re-cuts chunks); contexts and embeddings are keyed by
content hashes, so their versions depend on their own config only: an embedder change keeps
every chunk and every contextual prefix, a chunker change keeps every parse.
Throughput-only knobs (batch size, device, concurrency) never enter a version, nor does
`parse.language` (no parser reads it; changing it must not re-parse everything), nor a limit that
only refuses documents (`parse.max_ocr_pages`, `parse.max_parse_seconds`: the refused ones are
dead letters to retry).
Query-time knobs live in `QueryConfig` and never enter a stage version.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from connectors.config import StageConfigs
from connectors.embedder import embedder_id, resolve_embed
from connectors.identity import short_hash, stage_version

__all__ = ["generation_key", "settings_differences", "stage_configs_dump", "stage_versions"]

# ... and limits that only decide whether a document is refused (a dead letter, retried by hand)
_THROUGHPUT_ONLY = {"embed": {"batch_size", "device"}, "context": {"concurrency"},
                    "parse": {"language", "max_ocr_pages", "max_parse_seconds"}}


def stage_configs_dump(stages: StageConfigs) -> dict[str, Any]:
    """What a generation records: the embed section with `auto` resolved on this machine."""
    out = stages.model_dump(mode="json")
    out["embed"] = resolve_embed(stages.embed).model_dump(mode="json")
    return out


def _output_config(stages: StageConfigs, stage: str) -> dict[str, Any]:
    d: dict[str, Any] = stages.model_dump(mode="json", include={stage})[stage]
    return {k: v for k, v in d.items() if k not in _THROUGHPUT_ONLY.get(stage, set())}


def stage_versions(stages: StageConfigs) -> dict[str, str]:
    parse = stage_version("parse", _output_config(stages, "parse"))
    chunk = stage_version("chunk", {**_output_config(stages, "chunk"), "parse": parse})
    context = stage_version("context", _output_config(stages, "context"))
    return {"parse": parse, "chunk": chunk, "context": context, "embed": embedder_id(stages.embed)}


def generation_key(versions: dict[str, str]) -> str:
    return short_hash(versions, 6)


def settings_differences(recorded: dict[str, Any], stages: StageConfigs,
                         only: Iterable[str] = ("parse", "chunk", "context", "embed")) -> list[str]:
    """The stage settings a generation was built with (`recorded`, its `stage_configs`) that
    differ from `stages`, as "stages.chunk.max_tokens: 250 (configuration: 200)"; throughput
    knobs left out, and stages outside `only` (those whose version is the same: a key a newer
    release added reads as a difference there, though nothing would be rebuilt). What an
    operator copies into bindery.yaml to keep a generation `bindery tune --build` made: the
    next reindex otherwise builds the configuration's settings."""
    current = stage_configs_dump(stages)
    out: list[str] = []
    for stage in only:
        have, want = recorded.get(stage) or {}, current.get(stage) or {}
        for key in sorted(set(have) | set(want)):
            if key not in _THROUGHPUT_ONLY.get(stage, set()) and have.get(key) != want.get(key):
                out.append(f"stages.{stage}.{key}: {have.get(key)!r} (configuration: {want.get(key)!r})")
    return out
