"""`bindery tune`: search a declared space of retrieval settings on the gate's eval set.

The eval set is split (`evals.split`, stratified by category, fixed seed) into a tuning half and a
checking half. Every trial is scored on both, but the best trial is chosen on the tuning half
only (gate metric, then the secondary metric, then the earlier trial), so the checking half
judges the choice without having shaped it. Trial 0 is always the configuration as it is (the
defaults), so "does tuning beat the defaults on the checking half?" is read off one table.

This module runs the trials of **query-time settings** (dotted keys under ``query.``, e.g.
``query.unit_weight``, ``query.same_doc_decay``) on one generation: each is served from that
generation's published indexes with the trial's query configuration, so it costs no parse,
chunk, prefix or embedding; the trial table counts the parse and embedding rows the store gained
(``parsed``/``embedded``) to show it. Query embeddings are computed once per question and re-used
by every trial. Keys that change ingestion (``stages.*``: chunk sizes, unit budget, prefixes)
need one generation per distinct setting: `orchestration.tuning` builds those through the stage
caches and calls `run_tune` on each (`INGESTION`, `split_space`).
"""

from __future__ import annotations

import difflib
import itertools
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa
from pydantic import ValidationError

from connectors.config import BinderyConfig
from connectors.errors import ConfigError
from connectors.indexes.base import Filters
from connectors.store import DocumentRecord, DocumentStore, GenerationRecord
from connectors.store import schema as t
from evals.evalset import EvalCase, load_eval_set, resolve_source_prefixes
from evals.promotion import all_principals, excluding_search, unknown_gold
from evals.runner import run_eval, unknown_gold_warning
from evals.split import EvalSplit, split_cases

__all__ = ["DEFAULT_SPACE", "INGESTION", "Budget", "Trial", "TuneResult", "apply_settings", "check_budget",
           "check_tune_config", "format_trials", "parse_budget", "run_tune", "split_space", "store_rows",
           "trial_settings", "tuning_split"]

# Query-time knobs whose useful ranges are wide enough that the defaults are not obviously best.
DEFAULT_SPACE: dict[str, list[Any]] = {
    "query.sparse_weight": [0.5, 1.0, 1.5],
    "query.unit_weight": [0.0, 0.3, 0.6, 1.0],
    "query.heading_weight": [0.0, 0.3],
    "query.same_doc_decay": [0.5, 0.7, 0.97],
    # two units per document at most: +0.008 recall@10 on the command references, where one long
    # page's sections crowd out the page asked for; -0.015 on PDFs and the flex manual (docs/retrieval.md)
    "query.max_chunks_per_doc": [0, 2],
    # adjacent query words as phrases: 0.5 is the default; short summaries that share their word
    # pairs with sibling pages (the Redis commands) lose above it, manuals gain (docs/retrieval.md)
    "query.proximity_weight": [0.0, 0.5, 0.75],
}
QUERY_TIME = ("query.",)
INGESTION = ("stages.chunk.", "stages.context.", "stages.embed.")  # tuned through one generation each
_SKIP = ("query.auth", "query.poll_seconds", "query.max_body_bytes", "query.k")  # not retrieval quality


_MINUTES = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*m(?:in)?\s*$")


def _skipped(key: str) -> bool:
    """A key of `_SKIP` or below one (not any key that merely starts with its letters)."""
    return any(key == s or key.startswith(f"{s}.") for s in _SKIP)


@dataclass(frozen=True)
class Budget:
    """How much tuning to do: a number of trials, or a wall-clock limit in seconds."""

    trials: int | None = None
    seconds: float | None = None

    def exhausted(self, done: int, elapsed: float) -> bool:
        if self.trials is not None and done >= self.trials:
            return True
        return self.seconds is not None and elapsed >= self.seconds


def parse_budget(value: str | int) -> Budget:
    """``12`` -> 12 trials; ``"10m"`` -> ten minutes of trials (at least one trial always runs)."""
    text = str(value).strip()
    if text.isdigit() and int(text) >= 1:
        return Budget(trials=int(text))
    m = _MINUTES.match(text)
    if m and float(m.group(1)) > 0:
        return Budget(seconds=float(m.group(1)) * 60)
    raise ConfigError(f"tune budget {value!r}: give a number of trials (12) or minutes (10m)")


