"""How long a plan's work will take and what its LLM calls will cost, from this machine's past.

`throughput(instance)` reads the most recent successful runs from the Dagster instance (each
stage's step time, and the items its asset's materialisation metadata says it did) and fits per
stage a fixed cost and seconds per item. `estimate_seconds` multiplies a plan's work by it;
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
from statistics import median_low  # the lower middle: a value some run really took
from typing import TYPE_CHECKING, Any

from assets.runtime import Generation
from connectors.config import BinderyConfig
from connectors.contextualizers import DocumentContext
from connectors.store import ChunkRecord

if TYPE_CHECKING:  # Dagster is imported only to read history: a first plan (no history) never loads it
    import dagster as dg

__all__ = ["HISTORY_RUNS", "cached_throughput", "estimate_seconds", "llm_estimate", "parse_seconds",
           "process_seconds", "remember_throughput", "throughput"]

HISTORY_RUNS = 20  # runs looked at (the most recent sync and reindex runs that succeeded)

# stage -> (asset, metadata key of the items it computed, the Dagster step that computes it)
_STAGE_ASSETS = {
    "listing": ("source_listing", "listed", "source_listing"),  # every run lists, whatever changed
    "parse": ("parsed_documents", "attempted", "parsed_documents"),
    "chunk": ("chunks", "chunked", "chunks"),
    "context": ("contextual_prefixes", "computed", "contextual_prefixes"),
    "embed": ("embeddings", "embedded", "embeddings"),
    # one record per generation written, with its own seconds: the step's items are their sum,
    # as the plan counts a document once per generation it writes it to
    "index": ("generation", "written_docs", "indexes"),
}
STARTUP_TAG = "bindery/startup-seconds"  # a CLI run: its process's seconds before the run began


def _value(v: Any) -> Any:
    import dagster as dg

    return v.value if isinstance(v, dg.MetadataValue) else v


def _by_run(instance: dg.DagsterInstance, asset: str, runs: set[str]) -> dict[str, list[dict[str, Any]]]:
    """run id -> metadata of the materialisations of `asset` in those runs."""
    import dagster as dg

    out: dict[str, list[dict[str, Any]]] = {}
    for rec in instance.fetch_materializations(dg.AssetKey(asset), limit=200).records:
        mat = rec.asset_materialization
        if mat is not None and rec.run_id in runs:
            out.setdefault(rec.run_id, []).append({k: _value(v) for k, v in mat.metadata.items()})
    return out


def _run_samples(instance: dg.DagsterInstance) -> list[dict[str, Any]]:
    """Per recent successful run that computed stages: its seconds per step (Dagster's step timings:
    the asset's own `seconds` leave out the step's start, its resources and its writes, 0.2 to
    0.7 s a step here), the items and metadata of each stage, its own seconds outside the
    steps, and the CLI process's start before it."""
    import dagster as dg

    records = [r for r in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]),
                                                   limit=4 * HISTORY_RUNS) if r.start_time and r.end_time]
    ids = {r.dagster_run.run_id for r in records}
    metas = {stage: _by_run(instance, asset, ids) for stage, (asset, _, _) in _STAGE_ASSETS.items()}
    # the runs that computed stages (a sync, a reindex, the UI's materialisation of some): not a
    # promote's or an evaluation's
    records = [r for r in records if any(r.dagster_run.run_id in m for m in metas.values())][:HISTORY_RUNS]
    out = []
    for r in records:
        rid = r.dagster_run.run_id
        steps = {s.step_key: s.end_time - s.start_time for s in instance.get_run_step_stats(rid)
                 if s.start_time and s.end_time}
        sample: dict[str, Any] = {"stages": {}, "other": max(0.0, (r.end_time or 0) - (r.start_time or 0)
                                                             - sum(steps.values()))}
        startup = r.dagster_run.tags.get(STARTUP_TAG)
        with contextlib.suppress(TypeError, ValueError):
            sample["startup"] = float(startup) if startup is not None else None
        for stage, (_, key, step) in _STAGE_ASSETS.items():
            ms = metas[stage].get(rid)
            if not ms or step not in steps:
                continue
            n = sum(float(m.get(key) or 0) for m in ms)
            sample["stages"][stage] = {"items": n, "seconds": steps[step], "meta": ms}
        out.append(sample)
    return out


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(fixed seconds per run, seconds per item) over (items, seconds) of past runs, robustly:
    the slope is the median of the slopes between every two runs (Theil-Sen), leaving out two
    runs of nearly the same work (1 and 2 items: their slope is noise), the fixed part the
    median of what each run took beyond its items. A first run that loaded the model, or ran
    beside another job, moves neither as least squares did (a sync of 5 documents was
    then predicted at 0.05 s and took 0.5). A plain ratio when the runs did the same amount of
    work, or when the runs with more items were not the slower ones (shorter texts, a quieter
    machine): a line through such points has no positive slope (106 s was once predicted for 2
    texts after two reindexes of 1,478 and 1,651)."""
    slopes = [(yj - yi) / (xj - xi) for i, (xi, yi) in enumerate(points) for xj, yj in points[i + 1:]
              if abs(xj - xi) >= 0.1 * max(xi, xj) and xj != xi]
    worked = [(x, y) for x, y in points if x > 0]
    if not worked:
        return median_low([y for _, y in points]), 0.0
    slope = median_low(slopes) if slopes else 0.0
    if slope <= 0:
        return 0.0, sum(y for _, y in worked) / sum(x for x, _ in worked)
    return max(0.0, median_low([y - slope * x for x, y in points])), slope


def _embed_units(stage: dict[str, Any], chars_per_text: float | None) -> float:
    """An embed run's texts, counted at the length `chars_per_text` (`_length_factor`)."""
    n = float(stage["items"])
    chars = sum(float(m.get("embedded_chars") or 0) for m in stage["meta"])
    if not chars_per_text or not n or not chars:
        return n
    return n * _length_ratio(chars / n, chars_per_text)


