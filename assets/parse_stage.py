"""The `parsed_documents` stage: parse every live document whose (content hash, parse version,
format) has no stored parse yet, one document at a time.

A failure is recorded (parse row with status `failed`, and a dead letter with stage, reason and
traceback) and the run goes on. A parse that succeeded but fails the per-document quality
validation is stored with status `rejected` and dead-lettered too: it never reaches an index.
Both are cached: the same bytes are not re-parsed on every sync (another file with the same bytes
gets its own dead letter from the cached failure); `bindery dlq retry` clears them.
"""

from __future__ import annotations

import functools
import time
import traceback
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from assets.includes import include_reader, own_hash
from assets.listing import read_content, spool_path
from assets.parse_watch import Killed, forget, killed_parse, killed_row, time_limit, watched
from assets.parsing import parse_document
from assets.parsing.site_files import site_file_role
from assets.progress import NO_PROGRESS, Progress
from assets.runtime import Generation, Runtime
from connectors.config import ParseConfig, ParseQualityThresholds, SourceConfig
from connectors.documents import ParseResult
from connectors.errors import BinderyError, SourceError, SourceUnavailable, TooLarge
from connectors.sources import Source, make_source
from connectors.store import DocumentRecord, ParseRecord

_FLUSH = 64  # parses per store transaction


@dataclass
class ParseStats:
    attempted: int = 0
    ok: int = 0
    failed: int = 0
    rejected: int = 0
    cached: int = 0
    redirects: int = 0  # redirect pages parsed (kept, never chunked or indexed)
    index_pages: int = 0  # generated indexes parsed (kept, never chunked or indexed)
    site_files: int = 0  # a documentation build's own files (kept, never read, chunked or indexed)
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)
    metrics_rows: list[dict[str, Any]] = field(default_factory=list)  # per parsed doc, for the gate
    worst: list[dict[str, Any]] = field(default_factory=list)
    warned: int = 0  # documents parsed with a warning (read, but not quite as named: a .gz stored plain)
    warnings: list[str] = field(default_factory=list)  # the first WARNINGS_SHOWN, "path: warning"

    @property
    def failure_share(self) -> float:
        return (self.failed + self.rejected) / self.attempted if self.attempted else 0.0


WARNINGS_SHOWN = 5  # per run and source: the sync's summary names these; every parse keeps its own


@functools.lru_cache(maxsize=1 << 16)  # a pure function of the path, asked ~9 times per document per run
def file_format(external_id: str) -> str:
    """The format a path names, for the parse key: its suffix, and a documentation build's own
    file its role besides (`assets.parsing.site_files`), which is never read, so that a page
    holding the same bytes elsewhere is not given its empty parse."""
    suffix = PurePosixPath(external_id).suffix.lower().lstrip(".") or "none"
    role = site_file_role(external_id)
    return f"{suffix}:{role}" if role else suffix


def _meta(parse: ParseRecord | ParseResult | None) -> dict[str, Any]:
    if parse is None:
        return {}
    return (parse.metadata if isinstance(parse, ParseResult) else parse.doc_metadata) or {}


def is_redirect(parse: ParseRecord | ParseResult | None) -> bool:
    """A redirect page (`assets.parsing.html.redirect_target`): it only points at another page."""
    return bool(_meta(parse).get("redirect"))


def is_navigation(parse: ParseRecord | ParseResult | None) -> bool:
    """A page that only leads to others: a redirect, a generated index
    (`assets.parsing.html.is_index_page`), or a documentation build's own file
    (`assets.parsing.site_files`). Parsed and kept, never judged for quality, never chunked,
    so never indexed."""
    meta = _meta(parse)
    return bool(meta.get("redirect") or meta.get("index_page") or meta.get("site_file"))


def stored_metadata(result: ParseResult) -> dict[str, Any]:
    """A parse's `doc_metadata` as the stage stores it (and `bindery plan` pictures it)."""
    return {**result.metadata, "warnings": result.warnings, "parsed_format": result.format}


