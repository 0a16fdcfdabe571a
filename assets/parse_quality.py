"""The blocking `parse_quality` check: is a source's parsing systematically broken?

A share of failures says something only over enough documents: one random-bytes file among two
new ones is "50 % failed" and means nothing. So the check judges a set of documents against a
statistical floor (`quality.min_batch`, 20 by default):

- the *batch* is every current document of the source whose parse (for the run's parse
  versions) was created after the source's `parse_accepted_at`, i.e. the parses no passing
  check has judged yet (a document with no parse row at all, e.g. unreadable, counts too);
- a batch of at least `min_batch` documents is judged on its own (a parser regression that
  breaks every new PDF is caught even in a large healthy source);
- a smaller batch is judged with the source's whole current population, cached failures
  included;
- a judged set smaller than `min_batch` never fails the check (ERROR), it warns.

A run that writes two generations with different parse versions (a reindex under a new parser
is building beside live) has every document parsed twice; each version is judged on its own
documents and the worse verdict stands, so the floor and the shares count documents, never
document x version (a 12-document source is not a 24-document batch).

The verdict depends on the store's state only, never on what this run happened to compute, so
re-running a failed sync gives the same verdict: `parse_accepted_at` moves only when the check
passes or warns, never when it fails. The mean word share of the batch is also compared with
the rest of the source (drift), under the same floor.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assets.parse_stage import is_navigation, parse_key
from assets.runtime import Generation, Runtime
from connectors.config import ParseQualityThresholds
from connectors.store import DocumentRecord, ParseRecord

__all__ = ["QualityVerdict", "accept", "judge", "judge_versions", "quality_rows", "verdict_for"]

DRIFT_LIMIT = 0.25  # mean word share of a batch this far below the rest of the source: ERROR


@dataclass(frozen=True)
class ParseRow:
    """One (document, parse version) of the source as the check sees it."""

    doc: str  # external id
    failed: bool  # failed, rejected, or no parse at all
    created_at: float | None  # None: no parse row (never judged)
    word_share: float | None = None
    reason: str | None = None
    parse_version: str = ""


@dataclass
class QualityVerdict:
    severity: str  # "ok" | "warn" | "error"
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def quality_rows(rt: Runtime, source: str, gens: list[Generation], *, docs: Iterable[DocumentRecord] | None = None,
                 unstored: Mapping[tuple[str, str], ParseRecord] | None = None) -> list[ParseRow]:
    """Every current document of `source` under every parse version the run targets. `bindery
    plan` judges the run before it happens: `docs` are the documents the listing would leave
    and `unstored` the parses it made in memory, by (document id, parse version)."""
    current = [d for d in (rt.store.documents(source) if docs is None else docs) if d.content_hash]
    made = unstored or {}
    rows: list[ParseRow] = []
    for pver in sorted({g.versions["parse"] for g in gens}):
        keys = {d.external_id: parse_key(d, pver) for d in current}
        ids = {d.external_id: d.doc_id for d in current}
        parses = rt.store.get_parses(keys.values(), blocks=False)  # statuses and metrics: no text
        for ext, key in keys.items():
            p = parses.get(key) or made.get((ids[ext], pver))
            if p is None:
                rows.append(ParseRow(ext, True, None, reason="not parsed", parse_version=pver))
                continue
            ok = p.status == "ok"
            share = (p.metrics or {}).get("word_share") if ok and not is_navigation(p) else None
            rows.append(ParseRow(ext, not ok, p.created_at, share,
                                 None if ok else f"{p.reason}: {p.error}"[:300], parse_version=pver))
    return rows


def _share(rows: list[ParseRow]) -> float:
    return sum(r.failed for r in rows) / len(rows) if rows else 0.0


def _drift(batch: list[ParseRow], rest: list[ParseRow]) -> float | None:
    now = [r.word_share for r in batch if r.word_share is not None]
    before = [r.word_share for r in rest if r.word_share is not None]
    if len(now) < 5 or len(before) < 5:
        return None
    return statistics.mean(before) - statistics.mean(now)


def judge(rows: list[ParseRow], accepted_at: float | None, th: ParseQualityThresholds) -> QualityVerdict:
    """The verdict over `rows` (module docstring). Pure: the same rows give the same verdict."""
    fresh = [r.created_at is None or accepted_at is None or r.created_at > accepted_at for r in rows]
    batch = [r for r, new in zip(rows, fresh, strict=True) if new]
    judged_batch = len(batch) >= th.min_batch
    judged = batch if judged_batch else rows
    share = _share(judged)
    can_fail = len(judged) >= th.min_batch
    meta: dict[str, Any] = {
        "judged": "batch" if judged_batch else "population", "judged_docs": len(judged),
        "failed": sum(r.failed for r in judged), "failure_share": round(share, 4),
        "batch_docs": len(batch), "population_docs": len(rows), "min_batch": th.min_batch,
        "max_failure_share": th.max_failure_share,
        "worst_documents": [{"doc": r.doc, "reason": r.reason} for r in judged if r.failed][:10],
        # the judged failures by class ("encrypted", "needs-ocr"): a re-executed run parses
        # nothing, yet its verdict names the same failures the first one did
        "reasons": dict(Counter((r.reason or "failed").split(":")[0] for r in judged if r.failed))}
    what = f"{share:.0%} of {len(judged)} documents ({meta['judged']}) failed to parse"
    errors: list[str] = []
    warns: list[str] = []
    if share > th.max_failure_share:
        (errors if can_fail else warns).append(
            f"{what} (threshold {th.max_failure_share:.0%})"
            + ("" if can_fail else f"; below the floor of {th.min_batch} documents this only warns"))
    elif share > th.warn_failure_share:
        warns.append(what)
    # the rest by the same test: `r not in batch` compared each row with the whole batch
    # (quadratic: 313 ms at 3,000 documents, ~30 s at 30,000, in both plan and sync)
    rest = [r for r, new in zip(rows, fresh, strict=True) if not new]
    drift = _drift(batch, rest) if judged_batch else None
    if drift is not None:
        meta["word_share_drift"] = round(drift, 4)
        if drift > DRIFT_LIMIT:
            errors.append(f"mean word share of the batch fell {drift:.2f} below the rest of this source")
    if errors:
        return QualityVerdict("error", "; ".join(errors), meta)
    return QualityVerdict("warn" if warns else "ok", "; ".join(warns), meta)


_SEVERITY = {"ok": 0, "warn": 1, "error": 2}


def judge_versions(rows: list[ParseRow], accepted_at: float | None,
                   th: ParseQualityThresholds) -> QualityVerdict:
    """`judge` over each parse version's rows apart; the worst verdict (then the highest
    failure share) stands, named by its version when the run targets more than one."""
    by_version: dict[str, list[ParseRow]] = {}
    for r in rows:
        by_version.setdefault(r.parse_version, []).append(r)
    if len(by_version) < 2:
        return judge(rows, accepted_at, th)
    verdicts = {v: judge(rs, accepted_at, th) for v, rs in sorted(by_version.items())}
    version, worst = max(verdicts.items(), key=lambda kv: (_SEVERITY[kv[1].severity],
                                                           kv[1].metadata["failure_share"]))
    meta = {**worst.metadata, "parse_version": version,
            "parse_versions": {v: q.severity for v, q in verdicts.items()}}
    text = f"parse version {version}: {worst.description}" if worst.description else ""
    return QualityVerdict(worst.severity, text, meta)


def verdict_for(rt: Runtime, source: str, gens: list[Generation]) -> QualityVerdict:
    """Judge `source` now; a verdict that does not fail accepts the batch (`accept`)."""
    th = rt.cfg.source(source).quality
    row = rt.store.get_source(source)
    accepted_at = row.parse_accepted_at if row else None
    now = time.time()
    verdict = judge_versions(quality_rows(rt, source, gens), accepted_at, th)
    if verdict.severity != "error":
        accept(rt, source, now)
    return verdict


def accept(rt: Runtime, source: str, at: float) -> None:
    """Parses created up to `at` have been judged acceptable: later checks leave them out of
    the batch."""
    rt.store.set_parse_accepted(source, at)