def throughput(instance: dg.DagsterInstance) -> dict[str, Any]:
    """Per stage, the fixed seconds per run and the seconds per item of past runs, fitted over
    each run's step time (a run's time is not proportional to its work: every step costs its
    start whatever it does, the embed step loads the model); what a run costs beside its steps
    (`startup_seconds`: the CLI's start, `run_seconds`: Dagster's own, per run); plus LLM tokens
    per computed prefix."""
    samples = _run_samples(instance)
    out: dict[str, Any] = {"seconds_per_item": {}, "fixed_seconds": {}, "runs": {}}
    embeds = [m for s in samples for m in s["stages"].get("embed", {}).get("meta", [])
              if isinstance(m.get("embedded_chars"), (int, float)) and m.get("embedded")]
    if embeds:  # the characters of what was embedded, where the runs recorded them
        out["chars_per_text"] = sum(m["embedded_chars"] for m in embeds) / sum(m["embedded"] for m in embeds)
    for stage in _STAGE_ASSETS:
        done = [s["stages"][stage] for s in samples if stage in s["stages"]]
        if not any(d["items"] for d in done):
            continue  # never computed anything here: its rate is unknown
        units = [_embed_units(d, out.get("chars_per_text")) if stage == "embed" else d["items"] for d in done]
        fixed, per_item = _fit(list(zip(units, (d["seconds"] for d in done), strict=True)))
        out["runs"][stage] = sum(1 for d in done if d["items"])
        out["seconds_per_item"][stage] = per_item
        out["fixed_seconds"][stage] = fixed
        if idle := [d["seconds"] for d in done if not d["items"]]:
            out.setdefault("idle_seconds", {})[stage] = median_low(idle)
    if samples:
        out["run_seconds"] = median_low([s["other"] for s in samples])
        if started := [s["startup"] for s in samples if s.get("startup") is not None]:
            out["startup_seconds"] = median_low(started)
    prefixes = [m for s in samples for m in s["stages"].get("context", {}).get("meta", []) if m.get("computed")]
    if items := sum(float(m["computed"]) for m in prefixes):
        tokens = {t: sum(float(m.get(t) or 0) for m in prefixes) / items
                  for t in ("input_tokens", "output_tokens", "cache_read_tokens")}
        if tokens["input_tokens"]:
            out["llm_tokens_per_prefix"] = tokens
    return out