def max_bytes(scfg: SourceConfig) -> int:
    """The most bytes a document of this source may hold, also once decompressed: a 256 KB
    .gz must not feed 256 MB to a parser when the source allows 100 MB files."""
    return int(scfg.max_file_mb * 1024 * 1024)


def parse_problems(result: ParseResult, th: ParseQualityThresholds) -> list[str]:
    """`validate_parse` for a document, none for a navigation page (a redirect often holds no
    text, an index little but names)."""
    return [] if is_navigation(result) else validate_parse(result.metrics, th)


def validate_parse(metrics: dict[str, Any], th: ParseQualityThresholds) -> list[str]:
    """Per-document quality problems; any problem keeps the document out of the index."""
    problems = []
    if metrics.get("chars", 1) == 0:
        problems.append("no text extracted")
    if (v := metrics.get("alnum_share")) is not None and v < th.min_alnum_share:
        problems.append(f"alphanumeric share {v:.2f} < {th.min_alnum_share}")
    if (v := metrics.get("word_share")) is not None and v < th.min_word_share:
        problems.append(f"word-like token share {v:.2f} < {th.min_word_share}")
    if paginated(metrics) and (v := metrics.get("repeated_line_share")) is not None \
            and v > th.max_repeated_line_share:
        problems.append(f"repeated-line share {v:.2f} > {th.max_repeated_line_share}")
    return problems


def paginated(metrics: dict[str, Any]) -> bool:
    """Whether a document has pages, where lines repeated from page to page are running headers
    and footers its text layer kept. In one without pages repeated lines are its author's (an
    API reference's "Since: 2.4" and one memory-barrier note under each function, a mail's
    histogram rows): measured, never judged (good pages were dead letters)."""
    return bool(metrics.get("pages", 1) > 1)


def parse_key(doc: DocumentRecord, parse_version: str) -> tuple[str, str, str]:
    """The cache key of a document's parse: its bytes, the parse version, the format (a document
    without content has no parse under any key)."""
    return (doc.content_hash or "", parse_version, file_format(doc.external_id))


def pending_parses(rt: Runtime, docs: list[DocumentRecord], parse_version: str, limit: int,
                   ) -> tuple[list[DocumentRecord], dict[tuple[str, str, str], ParseRecord]]:
    """The documents with no stored parse (ok, failed or rejected) for this parse version, or
    one refused as too large under a lower size limit than `limit`, and the stored failures that
    stand, by parse key: what `run_parse` parses and dead-letters, and what `bindery plan`
    predicts it will."""
    return _parse_state(rt, docs, parse_version, limit)


def _parse_state(rt: Runtime, docs: list[DocumentRecord], parse_version: str, limit: int,
                 ) -> tuple[list[DocumentRecord], dict[tuple[str, str, str], ParseRecord]]:
    """(the documents to parse, the stored rows of the cached failures that stand) for one
    parse version: two reads of the store, shared by `run_parse` and `pending_parses`."""
    have = rt.store.parse_statuses([parse_key(d, parse_version) for d in docs])
    failures = _failed_rows(rt, docs, have, parse_version)
    stale = _refused_below(failures, limit)
    todo = _without_parse(docs, have, parse_version, stale)
    return todo, {k: r for k, r in failures.items() if k not in stale}


def _failed_rows(rt: Runtime, docs: list[DocumentRecord], have: dict[tuple[str, str, str], str],
                 parse_version: str) -> dict[tuple[str, str, str], ParseRecord]:
    """The stored rows of the documents whose parse failed or was rejected (one read)."""
    failed = [k for d in docs if have.get(k := parse_key(d, parse_version), "ok") != "ok"]
    return rt.store.get_parses(failed) if failed else {}


def _refused_below(rows: dict[tuple[str, str, str], ParseRecord], limit: int) -> set[tuple[str, str, str]]:
    """Keys of cached too-large failures made under a size limit below `limit`. The limit is the
    source's max_file_mb, which the parse key does not hold: raising it must parse those files
    again. A failure row records its limit in `metrics` (rows from before that count as 0)."""
    return {k for k, r in rows.items()
            if r.reason == "too-large" and int((r.metrics or {}).get("max_bytes") or 0) < limit}