def split_space(space: Mapping[str, Sequence[Any]]) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """(ingestion keys, query-time keys) of a tune space."""
    ingest = {k: list(v) for k, v in space.items() if k.startswith(INGESTION)}
    return ingest, {k: list(v) for k, v in space.items() if k not in ingest}


def check_budget(value: str | int, where: str) -> None:
    """ConfigError naming `where` (a key or an option) unless `value` is a budget."""
    try:
        parse_budget(value)
    except ConfigError:
        raise ConfigError(f"{where}: {value!r} is not a budget: give a number of trials (12) "
                          "or minutes (10m)") from None


def check_tune_config(cfg: BinderyConfig) -> None:
    """`tune.budget` and every key and value of `tune.space`, checked when a command loads the
    file (not only `bindery tune`: `bindery plan` is how an operator checks a configuration),
    each mistake one ConfigError naming its key."""
    check_budget(cfg.tune.budget, "tune.budget")
    for key, values in cfg.tune.space.items():
        name = f"tune.space.{key}"
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{name}: give a non-empty list of values to try (got {values!r})")
        try:
            _check_key(cfg, key, ingestion=True)
        except ConfigError as e:  # "tune key 'x': why" -> "tune.space.x: why"
            raise ConfigError(f"{name}: {str(e).removeprefix(f'tune key {key!r}').lstrip(': ')}") from None
        for v in values:
            data = cfg.model_dump()
            set_dotted(data, key, v)
            try:
                BinderyConfig.model_validate(data)
            except ValidationError as exc:
                problem = "; ".join(" ".join(str(err["msg"]).split()) for err in exc.errors())
                raise ConfigError(f"{name}: value {v!r} is not valid: {problem}") from None


def _check_key(cfg: BinderyConfig, key: str, *, ingestion: bool = False) -> None:
    allowed = QUERY_TIME + (INGESTION if ingestion else ())
    if not key.startswith(allowed) or _skipped(key):
        raise ConfigError(
            f"tune key {key!r}: tune searches query-time retrieval settings (query.unit_weight, "
            "query.same_doc_decay, ...) and, through one generation each, chunking, prefix and "
            "embedding settings (stages.chunk.*, stages.context.*, stages.embed.*)")
    node: Any = cfg.model_dump()
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            known = [k for k in (node if isinstance(node, dict) else ())
                     if not _skipped(".".join([*parts[:depth], k]))]  # never suggest a refused key
            near = difflib.get_close_matches(part, known, n=1)
            hint = f" (did you mean {'.'.join([*parts[:depth], near[0]])!r}?)" if near else ""
            raise ConfigError(f"tune key {key!r} is not a configuration setting{hint}")
        node = node[part]


def set_dotted(data: dict[str, Any], key: str, value: Any, *, create: bool = False) -> None:
    """Set dotted `key` ("query.unit_weight") in nested mappings `data`; `create` makes the
    mappings on its path that are missing (else they must exist: a configuration's dump)."""
    *path, last = key.split(".")
    node = data
    for part in path:
        node = node.setdefault(part, {}) if create else node[part]
    node[last] = value


def apply_settings(cfg: BinderyConfig, settings: Mapping[str, Any], *, ingestion: bool = False) -> BinderyConfig:
    """A copy of ``cfg`` with each dotted key set (validated like a loaded configuration)."""
    data = cfg.model_dump()
    for key, value in settings.items():
        _check_key(cfg, key, ingestion=ingestion)
        set_dotted(data, key, value)
    try:
        out = BinderyConfig.model_validate(data)
    except ValidationError as exc:  # pydantic's messages name the field and the bad value
        problem = "; ".join(" ".join(str(err["msg"]).split()) for err in exc.errors())
        raise ConfigError(f"tune settings {dict(settings)} are not a valid configuration: {problem}") from None
    out.config_path = cfg.config_path
    return out