def process_seconds() -> float | None:
    """Seconds since this process started (Linux's /proc), or None where that cannot be read."""
    try:
        start_ticks = float(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


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
                     embed_known: int = 0, embed_chars: int = 0, runs: int = 1,
                     parse_seconds: float | None = None) -> dict[str, Any]:
    """Seconds per stage = fixed cost per run (each step's start; embed: the model load) + items
    to compute x seconds per item measured here before; a stage with nothing to compute still
    costs its step's start. The listing counts every run, by the entries it lists; the embed
    stage's items are scaled by the length of the texts to embed against those measured
    (`embed_known` texts of `embed_chars` characters): shorter chunks embed faster, and a
    chunk-size reindex was estimated at 2.5 times what it took. `parse_seconds`, where the plan
    could price its documents by kind from their past parses (`parse_by_format`), replaces the
    parse stage's rate. `startup` is what a CLI run costs beside its steps: the process's start
    once, Dagster's own time per run (`runs`: one per source)."""
    h = history or {}
    rates, fixed = h.get("seconds_per_item", {}), h.get("fixed_seconds", {})
    work = {"listing": listed, **{stage: c["compute"] for stage, c in stages.items()}}
    by_stage: dict[str, float] = {}
    missing = []
    for stage, n in work.items():
        if stage not in rates:
            if n and stage != "listing":  # a listing without history is a small share of any run
                missing.append(stage)
            continue
        if not n:  # the step still starts, and finds nothing to do
            if idle := h.get("idle_seconds", {}).get(stage, fixed.get(stage, 0.0)):
                by_stage[stage] = round(idle, 1)
        elif stage == "parse" and parse_seconds is not None:
            by_stage[stage] = round(fixed.get(stage, 0.0) + parse_seconds, 1)
        else:
            by_stage[stage] = round(fixed.get(stage, 0.0) + n * rates[stage] * _length_factor(
                stage, h, embed_known, embed_chars), 1)
    if "run_seconds" in h or "startup_seconds" in h:
        by_stage["startup"] = round(h.get("startup_seconds", 0.0) + runs * h.get("run_seconds", 0.0), 1)
    note = None
    if missing:
        note = (f"no history for {', '.join(missing)} on this instance: their time is not included "
                "(a first sync measures it)")
    # a partial sum read as the run's time ("about 0 s" for a run whose embed had no history,
    # interrupted before it measured one): unknown, with the measured stages in by_stage
    return {"seconds": None if missing else round(sum(by_stage.values()), 1),
            "by_stage": by_stage, "no_history": missing, "note": note,
            "runs_measured": h.get("runs", {})}


# A text's embedding time is affine in its length: all-MiniLM-L6-v2 on this kind of machine took
# 6.2 / 10.8 / 23.8 ms per text of 192 / 384 / 1,143 characters (batches of 256), about the time
# of 150 more characters per text whatever its length.
TEXT_OVERHEAD_CHARS = 150


def _length_factor(stage: str, history: dict[str, Any], known: int, chars: int) -> float:
    """How much longer (or shorter) the texts to embed take than those the rate was measured on."""
    measured = history.get("chars_per_text")
    if stage != "embed" or not measured or not known or not chars:
        return 1.0
    return _length_ratio(chars / known, float(measured))


def _length_ratio(chars_per_text: float, measured: float) -> float:
    """A text of `chars_per_text` characters' embedding time, in texts of `measured` characters."""
    return (TEXT_OVERHEAD_CHARS + chars_per_text) / (TEXT_OVERHEAD_CHARS + measured)


# OCR with no OCR'd page in this store's history: six scanned papers, 53 pages, took 301 s to
# sync here (README), nearly all of it Tesseract's
OCR_SECONDS_PER_PAGE = 5.7


def parse_seconds(formats: dict[str, int], ocr_pages: int, times: dict[str, dict[str, float]]) -> float | None:
    """Seconds to parse `formats` (format -> documents) and OCR `ocr_pages` pages, priced by this
    store's past parses of each format (`DocumentStore.parse_times`): a PDF costs ten times a
    Markdown page, and a scanned page seconds. None, and the stage's rate is used, while a
    format to parse has no parse in the store."""
    total = 0.0
    for fmt, n in formats.items():
        t = times.get(fmt)
        if not t or not t["docs"]:
            return None
        total += n * t["seconds"] / t["docs"]
    if ocr_pages:
        ocr = [t for t in times.values() if t["ocr_pages"]]
        per_page = (sum(t["ocr_seconds"] for t in ocr) / sum(t["ocr_pages"] for t in ocr)) if ocr \
            else OCR_SECONDS_PER_PAGE
        total += ocr_pages * per_page
    return total


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