def _without_parse(docs: list[DocumentRecord], have: dict[tuple[str, str, str], Any],
                   parse_version: str, stale: set[tuple[str, str, str]]) -> list[DocumentRecord]:
    return [d for d in docs if (k := parse_key(d, parse_version)) not in have or k in stale]


def run_parse(rt: Runtime, source_name: str, gens: list[Generation], *,
              progress: Progress = NO_PROGRESS) -> ParseStats:
    """Parse the source's documents that have no stored parse under the run's parse versions,
    dead-letter those whose bytes already failed, and resolve the dead letters of documents
    whose bytes now parse (`_ParseRun`)."""
    started = time.perf_counter()
    run = _ParseRun(rt, source_name, progress)
    docs = run.docs
    failed_parse = rt.store.dead_letter_docs(("parse",))
    not_good: set[str] = set()  # documents without a good stored parse under some version of the run
    for pcfg, pver in {g.versions["parse"]: (g.stages.parse, g.versions["parse"]) for g in gens}.values():
        todo, cached_failures = _parse_state(rt, docs, pver, run.limit)
        not_good.update(d.doc_id for d in todo)
        not_good.update(run.dead_letter_cached(cached_failures, pver))
        run.stats.cached += len(docs) - len(todo)
        progress.total(len(todo))
        # files with the same bytes share one parse row: a parse holds nothing of a file's name
        # (`document_title` names a document without a title of its own)
        for d in todo:
            run.parse(d, pcfg, pver)
        run.flush()
    if run.killed is not None:  # a dead run's document no longer pending (edited, deleted): nothing to count
        forget(rt, source_name)
    # a file put back to bytes that parsed well before (under every version the run targets)
    # leaves the table although nothing was parsed again
    if back := [d.doc_id for d in docs if d.doc_id in failed_parse and d.doc_id not in not_good]:
        rt.store.resolve_dead_letters(back, stages=("parse",))
    for d in docs:  # the spool only bridges listing -> parse
        p = spool_path(rt, own_hash(d) or "")
        if p.exists():
            p.unlink(missing_ok=True)
    run.stats.seconds = time.perf_counter() - started
    return run.stats


