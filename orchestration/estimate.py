"""How long a plan's work will take and what its LLM calls will cost, from this machine's past.

`throughput(instance)` reads the materialisation metadata every stage asset records (items done
and seconds taken) from the Dagster instance, over the most recent runs that did work, and
turns it into seconds per item per stage. `estimate_seconds` multiplies a plan's work by it;
a stage with no history is named, never guessed. `llm_estimate` counts the Anthropic calls and
tokens of the prefixes a plan would compute, priced with `prices:` from bindery.yaml.

Importing Dagster and opening its instance costs a `bindery plan` about a second, more than the
plan itself after a first sync. So every CLI run leaves what `throughput` found beside the
instance (`remember_throughput`), stamped with the size and modification time of the SQLite
files Dagster indexes materialisations in; `cached_throughput` returns it while those files are
unchanged, and None once anything (a UI run, a daemon run) wrote to them, or where the
instance's storage is not those files (PostgreSQL), so the plan then asks Dagster itself.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assets.runtime import Generation
from connectors.config import BinderyConfig
from connectors.contextualizers import DocumentContext
from connectors.store import ChunkRecord

if TYPE_CHECKING:  # Dagster is imported only to read history: a first plan (no history) never loads it
    import dagster as dg

__all__ = ["HISTORY_RUNS", "cached_throughput", "estimate_seconds", "llm_estimate", "remember_throughput",
           "throughput"]

HISTORY_RUNS = 20  # materialisations per stage asset looked at (the most recent ones that did work)

# stage -> (asset, metadata key of the items it computed)
_STAGE_ASSETS = {
    "listing": ("source_listing", "listed"),  # every run lists, whatever changed
    "parse": ("parsed_documents", "attempted"),
    "chunk": ("chunks", "chunked"),
    "context": ("contextual_prefixes", "computed"),
    "embed": ("embeddings", "embedded"),
    "index": ("generation", "written_docs"),  # one record per generation written, with its own seconds
}


def _value(v: Any) -> Any:
    import dagster as dg

    return v.value if isinstance(v, dg.MetadataValue) else v


def _recent(instance: dg.DagsterInstance, asset: str, key: str) -> list[dict[str, Any]]:
    """Metadata of the most recent materialisations of `asset` that computed something."""
    import dagster as dg

    out = []
    for rec in instance.fetch_materializations(dg.AssetKey(asset), limit=200).records:
        mat = rec.asset_materialization
        if mat is None:
            continue
        meta = {k: _value(v) for k, v in mat.metadata.items()}
        n, s = meta.get(key), meta.get("seconds")
        if isinstance(n, (int, float)) and isinstance(s, (int, float)) and n > 0:
            out.append(meta)
            if len(out) >= HISTORY_RUNS:
                break
    return out


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(fixed seconds per run, seconds per item) by least squares over (items, seconds) of past
    runs. A plain ratio when all runs did the same amount of work, or when the runs with more
    items were not the slower ones (shorter texts, a quieter machine): a line through such
    points has no positive slope, and its intercept, the mean run time, was then predicted for
    any run (106 s for 2 texts after two reindexes of 1,478 and 1,651 texts, an operator pass).
    The fixed part never exceeds the fastest run."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    if slope <= 0:
        return 0.0, my / mx
    return min(max(0.0, my - slope * mx), min(y for _, y in points)), slope


def throughput(instance: dg.DagsterInstance) -> dict[str, Any]:
    """Per stage, the fixed seconds per run and the seconds per item of past runs (a run's time
    is not proportional to its work: the embed stage loads the model once whatever it embeds),
    plus LLM tokens per computed prefix."""
    out: dict[str, Any] = {"seconds_per_item": {}, "fixed_seconds": {}, "runs": {}}
    for stage, (asset, key) in _STAGE_ASSETS.items():
        runs = _recent(instance, asset, key)
        if not runs:
            continue
        fixed, per_item = _fit([(float(m[key]), float(m["seconds"])) for m in runs])
        out["runs"][stage] = len(runs)
        out["seconds_per_item"][stage] = per_item
        out["fixed_seconds"][stage] = fixed
        if stage == "embed":  # the characters of what was embedded, where the runs recorded them
            counted = [m for m in runs if isinstance(m.get("embedded_chars"), (int, float))]
            if counted:
                out["chars_per_text"] = sum(m["embedded_chars"] for m in counted) / sum(m[key] for m in counted)
        if stage == "context":
            items = sum(float(m[key]) for m in runs)
            tokens = {t: sum(float(m.get(t) or 0) for m in runs) / items
                      for t in ("input_tokens", "output_tokens", "cache_read_tokens")}
            if tokens["input_tokens"]:
                out["llm_tokens_per_prefix"] = tokens
    return out


CACHE_FILE = "bindery-throughput.json"
_INDEX_FILES = ("index.db", "index.db-wal")  # Dagster's SQLite event-log index, and its write-ahead log


def _stamp(home: Path) -> list[list[int]] | None:
    """(size, mtime) of the files a new materialisation changes, or None when the instance does
    not keep its event log there (its dagster.yaml names another storage)."""
    import yaml

    try:
        settings = yaml.safe_load((home / "dagster.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(settings, dict) or {"storage", "event_log_storage"} & set(settings):
        return None
    index = home / "history" / "runs"
    stats = [index / f for f in _INDEX_FILES]
    if not stats[0].exists():
        return None
    return [[p.stat().st_size, p.stat().st_mtime_ns] if p.exists() else [] for p in stats]


def remember_throughput(instance: dg.DagsterInstance, home: Path) -> None:
    """Leave `throughput(instance)` in `home` for the next plan; best effort: a run never fails
    for it, and a plan without it asks Dagster."""
    if _stamp(home) is None:
        return
    tmp = home / f".{CACHE_FILE}.{os.getpid()}"
    try:
        history = throughput(instance)
        stamp = _stamp(home)  # after the reads: closing SQLite's last connection may fold its log in
        tmp.write_text(json.dumps({"stamp": stamp, "throughput": history}))
        tmp.replace(home / CACHE_FILE)
    except Exception:  # a cache: the run it follows has already succeeded or failed whatever happens here
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def cached_throughput(home: Path) -> dict[str, Any] | None:
    """What the last CLI run left in `home`, or None when the instance changed since (or never
    had it): then only `throughput(instance)` knows."""
    try:
        data = json.loads((home / CACHE_FILE).read_text())
    except (OSError, ValueError):
        return None
    stamp = _stamp(home)
    if not isinstance(data, dict) or stamp is None or data.get("stamp") != stamp:
        return None
    history = data.get("throughput")
    return history if isinstance(history, dict) else None


def estimate_seconds(stages: dict[str, dict[str, Any]], history: dict[str, Any] | None, *, listed: int = 0,
                     embed_known: int = 0, embed_chars: int = 0) -> dict[str, Any]:
    """Seconds per stage = fixed cost per run (embed: the model load) + items to compute x
    seconds per item measured here before. The listing counts every run, by the entries it
    lists; the embed stage's items are scaled by the length of the texts to embed against
    those measured (`embed_known` texts of `embed_chars` characters): shorter chunks embed
    faster, and a chunk-size reindex was estimated at 2.5 times what it took."""
    rates = (history or {}).get("seconds_per_item", {})
    fixed = (history or {}).get("fixed_seconds", {})
    work = {"listing": listed, **{stage: c["compute"] for stage, c in stages.items()}}
    by_stage: dict[str, float] = {}
    missing = []
    for stage, n in work.items():
        if not n:
            continue
        if stage in rates:
            by_stage[stage] = round(fixed.get(stage, 0.0) + n * rates[stage] * _length_factor(
                stage, history or {}, embed_known, embed_chars), 1)
        elif stage != "listing":  # a listing without history is a small share of any run
            missing.append(stage)
    note = None
    if missing:
        note = (f"no history for {', '.join(missing)} on this instance: their time is not included "
                "(a first sync measures it)")
    # a partial sum read as the run's time ("about 0 s" for a run whose embed had no history,
    # interrupted before it measured one): unknown, with the measured stages in by_stage
    return {"seconds": None if missing else round(sum(by_stage.values()), 1),
            "by_stage": by_stage, "no_history": missing, "note": note,
            "runs_measured": (history or {}).get("runs", {})}


# A text's embedding time is affine in its length: all-MiniLM-L6-v2 on this kind of machine took
# 6.2 / 10.8 / 23.8 ms per text of 192 / 384 / 1,143 characters (batches of 256), about the time
# of 150 more characters per text whatever its length.
TEXT_OVERHEAD_CHARS = 150


def _length_factor(stage: str, history: dict[str, Any], known: int, chars: int) -> float:
    """How much longer (or shorter) the texts to embed take than those the rate was measured on."""
    measured = history.get("chars_per_text")
    if stage != "embed" or not measured or not known or not chars:
        return 1.0
    return (TEXT_OVERHEAD_CHARS + chars / known) / (TEXT_OVERHEAD_CHARS + float(measured))


def llm_estimate(cfg: BinderyConfig, targets: list[Generation],
                 docs: list[tuple[DocumentContext, list[ChunkRecord]]],
                 history: dict[str, Any] | None) -> dict[str, Any] | None:
    """Anthropic calls, tokens and cost of the prefixes the plan would compute, or None when no
    target generation uses the Anthropic contextualiser.

    One call per chunk; the document is sent with each and cached: the first call of a document
    writes it to the prompt cache, the others read it. Token counts are word pieces of the
    embedder's tokenizer (close to, not equal to, Claude's); output is the measured mean per
    prefix when past runs have one, else `max_prefix_tokens`.
    """
    anthropic = [g for g in targets if g.stages.context.provider == "anthropic"]
    if not anthropic:
        return None
    from connectors.tokenizer import get_tokenizer

    ccfg = anthropic[0].stages.context
    count = get_tokenizer(cfg.stages.chunk.tokenizer or cfg.stages.embed.model).count
    calls = cache_write = cache_read = uncached = 0
    for doc, chunks in docs:
        doc_tokens = count(f"{doc.title or ''}\n{doc.full_text}")
        calls += len(chunks)
        cache_write += doc_tokens
        cache_read += doc_tokens * (len(chunks) - 1)
        uncached += sum(count(c.display_text) + _INSTRUCTION_TOKENS for c in chunks)
    per_prefix = ((history or {}).get("llm_tokens_per_prefix") or {}).get("output_tokens")
    output = round(calls * (per_prefix or ccfg.max_prefix_tokens))
    p = cfg.prices
    cost = (uncached * p.input_per_mtok + cache_write * p.cache_write_per_mtok
            + cache_read * p.cache_read_per_mtok + output * p.output_per_mtok) / 1e6
    return {"model": ccfg.model, "calls": calls, "input_tokens": uncached, "cache_write_tokens": cache_write,
            "cached_input_tokens": cache_read, "output_tokens": output, "cost_usd": round(cost, 4),
            "prices_usd_per_mtok": p.model_dump(), "output_from_history": per_prefix is not None}


_INSTRUCTION_TOKENS = 60  # the fixed situate-this-chunk instruction around each chunk