def trial_settings(cfg: BinderyConfig, space: Mapping[str, Sequence[Any]], seed: int, *,
                   ingestion: bool = False) -> tuple[list[dict[str, Any]], str | None]:
    """The trials to run, in order: the current values first, then the grid shuffled by ``seed``;
    and a warning naming the combinations left out because they are no valid configuration.

    Each value was checked alone when the file loaded (`check_tune_config`), but a grid
    combines them: ``max_tokens`` [200, 40] with ``overlap_tokens`` [30, 50] holds (40, 50).
    Such a combination is skipped, and said, rather than met after trial generations were built
    and paid for (a tune pass: the whole search then ended with a pydantic message)."""
    for key in space:
        _check_key(cfg, key, ingestion=ingestion)
    # a value listed twice would be a second, identical trial spending the budget
    space = {k: [v for i, v in enumerate(vs) if v not in vs[:i]] for k, vs in space.items()}
    current = _current(cfg, list(space))
    grid = [dict(zip(space, combo, strict=True)) for combo in itertools.product(*space.values())]
    rest: list[dict[str, Any]] = []
    invalid: list[str] = []
    for s in grid:
        if s == current:
            continue
        try:
            apply_settings(cfg, s, ingestion=ingestion)
            rest.append(s)
        except ConfigError as e:
            invalid.append(str(e).removeprefix("tune settings "))
    random.Random(seed).shuffle(rest)
    skipped = (f"{len(invalid)} of {len(grid)} combinations of the space are no valid configuration and were "
               f"skipped, such as {invalid[0]}") if invalid else None
    return [current, *rest], skipped


def _current(cfg: BinderyConfig, keys: Sequence[str]) -> dict[str, Any]:
    data: Any = cfg.model_dump()
    out: dict[str, Any] = {}
    for key in keys:
        node = data
        for part in key.split("."):
            node = node[part]
        out[key] = node
    return out


@dataclass(frozen=True)
class Trial:
    """One scored setting: metrics on both halves, its cost, and what it recomputed."""

    settings: dict[str, Any]
    tune: dict[str, float]
    check: dict[str, float]
    seconds: float
    parsed: int  # parse rows the store gained during the trial (0: every parse re-used)
    embedded: int  # embedding rows the store gained during the trial (0: every embedding re-used)

    def to_json(self) -> dict[str, Any]:
        return {"settings": self.settings, "tune": self.tune, "check": self.check,
                "seconds": round(self.seconds, 3), "parsed": self.parsed, "embedded": self.embedded}


@dataclass(frozen=True)
class TuneResult:
    """All trials, the index of the best (chosen on the tuning half) and the split's sizes."""

    trials: list[Trial]
    best: int
    metric: str
    secondary: str
    split: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what makes the table less telling than it looks

    def to_json(self) -> dict[str, Any]:
        return {"trials": [tr.to_json() for tr in self.trials], "best": self.trials[self.best].to_json(),
                "best_index": self.best, "metric": self.metric, "secondary_metric": self.secondary,
                "split": self.split, "warnings": list(self.warnings)}


class _QueryVectors:
    """Memoises query embeddings across trials (they depend on the query and the embed model only)."""

    def __init__(self, embed_query: Callable[[str], np.ndarray]):
        self._embed = embed_query
        self._seen: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        if text not in self._seen:
            self._seen[text] = self._embed(text)
        return self._seen[text]


def store_rows(store: DocumentStore) -> tuple[int, int]:
    """(parse rows, embedding rows) in the store: what a trial computed is the difference."""
    with store.engine.connect() as c:
        parsed = c.execute(sa.select(sa.func.count()).select_from(t.parses)).scalar_one()
        embedded = c.execute(sa.select(sa.func.count()).select_from(t.embeddings)).scalar_one()
    return int(parsed), int(embedded)


def _best(trials: Sequence[Trial], metric: str, secondary: str) -> int:
    """Highest tuning-half metric, then secondary metric; ties keep the earlier trial (defaults)."""
    return max(range(len(trials)), key=lambda i: (trials[i].tune[metric], trials[i].tune[secondary], -i))