class _ParseRun:
    """One source's parse step: its documents, the parse rows and dead-letter resolutions it
    writes in batches, and its counts."""

    def __init__(self, rt: Runtime, source_name: str, progress: Progress) -> None:
        self.rt, self.source_name, self.progress = rt, source_name, progress
        self.scfg = rt.cfg.source(source_name)
        self.limit = max_bytes(self.scfg)
        self.stats = ParseStats()
        self.docs = [d for d in rt.store.documents(source_name) if d.content_hash]
        # what an AsciiDoc page may include: any file of the source (a shard's page, another
        # shard's file); read from the store only when a page follows includes
        self.by_path = {d.external_id: d for d in rt.store.documents_of_every_shard(source_name) if d.content_hash} \
            if any(d.metadata.get("followed") for d in self.docs) else {}
        self.source: Source | None = None
        self.dead = rt.store.dead_letter_docs(("parse", "listing"))
        self.pending: list[dict[str, Any]] = []
        self.resolved: list[str] = []
        self.killed = _after_a_dead_run(rt, source_name)

    def flush(self) -> None:
        self.rt.store.put_parses(self.pending)
        self.rt.store.resolve_dead_letters(self.resolved, stages=("parse", "listing"))
        self.progress.advance(len(self.pending))
        self.pending.clear()
        self.resolved.clear()

    def dead_letter_cached(self, cached_failures: dict[tuple[str, str, str], ParseRecord], pver: str) -> set[str]:
        """A copy or a move of a file whose bytes already failed fails all the same (a row `gc`
        removed between the two reads is simply absent): its own dead letter. The documents so
        failing, dead-lettered now or before."""
        failing = set()
        for d in self.docs:
            cached = cached_failures.get(parse_key(d, pver))
            if cached is not None:
                failing.add(d.doc_id)
                if d.doc_id not in self.dead:
                    _dead_letter_cached(self.rt, d, cached)
                    self.dead.add(d.doc_id)
        return failing

    def parse(self, d: DocumentRecord, pcfg: ParseConfig, pver: str) -> None:
        """Parse one document and queue its row: ok, rejected for quality, or failed (cached),
        each failure dead-lettered; a source that cannot be read now caches nothing."""
        key = parse_key(d, pver)
        self.stats.attempted += 1
        t0 = time.perf_counter()
        row: dict[str, Any] = {  # every key present: rows are written in batches
            "content_hash": key[0], "parse_version": pver, "format": key[2], "doc_id": d.doc_id,
            "created_at": time.time(), "status": "failed", "title": None, "blocks": None, "metrics": None,
            "page_metrics": None, "doc_metadata": None, "error": None, "reason": None}
        try:
            self.source = self.source or make_source(self.scfg)
            data = read_content(self.rt, self.source, d)
            include = include_reader(d, self.by_path, functools.partial(read_content, self.rt, self.source))
            deaths = self.killed.deaths if self.killed and self.killed.key == key else 0
            with watched(self.rt, self.source_name, d, key, deaths), time_limit(pcfg.max_parse_seconds, d.external_id):
                result = parse_document(data, d.external_id, pcfg, max_bytes=self.limit, include=include)
            self._judge(d, key, result, row)
        except (BinderyError, Exception) as e:
            if isinstance(e, SourceUnavailable):
                self.flush()  # what was parsed stays; the source's failure ends the stage and the run
                raise
            if isinstance(e, SourceError):
                # the source is unreachable now: nothing is known about the bytes, don't cache
                self._dead_letter(d, key, e.reason, str(e), traceback.format_exc())
                self.stats.failed += 1
                self.progress.advance(1)  # dealt with (dead-lettered), nothing cached
                return
            reason = e.reason if isinstance(e, BinderyError) else f"crash:{type(e).__name__}"
            msg = str(e) or type(e).__name__
            row.update(status="failed", reason=reason, error=msg, blocks=None,
                       metrics={"max_bytes": self.limit} if isinstance(e, TooLarge) else None)
            self.stats.failed += 1
            self.stats.worst.append({"doc": d.external_id, "reason": f"{reason}: {msg}"[:300]})
            self._dead_letter(d, key, reason, msg, traceback.format_exc())
        key_reason = row.get("reason") or "ok"
        self.stats.reasons[key_reason] = self.stats.reasons.get(key_reason, 0) + 1
        row["seconds"] = time.perf_counter() - t0
        self.pending.append(row)
        if len(self.pending) >= _FLUSH:
            self.flush()

    def _judge(self, d: DocumentRecord, key: tuple[str, str, str], result: ParseResult, row: dict[str, Any]) -> None:
        """Fill `row` from a parse that returned: ok, or rejected by the source's quality thresholds."""
        problems = parse_problems(result, self.scfg.quality)
        row.update(title=result.title, blocks=[b.to_dict() for b in result.blocks],
                   metrics=result.metrics, page_metrics=result.page_metrics,
                   doc_metadata=stored_metadata(result))
        judged = paginated(result.metrics)  # repeated lines are judged with pages only
        metrics_row = {"doc": d.external_id, **{k: v for k, v in result.metrics.items()
                                                    if isinstance(v, (int, float))
                                                    and (k != "repeated_line_share" or judged)}}
        if not is_navigation(result):  # its few words say nothing of the parser's quality
            self.stats.metrics_rows.append(metrics_row)
        if problems:
            row.update(status="rejected", reason="low-quality", error="; ".join(problems))
            self.stats.rejected += 1
            self.stats.worst.append({"doc": d.external_id, "reason": row["error"]})
            self._dead_letter(d, key, "low-quality", row["error"])
        else:
            row.update(status="ok")
            self.stats.ok += 1
            if result.warnings:
                self.stats.warned += 1
                if len(self.stats.warnings) < WARNINGS_SHOWN:
                    self.stats.warnings.append(f"{d.external_id}: {'; '.join(result.warnings)}"[:300])
            self.stats.redirects += is_redirect(result)
            self.stats.index_pages += bool(result.metadata.get("index_page"))
            self.stats.site_files += bool(result.metadata.get("site_file"))
            if d.doc_id in self.dead:
                self.resolved.append(d.doc_id)

    def _dead_letter(self, d: DocumentRecord, key: tuple[str, str, str], reason: str, error: str,
                     trace: str | None = None) -> None:
        self.rt.store.add_dead_letter(doc_id=d.doc_id, source=self.source_name, external_id=d.external_id,
                                      stage="parse", reason=reason, error=error, trace=trace, content_hash=key[0])


def _after_a_dead_run(rt: Runtime, source_name: str) -> Killed | None:
    """The document the last run died parsing (`assets.parse_watch`), to parse again counting
    that death; None when there is none, or when it is the death that makes the bytes a stored
    failure (dead-lettered by the run like any cached failure, never parsed again)."""
    killed = killed_parse(rt, source_name)
    if killed is None or not killed.final:
        return killed
    if not rt.store.parse_statuses([killed.key]):  # bytes another run has parsed since keep that parse
        rt.store.put_parses([killed_row(killed)])
    forget(rt, source_name)
    return None


def _dead_letter_cached(rt: Runtime, doc: DocumentRecord, parse: ParseRecord) -> None:
    """A document whose bytes already failed (under another name, or before a move) is not
    parsed again, but it fails all the same: it gets its own dead letter."""
    reason, error = cached_failure(rt, doc, parse)
    rt.store.add_dead_letter(doc_id=doc.doc_id, source=doc.source, external_id=doc.external_id,
                             stage="parse", reason=reason, error=error, content_hash=doc.content_hash)


def cached_failure(rt: Runtime, doc: DocumentRecord, parse: ParseRecord) -> tuple[str, str]:
    """(reason, message) of `doc`'s dead letter when its bytes already failed as another
    document: the stored message names the file first parsed ("blank.txt: the file is empty"),
    so it is told of `doc` instead, with the other file named as where the verdict comes from."""
    error = parse.error or "failed"
    first = rt.store.get_documents([parse.doc_id]).get(parse.doc_id) if parse.doc_id not in (None, doc.doc_id) else None
    if first is not None and first.external_id != doc.external_id:
        # parsers name the file by its path or, most, by its file name
        names = ((first.external_id, doc.external_id), (_file_name(first.external_id), _file_name(doc.external_id)))
        for was, now in names:
            if error.startswith(f"{was}: "):
                error = f"{now}: {error[len(was) + 2:]}"
                break
        return parse.reason or "parse-failed", f"{error} (cached result for identical content: {first.external_id})"
    return parse.reason or "parse-failed", f"{error} (cached result for identical content)"


def _file_name(external_id: str) -> str:
    return external_id.rstrip("/").rsplit("/", 1)[-1]


def good_parse_ids(rt: Runtime, docs: list[DocumentRecord], parse_version: str) -> set[str]:
    """The documents whose current content parsed and passed validation (no blocks read)."""
    keys = {d.doc_id: parse_key(d, parse_version) for d in docs if d.content_hash}
    status = rt.store.parse_statuses(keys.values())
    return {did for did, k in keys.items() if status.get(k) == "ok"}


def good_parses(rt: Runtime, docs: list[DocumentRecord], parse_version: str) -> dict[str, ParseRecord]:
    """doc_id -> parse row, for documents whose current content parsed and passed validation."""
    keys = {d.doc_id: parse_key(d, parse_version) for d in docs if d.content_hash}
    rows = rt.store.get_parses(keys.values())
    return {did: rows[k] for did, k in keys.items() if k in rows and rows[k].status == "ok"}