def run_tune(cfg: BinderyConfig, store: DocumentStore, gen: GenerationRecord, *,
             space: Mapping[str, Sequence[Any]] | None = None, budget: Budget | None = None,
             seed: int | None = None, queries: str | None = None) -> TuneResult:
    """Run the trials against generation ``gen`` and choose the best on the tuning half."""
    from query_service.retrieval import GenerationRetriever

    seed = cfg.tune.seed if seed is None else seed
    budget = budget or parse_budget(cfg.tune.budget)
    settings, skipped = trial_settings(cfg, space if space is not None else cfg.tune.space or DEFAULT_SPACE, seed)
    documents = store.documents()
    cases, split = tuning_split(cfg, documents, queries, seed)
    warnings = [w for w in (unknown_gold_warning(unknown_gold(store, gen, cases, documents),
                                                 "in the generation tuned"), _shared_questions(split), skipped) if w]
    filters = Filters(principals=all_principals(documents))
    retriever = GenerationRetriever(cfg, gen, store)
    retriever.served.embedder.embed_query = _QueryVectors(retriever.served.embedder.embed_query)  # type: ignore[method-assign]
    trials: list[Trial] = []
    start = time.perf_counter()
    try:
        for s in settings:
            if trials and budget.exhausted(len(trials), time.perf_counter() - start):
                break
            retriever.cfg = apply_settings(cfg, s)
            trials.append(_trial(s, split, excluding_search(retriever, filters), store, cfg.gate.k))
    finally:
        retriever.close()
    return TuneResult(trials, _best(trials, cfg.gate.metric, cfg.gate.secondary_metric), cfg.gate.metric,
                      cfg.gate.secondary_metric, {"tune": len(split.tune), "check": len(split.check)}, warnings)


def tuning_split(cfg: BinderyConfig, documents: Sequence[DocumentRecord], queries: str | None,
                 seed: int) -> tuple[list[EvalCase], EvalSplit]:
    """The eval set's cases and their tuning/checking split; ConfigError when there is no eval
    set or nothing to check on. Called before any trial generation is built, too: a mistake in the
    file must not cost a reindex first."""
    path = queries or cfg.gate.queries
    if not path:
        raise ConfigError("no eval set: pass --queries FILE or set gate.queries in bindery.yaml")
    cases = resolve_source_prefixes(load_eval_set(path), ((d.source, d.external_id) for d in documents), path)
    split = split_cases(cases, seed=seed)
    if not split.check:
        raise ConfigError(f"{path}: the checking half is empty: a category of one question goes to the tuning "
                          "half, and every category here has one; give some category two or more questions")
    return cases, split


def _shared_questions(split: EvalSplit) -> str | None:
    """A warning when one question (the same text under two ids) is in both halves: the checking
    half then judges on questions the choice was fitted to."""
    tuned = {" ".join(c.query.lower().split()) for c in split.tune}
    shared = sum(1 for c in split.check if " ".join(c.query.lower().split()) in tuned)
    return (f"{shared} {'questions' if shared != 1 else 'question'} of the checking half "
            f"{'are' if shared != 1 else 'is'} also in the tuning half under another id: the "
            "checking half is not independent of the choice (remove the duplicates)") if shared else None


def _trial(settings: dict[str, Any], split: EvalSplit, search: Any, store: DocumentStore, k: int) -> Trial:
    before = store_rows(store)
    t0 = time.perf_counter()
    tune = run_eval(split.tune, search, k=k, excluding=True)
    check = run_eval(split.check, search, k=k, excluding=True)
    after = store_rows(store)
    return Trial(settings, _round(tune.metrics), _round(check.metrics), time.perf_counter() - t0,
                 after[0] - before[0], after[1] - before[1])


def _round(metrics: Mapping[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in metrics.items()}


def format_trials(result: TuneResult) -> str:
    """A fixed-width table: one row per trial, the chosen one marked ``*``."""
    keys = list(result.trials[0].settings)
    m, s = result.metric, result.secondary
    head = ["#", *keys, f"tune {m}", f"tune {s}", f"check {m}", f"check {s}", "parsed", "embedded", "s"]
    rows = [[("*" if i == result.best else "") + str(i), *(str(tr.settings[k]) for k in keys),
             f"{tr.tune[m]:.3f}", f"{tr.tune[s]:.3f}", f"{tr.check[m]:.3f}", f"{tr.check[s]:.3f}",
             str(tr.parsed), str(tr.embedded), f"{tr.seconds:.1f}"] for i, tr in enumerate(result.trials)]
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    lines = ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in [head, *rows]]
    note = (f"split: {result.split.get('tune')} tuning / {result.split.get('check')} checking cases; "
            f"best (*) chosen on the tuning half only")
    return "\n".join([*lines, note])

