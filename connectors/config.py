"""Bindery configuration: one YAML file, validated once, shared by every component.

`load_config(path)` reads `bindery.yaml` (or `$BINDERY_CONFIG`), fills every default and
raises `ConfigError` with the offending key on anything malformed. The stage sections
(`stages.parse`, `stages.chunk`, ...) are what stage versions are hashed from, so they hold
only settings that change a stage's *output*; throughput knobs (batch sizes, concurrency)
are kept out of the hash (connectors.versions).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from connectors.errors import ConfigError, without_secrets

__all__ = [
    "BinderyConfig",
    "ChunkConfig",
    "ContextConfig",
    "EmbedConfig",
    "GateConfig",
    "OrchestrationConfig",
    "ParseConfig",
    "QueryAuthConfig",
    "QueryConfig",
    "SourceConfig",
    "StageConfigs",
    "VectorEngine",
    "check_database_url",
    "check_paths",
    "check_stage_resources",
    "load_config",
]


# The database drivers the store and its migrations are written and tested for.
SUPPORTED_DATABASES = ("sqlite", "postgresql")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Refuse true/false (YAML's yes/no/on/off too) for a number: pydantic reads `k: true`
        as 1 and `max_file_mb: off` as 0, silently."""
        if isinstance(value, bool) and info.field_name is not None:
            kinds = _kinds(cls.model_fields[info.field_name].annotation)
            if bool not in kinds and kinds & {int, float}:
                raise ValueError("expected a number, not true/false")
        return value


def _kinds(annotation: Any) -> set[Any]:
    """The plain types an annotation admits (`int | None` -> {int, NoneType})."""
    args = get_args(annotation)
    return {k for a in args for k in _kinds(a)} if args and get_origin(annotation) is not Literal else {annotation}


# keys whose values are secrets: an error message (terminals, CI logs, `--json`) never echoes them
_SECRET_KEY = re.compile(r"(password|secret|token|api_key|access_key)$", re.IGNORECASE)
# ... but a count of word pieces is no secret (`max_tokens`, or `max_token` misspelt)
_TOKEN_COUNT = re.compile(r"(max|min|overlap|prefix|max_prefix)_tokens?|\w*_tokens", re.IGNORECASE)


def _is_secret(loc: tuple[Any, ...]) -> bool:
    """Whether the value at `loc` may be a secret: a key named like one, or anything under
    `query.auth.api_keys` (a raw key pasted into `hash:` by mistake is a key all the same)."""
    path = [str(p) for p in loc]
    return (bool(path and _SECRET_KEY.search(path[-1]) and not _TOKEN_COUNT.fullmatch(path[-1]))
            or "api_keys" in path)


def check_database_url(url: str) -> None:
    """Raise ValueError unless `url` names a supported backend whose driver is installed."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ValueError(f"not a database URL: {without_secrets(repr(url))} "
                         "(e.g. postgresql+psycopg://user@host/db)") from None
    if parsed.get_backend_name() not in SUPPORTED_DATABASES:
        raise ValueError(f"unsupported database {parsed.get_backend_name()!r} "
                         f"(supported: {', '.join(SUPPORTED_DATABASES)})")
    try:
        parsed.get_dialect().import_dbapi()
    except (NoSuchModuleError, ImportError):
        raise ValueError(f"database driver {parsed.drivername!r} is not available "
                         "(use sqlite:///PATH or postgresql+psycopg://...)") from None


class ParseQualityThresholds(_Strict):
    """Per-source limits for the parse-quality gate."""

    max_failure_share: float = Field(0.3, ge=0, le=1)  # share of failed docs -> ERROR
    # fewer documents than this are judged with the whole source, and never fail the check
    min_batch: int = Field(20, ge=1)
    warn_failure_share: float = Field(0.05, ge=0, le=1)
    # a document's mean extracted characters per page below this fails it (a page counts as empty
    # below quality.metrics.EMPTY_PAGE_CHARS, a fixed constant, not this threshold)
    min_chars_per_page: float = 20.0
    min_alnum_share: float = 0.5
    min_word_share: float = 0.4  # share of tokens that look like dictionary-ish words
    max_repeated_line_share: float = 0.5  # paginated documents only (PDF): their running headers
    # more than this share of empty pages is almost always an unOCRed scan or a broken text layer
    max_empty_page_share: float = Field(0.5, ge=0, le=1)


_S3_ONLY = frozenset({"bucket", "prefix", "endpoint_url", "region", "read_timeout_s", "max_attempts"})
_LOCAL_ONLY = frozenset({"root", "follow_external_symlinks"})


class SourceConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    kind: Literal["local", "s3"] = "local"
    root: str | None = None  # local folder
    # s3 (checked as botocore checks them, so a mistake is a configuration error, not a run's)
    bucket: str | None = None
    prefix: str = ""
    endpoint_url: str | None = None  # s3-compatible endpoint (moto, MinIO)
    region: str | None = None
    # s3: seconds one request may wait for an answer, and tries per request (throttling, 5xx and
    # timeouts are retried with backoff): a hung endpoint holds a sync about their product
    read_timeout_s: float = Field(30.0, gt=0, le=3600, allow_inf_nan=False)
    max_attempts: int = Field(5, ge=1, le=20)
    include: list[str] = Field(default_factory=lambda: ["**/*"])
    exclude: list[str] = Field(default_factory=list)
    # Safe delete sweep: a listing smaller than either bound aborts all deletes.
    min_count: int = Field(1, ge=0)
    min_ratio: float = Field(0.5, ge=0, le=1)
    max_file_mb: float = Field(100.0, gt=0, allow_inf_nan=False)
    # local: follow symlinks whose target lies outside `root` (off: they are skipped, with a
    # dead letter saying so, so a link can never publish files from elsewhere unnoticed)
    follow_external_symlinks: bool = False
    # Principals of items the source gives no ACL (connectors.acl): unset = public, [] = nobody.
    acl: list[str] | None = None
    quality: ParseQualityThresholds = Field(default_factory=ParseQualityThresholds)
    # Split the source's work into this many stable shards (connectors.shards), one partition
    # each, so a backfill fans out over that many runs; 1 = one partition named after the source.
    shards: int = Field(1, ge=1, le=1024)

    @field_validator("root")
    @classmethod
    def _expand(cls, v: str | None) -> str | None:
        return os.path.expanduser(v) if v else v

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        if v is not None:
            parts = urllib.parse.urlsplit(v)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("must be an http:// or https:// URL with a host, like http://minio:9000")
        return v

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-zA-Z0-9.\-_]{1,255}", v):
            raise ValueError("a bucket name is letters, digits, '.', '-' and '_' (no prefix: that is `prefix`)")
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?", v):
            raise ValueError("a region name is letters, digits and '-', like eu-west-1")
        return v

    @field_validator("include", "exclude")
    @classmethod
    def _globs(cls, v: list[str]) -> list[str]:
        from connectors.sources.globs import check_patterns  # gitignore rules, via pathspec

        return check_patterns(v)

    @model_validator(mode="after")
    def _one_kind(self) -> SourceConfig:
        """A setting of the other kind is a mistake, never ignored: a `root` left under `kind: s3`
        (or a bucket under a source that forgot `kind: s3`) synced another place than meant."""
        other = _S3_ONLY if self.kind == "local" else _LOCAL_ONLY
        # set to something else than its default (a dumped and re-read configuration sets all)
        wrong = sorted(k for k in other if getattr(self, k) != type(self).model_fields[k].default)
        if wrong:
            kind = "s3" if self.kind == "local" else "local"
            raise ValueError(f"{', '.join(wrong)}: {'a setting' if len(wrong) == 1 else 'settings'} of kind "
                             f"{kind} sources, and this source is kind {self.kind} (set `kind: {kind}`, or remove it)")
        return self

    def check_complete(self) -> None:
        if self.kind == "local" and not self.root:
            raise ConfigError(f"source {self.name!r}: kind local needs 'root'")
        if self.kind == "s3" and not self.bucket:
            raise ConfigError(f"source {self.name!r}: kind s3 needs 'bucket'")


class ParseConfig(_Strict):
    ocr: bool = True  # OCR image-only pages when tesseract is installed
    ocr_dpi: int = Field(300, ge=50, le=1200)  # tesseract reads badly below ~70 dpi
    ocr_language: str = "eng"
    # A PDF with more pages to OCR than this is a `needs-ocr` dead letter naming the count, not a
    # run held for hours: 2,000 pages sharing one small image (a 755 KB file) took ~1.5 s of OCR
    # each. A limit, not an output setting: it stays out of the parse version, so raising it
    # re-parses nothing but what `bindery dlq retry` asks for.
    max_ocr_pages: int = Field(1000, ge=1)
    strip_headers_footers: bool = True
    language: str = "en"  # read by no parser today; kept out of the parse version (connectors.versions)


class ChunkConfig(_Strict):
    # Sized in the embedder's own word pieces: all-MiniLM-L6-v2 reads 256 and drops the rest,
    # and the contextual prefix shares that budget.
    max_tokens: int = Field(200, ge=16, le=8192)
    overlap_tokens: int = Field(30, ge=0)
    min_tokens: int = Field(24, ge=0)  # merge smaller sibling sections up to max_tokens
    # None follows `embed.model` (resolved by StageConfigs): chunks are sized in the word pieces
    # of the model that embeds them. Set it only to size chunks for another model.
    tokenizer: str | None = None
    # A document whose whole text fits max_tokens stays ONE chunk (one e-mail, one FAQ entry,
    # one command page) instead of one chunk per heading section.
    keep_short_docs_whole: bool = True
    # Side text (quoted history, signatures, list footers: blocks the parsers mark) stays in the
    # parse for display but is left out of the chunks, hence out of embeddings and BM25.
    index_side_text: bool = False
    # Small-to-big: chunks are grouped into units (the whole document, a section, or a run of
    # one section's chunks) of at most this many word pieces; a query ranks units by their best
    # chunk and returns the unit's text. 0 = every chunk is its own unit (docs/retrieval.md).
    parent_max_tokens: int = Field(800, ge=0, le=100_000)

    @model_validator(mode="after")
    def _within_max(self) -> ChunkConfig:
        # a piece that repeats all of its predecessor never advances through the text
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be smaller than "
                             f"max_tokens ({self.max_tokens})")
        return self


class ContextConfig(_Strict):
    provider: Literal["offline", "anthropic", "none"] = "offline"
    max_prefix_tokens: int = Field(48, ge=0)
    model: str = "claude-haiku-4-5"
    base_url: str | None = None  # an Anthropic-compatible endpoint; default is the SDK's
    concurrency: int = Field(4, ge=1, le=64)
    max_tokens: int = Field(120, ge=1)


EmbedBackend = Literal["auto", "torch", "openvino"]
EmbedPrecision = Literal["auto", "fp32", "bf16", "int8"]


class EmbedConfig(_Strict):
    """The embedder. `backend` and `precision` change the vectors slightly, so they are part of
    `embedder_id`; `auto` is resolved on the machine that builds a generation (see
    connectors.embedder.resolve_embed) and the generation records the resolved values."""

    model: str = "all-MiniLM-L6-v2"
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    backend: EmbedBackend = "auto"
    precision: EmbedPrecision = "auto"  # int8 is never chosen by auto: opt-in behind the gate
    # Texts are sorted by length before batching, so small batches pad little: 16 embedded
    # 6-13 % faster than 64 on three corpora, on both backends (docs/engines.md). Vectors and
    # ids do not depend on it.
    batch_size: int = Field(16, ge=1)
    device: str = "cpu"

    @classmethod
    def recorded(cls, raw: dict[str, Any]) -> EmbedConfig:
        """The embed config a generation recorded. Generations built before backends existed
        recorded neither key and were embedded by sentence-transformers on torch fp32."""
        return cls.model_validate({"backend": "torch", "precision": "fp32", **raw})


class StageConfigs(_Strict):
    parse: ParseConfig = Field(default_factory=ParseConfig)
    chunk: ChunkConfig = Field(default_factory=ChunkConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    embed: EmbedConfig = Field(default_factory=EmbedConfig)

    @model_validator(mode="after")
    def _tokenizer_follows_model(self) -> StageConfigs:
        if self.chunk.tokenizer is None:
            self.chunk = self.chunk.model_copy(update={"tokenizer": self.embed.model})
        return self

    @classmethod
    def recorded(cls, raw: dict[str, Any]) -> StageConfigs:
        """Stage configs as a generation recorded them (see EmbedConfig.recorded)."""
        return cls.model_validate({**raw, "embed": EmbedConfig.recorded(raw.get("embed") or {})})


class GateConfig(_Strict):
    queries: str | None = None
    metric: str = "recall@10"
    secondary_metric: str = "mrr@10"
    tolerance: float = Field(0.01, ge=0, lt=1)  # metrics are shares: 1 or more never refuses
    max_regressions: int = Field(2, ge=0)
    k: int = Field(50, ge=1)


class ApiKeyConfig(_Strict):
    """One API key of the query service, stored hashed (`bindery hash-key` prints the hash)."""

    name: str = ""  # a label for operators and logs, never a secret
    hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    principals: list[str] = Field(default_factory=list)  # [] = public documents only


class JwtConfig(_Strict):
    """JWT bearer tokens: HS256 with a secret read from the environment variable named here
    (never the YAML), and/or RS256 with the public keys of a JWKS file."""

    hs256_secret_env: str | None = None
    jwks_file: str | None = None
    principals_claim: str = "groups"  # a dotted path; the value is a list or a comma/space-separated string
    include_subject: bool = False  # add the `sub` claim as a principal too
    # put before the `sub` principal (e.g. "user:") so that a subject can never be read as a group
    # of the same name; with "", where an IdP lets users choose their subject, a user named after
    # a group reads that group's documents
    subject_prefix: str = ""
    audience: str | None = None
    issuer: str | None = None
    leeway_seconds: float = Field(30.0, ge=0)

    @model_validator(mode="after")
    def _prefix_needs_subject(self) -> JwtConfig:
        if self.subject_prefix and not self.include_subject:
            raise ValueError("subject_prefix is set but include_subject is false: the subject is not a principal, "
                             "so the prefix would do nothing (set include_subject: true, or drop subject_prefix)")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.hs256_secret_env or self.jwks_file)


class QueryAuthConfig(_Strict):
    """Who is asking. `credentials` (default): the principals come from a verified API key or
    JWT, and a request without one is refused (401). `trusted-principal`: the `principal` field
    of the request body is believed — only behind a gateway that authenticates and sets it."""

    mode: Literal["credentials", "trusted-principal"] = "credentials"
    api_keys: list[ApiKeyConfig] = Field(default_factory=list)
    jwt: JwtConfig = Field(default_factory=JwtConfig)
    # principals allowed into the web console's operator views (generations, gate reports, dead
    # letters name documents of every source); empty = nobody
    operators: list[str] = Field(default_factory=list)


MAX_NEIGHBOURS = 5  # chunks per side a hit may carry: past a few, a reader follows the document itself


class QueryConfig(_Strict):
    # every weight, decay and floor a finite number: an infinite weight makes every score inf or nan
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    k: int = Field(10, ge=1, le=200)
    candidates: int = Field(50, ge=1, le=1000)  # over-retrieval per retriever
    rrf_k: int = Field(60, ge=1)
    score_floor: float = Field(0.0, ge=0)  # fused score below which hits are dropped; 0 (default) keeps all
    # Each further unit of a document already ranked has its fused score multiplied by this (a
    # negative one divided): a diversity prior (1.0 disables) so one long page's sections cannot
    # fill the top-k. 0.7 over 0.97: recall@10 up one question on redis, man pages and quoted
    # e-mail, down on no dev set; 0.5-0.7 measure alike (docs/retrieval.md)
    same_doc_decay: float = Field(0.7, gt=0, le=1)
    # How the retrievers' unit lists are combined (query_service/fusion.py): `zscore` sums each
    # retriever's standardised scores times its weight; `rrf` sums weight / (rrf_k + rank).
    fusion: Literal["zscore", "rrf"] = "zscore"
    dense_weight: float = Field(1.0, ge=0)
    sparse_weight: float = Field(1.0, ge=0)
    unit_weight: float = Field(0.6, ge=0)  # BM25 over whole units (0 skips that search)
    heading_weight: float = Field(0.0, ge=0)  # BM25 over heading paths, added to the chunk-level BM25
    plain_weight: float = Field(1.0, ge=0)  # BM25 over the unstemmed words, added at both levels
    # Proximity (sequential dependence): each adjacent pair of the query's non-stopword words as a
    # phrase with `proximity_slop`, its BM25 times this weight added at both levels (0 = off).
    # 0.5 with slop 1: MRR@10 up on 9 of 10 dev sets, chosen the same on 9 of 10 leave-one-set-out
    # (docs/retrieval.md)
    proximity_weight: float = Field(0.5, ge=0)
    proximity_slop: int = Field(1, ge=0, le=50)
    # E-mail: a message's parent and replies gain this share of its lead (0 = off; see ranking.py)
    thread_weight: float = Field(0.5, ge=0)
    # ... and the other messages of its thread (same root Message-ID) this share (0 = off)
    thread_mates_weight: float = Field(0.35, ge=0)
    # A pasted reply's attribution line ("On <date>, X wrote:") names the message it answers:
    # that writer's message of that date gains this share of the fused list's spread times the
    # evidence (query_service/attribution.py; 0 = off)
    attribution_weight: float = Field(2.0, ge=0)
    # At most this many units of one document in the returned top-k (0 = no limit). The
    # document's rank is that of its best unit; its further units are dropped. Off by default:
    # on long documents (FAQ pages, PDFs) the answer is a section, and 1 per document cut Python
    # FAQ recall@10 from 1.000 to 0.820 (docs/retrieval.md); short documents are one unit anyway.
    max_chunks_per_doc: int = Field(0, ge=0)
    # A query that is a pasted message loses its quote markers, attribution lines, signature and
    # list footer before retrieval (the same rules the e-mail parser uses to mark side text); the
    # quoted words stay, first: they are the answered message's own text (docs/retrieval.md).
    strip_message_noise: bool = True
    # Neighbour expansion: with each hit, the texts of this many chunks just before and just
    # after its unit (0 = off; at most 5, query_service/neighbours.py). A request may set its own.
    neighbours: int = Field(0, ge=0, le=MAX_NEIGHBOURS)
    poll_seconds: float = Field(0.5, gt=0)
    auth: QueryAuthConfig = Field(default_factory=QueryAuthConfig)
    max_body_bytes: int = Field(65536, ge=1024)  # larger request bodies are refused (413) unread
    # request headers (a JWT, cookies) larger than this are refused before the app sees them
    max_header_bytes: int = Field(32768, ge=4096)
    # Host header values `bindery serve` answers (DNS rebinding: a web page in the operator's
    # browser must not reach a service bound to loopback under its own name). None: only
    # localhost names when bound to a loopback address, any host otherwise (put a proxy in front)
    allowed_hosts: list[str] | None = None

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_without_ports(cls, hosts: list[str] | None) -> list[str] | None:
        for h in hosts or []:
            if not h or "]:" in h or (":" in h and not h.startswith("[")):
                raise ValueError(f"allowed_hosts entry {h!r}: a host name without a port (the Host "
                                 "header's port is not compared); an IPv6 address in brackets, [::1]")
            if h != "*" and ("*" in h[2:] or (h.startswith("*") and not h.startswith("*.")) or " " in h):
                raise ValueError(f"allowed_hosts entry {h!r}: a host name, '*.' and a domain, or '*'")
        return hosts

    @model_validator(mode="after")
    def _k_within_candidates(self) -> QueryConfig:
        if self.k > self.candidates:
            raise ValueError(f"k ({self.k}) must not exceed candidates ({self.candidates}): "
                             "fusion cannot return more hits than each retriever fetched")
        return self


VectorEngine = Literal["qdrant-edge", "qdrant-local", "qdrant-server"]


class BackendsConfig(_Strict):
    database_url: str | None = None  # default: sqlite file under data_dir
    # qdrant-edge: embedded Qdrant engine (HNSW + payload indexes), the default. qdrant-local:
    # qdrant-client's local mode (full scans), kept selectable for one release. A generation
    # records the engine that built it and is always read with that engine.
    vector: VectorEngine = "qdrant-edge"
    qdrant_url: str | None = None
    keyword: Literal["tantivy", "elasticsearch"] = "tantivy"
    elasticsearch_url: str | None = None
    # Server backends (qdrant-server, elasticsearch). API keys come from the environment only:
    # $QDRANT_API_KEY and $ELASTICSEARCH_API_KEY. Readers may query through `live_alias`, which
    # is moved in the same step as the binding row (the row stays the truth).
    live_alias: str = Field("bindery_live", pattern=r"^[a-z0-9][a-z0-9_.-]{0,99}$")
    qdrant_on_disk: bool = False  # keep vectors (and payloads) on disk, memory-mapped
    qdrant_quantization: dict[str, Any] | None = None  # Qdrant's quantization_config, passed through
    elasticsearch_replicas: int | None = Field(None, ge=0)  # default: the cluster's

    @field_validator("qdrant_quantization")
    @classmethod
    def _quantization(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        """Validated by qdrant-client's own model, so a typo fails at load, not mid-sync."""
        if v is not None:
            from pydantic import TypeAdapter
            from qdrant_client import models

            TypeAdapter(models.QuantizationConfig).validate_python(v)
        return v

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, v: str | None) -> str | None:
        if v is not None:
            check_database_url(v)
        return v

    @model_validator(mode="after")
    def _servers_named(self) -> BackendsConfig:
        if self.vector == "qdrant-server" and not self.qdrant_url:
            raise ValueError("vector: qdrant-server needs qdrant_url")
        if self.keyword == "elasticsearch" and not self.elasticsearch_url:
            raise ValueError("keyword: elasticsearch needs elasticsearch_url")
        return self


class OrchestrationConfig(_Strict):
    """The Dagster instance the CLI, the UI, the daemon and every run worker share.

    `storage: auto` puts run, event-log and schedule storage in PostgreSQL whenever the document
    store is on PostgreSQL (same database, schema `postgres_schema`, so Dagster's tables and its
    `alembic_version` never meet Bindery's), else in SQLite under `data_dir/dagster_home`.
    The queue limits and the run launcher are written into the generated `dagster.yaml`; the
    daemon reads them when it starts.
    """

    storage: Literal["auto", "sqlite", "postgres"] = "auto"
    postgres_url: str | None = None  # default: backends.database_url
    postgres_schema: str = Field("dagster", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    max_concurrent_runs: int = Field(4, ge=-1)  # -1: no limit
    runs_per_source: int = Field(1, ge=1)  # queued runs of one source partition at a time
    run_launcher: Literal["default", "docker", "k8s", "celery-k8s"] = "default"
    run_launcher_config: dict[str, Any] = Field(default_factory=dict)  # the launcher's own config
    workspace: str | None = None  # workspace.yaml `--submit` loads; default: the repository's


class RetentionConfig(_Strict):
    keep_generations: int = Field(3, ge=2)  # live + previous always kept
    rollback_window_hours: float = Field(168.0, ge=0)


class AutomationConfig(_Strict):
    """Dagster sensors and schedules; off by default so nothing runs until an operator asks."""

    sensor: bool = False  # watch sources and sync those that changed
    sensor_interval_seconds: int = Field(30, ge=5)
    reconcile: bool = False  # periodic full reconciliation of every source
    reconcile_cron: str = "0 3 * * *"


class PricesConfig(_Strict):
    """What the Anthropic contextualiser's tokens cost, in US dollars per million tokens, for
    `bindery plan`'s estimate (defaults: Claude Haiku 4.5 list prices). Never part of a stage version."""

    input_per_mtok: float = Field(1.0, ge=0, allow_inf_nan=False)
    output_per_mtok: float = Field(5.0, ge=0, allow_inf_nan=False)
    cache_write_per_mtok: float = Field(1.25, ge=0, allow_inf_nan=False)
    cache_read_per_mtok: float = Field(0.10, ge=0, allow_inf_nan=False)


class TuneConfig(_Strict):
    """`bindery tune`: the settings space (dotted key -> values to try; empty = the default
    space in `evals.tune`), the budget (trials, or minutes as "10m") and the split's seed."""

    space: dict[str, list[Any]] = Field(default_factory=dict)
    budget: str | int = 24
    seed: int = 8


class BinderyConfig(_Strict):
    data_dir: str = ".bindery"
    sources: list[SourceConfig] = Field(default_factory=list)
    stages: StageConfigs = Field(default_factory=StageConfigs)
    gate: GateConfig = Field(default_factory=GateConfig)
    query: QueryConfig = Field(default_factory=QueryConfig)
    backends: BackendsConfig = Field(default_factory=BackendsConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    automation: AutomationConfig = Field(default_factory=AutomationConfig)
    orchestration: OrchestrationConfig = Field(default_factory=OrchestrationConfig)
    config_path: str | None = None  # where it was loaded from; relative paths resolve there
    prices: PricesConfig = Field(default_factory=PricesConfig)
    tune: TuneConfig = Field(default_factory=TuneConfig)
    # sha256 of the file's bytes as they were loaded: what a run started elsewhere compares
    # (assets.pipeline.same_configuration), not the file as it is by then
    _loaded_digest: str | None = PrivateAttr(default=None)
    # the file as named (not resolved): what a follower watches. Kubernetes mounts a ConfigMap as
    # a symlink into a timestamped folder it replaces on every update, so the resolved path
    # vanished with the first edit and the query service never reloaded again
    _given_path: str | None = PrivateAttr(default=None)

    @property
    def watched_path(self) -> str | None:
        """The configuration file to watch for edits (`query_service.retrieval.LiveRetriever`)."""
        return self._given_path or self.config_path

    @property
    def loaded_digest(self) -> str | None:
        return self._loaded_digest

    @field_validator("data_dir")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():  # "" resolved to the configuration's own folder, silently
            raise ValueError("empty (an unset variable?); name a folder, or leave the key out for .bindery")
        return v

    @model_validator(mode="after")
    def _dagster_on_postgres(self) -> BinderyConfig:
        """`orchestration.storage: postgres` with no PostgreSQL to put it in: refused when the file
        loads (plan included), not when a run first opens the Dagster instance."""
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        url = self.orchestration.postgres_url or self.backends.database_url
        try:
            backend = make_url(url).get_backend_name() if url else None
        except ArgumentError:
            raise ValueError(f"orchestration.postgres_url: not a database URL ({without_secrets(repr(url))})") from None
        if self.orchestration.storage == "postgres" and backend != "postgresql":
            raise ValueError("orchestration.storage: postgres needs orchestration.postgres_url or a PostgreSQL "
                             "backends.database_url")
        return self

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def database_url(self) -> str:
        return self.backends.database_url or f"sqlite:///{self.data_path / 'bindery.db'}"

    def source_names(self) -> tuple[str, ...]:
        """The configured sources' names (a listing withholds the documents of any other)."""
        return tuple(s.name for s in self.sources)

    def source(self, name: str) -> SourceConfig:
        for s in self.sources:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sources) or "none"
        raise ConfigError(f"unknown source {name!r} (configured: {known})")


def _resolve(base: Path, value: str | None) -> str | None:
    if not value or "://" in value:
        return value
    p = Path(os.path.expanduser(value))
    return str(p if p.is_absolute() else (base / p).resolve())


def _problem(err: Any) -> str:
    """One pydantic error as `dotted.key: what is wrong (got VALUE)`, on one line."""
    loc = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    shown = "***" if _is_secret(err["loc"]) else without_secrets(repr(value))
    got = f" (got {shown})" if isinstance(value, (int, float, str, bool)) and err["type"] != "missing" else ""
    if err["type"] == "extra_forbidden" and (near := _near_key(err["loc"])):
        got += f"; did you mean {near!r}?"  # `exlude` named no alternative (a new-user pass)
    # a rule across sections (checked on the whole file) names its keys itself
    return " ".join((f"{loc}: {msg}{got}" if loc else f"{msg}{got}").split())


def _near_key(loc: tuple[Any, ...]) -> str | None:
    """The key of the same section closest to an unknown one (`exlude` -> `exclude`), if any."""
    import difflib

    model: type[BaseModel] | None = BinderyConfig
    for part in loc[:-1]:
        if isinstance(part, int):  # an item of a list: the list's own model
            continue
        field = model.model_fields.get(str(part)) if model is not None else None
        model = _model_in(field.annotation) if field is not None else None
        if model is None:
            return None
    near = difflib.get_close_matches(str(loc[-1]), list(model.model_fields) if model else [], n=1, cutoff=0.75)
    return near[0] if near else None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The configuration model an annotation holds (itself, or inside Optional/list/dict)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def _nul_key(value: Any, key: str = "") -> str | None:
    """The dotted key of the first string holding a NUL character, or None. No path, name or
    pattern may hold one (the OS refuses it: a NUL in `root` or `data_dir` was an internal
    error at run time, and `status` even exited 0)."""
    if isinstance(value, str):
        return key if "\x00" in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        sub = f"{key}.{k}" if key else str(k)  # sources.0.root, as validation errors name it
        if (found := _nul_key(v, sub)) is not None:
            return found
    return None


def config_from_dict(raw: dict[str, Any], base_dir: Path | None = None) -> BinderyConfig:
    """Validate a config mapping; relative paths resolve against `base_dir`."""
    if (bad := _nul_key(raw)) is not None:
        raise ConfigError(f"invalid configuration: {bad}: holds a NUL character (\\0), which no path or name may hold")
    try:
        cfg = BinderyConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"invalid configuration: {'; '.join(_problem(err) for err in e.errors())}") from None
    base = base_dir or Path.cwd()
    cfg.data_dir = _resolve(base, cfg.data_dir) or cfg.data_dir
    cfg.gate.queries = _resolve(base, cfg.gate.queries)
    cfg.orchestration.workspace = _resolve(base, cfg.orchestration.workspace)
    cfg.query.auth.jwt.jwks_file = _resolve(base, cfg.query.auth.jwt.jwks_file)
    names = [s.name for s in cfg.sources]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        where = " and ".join(f"sources.{i}.name" for i, n in enumerate(names) if n == twice)
        raise ConfigError(f"invalid configuration: {where}: the source name {twice!r} is used more than once")
    for s in cfg.sources:
        s.root = _resolve(base, s.root)
        s.check_complete()
    _check_nested_sources(cfg.sources)
    return cfg


def _location(s: SourceConfig) -> tuple[str, str]:
    """Where a source lists: (the store it reads, its folder as a POSIX path ending in '/')."""
    if s.kind == "local":
        return "local", os.path.realpath(s.root or ".").rstrip("/") + "/"
    # by bucket, whatever endpoint_url says: one service has many spellings (a trailing '/',
    # localhost, a cluster DNS name, an IP, AWS's default and regional URLs), and keyed by the
    # URL a nested source with a narrower acl passed the check and stayed readable through the
    # wider one (an S3 operator pass's find). Two services with a bucket of one name, nested,
    # are refused too: the safe side of a guess
    prefix = s.prefix.strip("/")
    return f"s3:{s.bucket}", "/" + prefix + ("/" if prefix else "")


def _check_nested_sources(sources: list[SourceConfig]) -> None:
    """Refuse a source nested in another whose `acl` lets in more, unless the outer one excludes it.

    Each source indexes its files with its own default ACL (the files no `.bindery-acl` or
    object metadata names). A folder configured as its own source with a narrow `acl`, but also
    inside a wider source, would be indexed twice and readable through the wider one: the
    narrow ACL would protect nothing. The outer source must exclude the folder (the message says
    how). Nested sources with the same `acl` are fine (the run does their shared work once), and
    so is a wider inner one (a public subfolder of a staff-only tree: what the operator asked).
    """
    from connectors.sources.globs import PathFilter

    for outer in sources:
        store, folder = _location(outer)
        lists = PathFilter(["**/*"], outer.exclude)
        for inner in sources:
            inner_store, inner_folder = _location(inner)
            if inner is outer or inner_store != store or not inner_folder.startswith(folder):
                continue
            if not _grants_more(outer.acl, inner.acl):
                continue
            rel = inner_folder[len(folder):].rstrip("/")
            if rel and not lists(f"{rel}/any-file"):
                continue  # the outer source never lists the inner folder's files
            if not rel and (inner.include, inner.exclude) != (outer.include, outer.exclude):
                continue  # one folder split by include/exclude: what each takes is theirs to decide
            what = (f"source {inner.name!r} (acl: {_acl_words(inner.acl)}) lies inside source {outer.name!r} "
                    f"(acl: {_acl_words(outer.acl)}), which lists its folder {rel!r} too")
            fix = f"add '{rel}/' to the exclude of source {outer.name!r}"
            if not rel:
                what = (f"sources {inner.name!r} (acl: {_acl_words(inner.acl)}) and {outer.name!r} "
                        f"(acl: {_acl_words(outer.acl)}) list the same files")
                fix = "give them the same acl or different include/exclude"
            raise ConfigError(f"invalid configuration: {what}, so the files of {inner.name!r} would also be readable "
                              f"through source {outer.name!r}; {fix}")


def narrower_within(source: SourceConfig, sources: Sequence[SourceConfig]) -> list[tuple[str, str, SourceConfig]]:
    """The sources of the same store over `source`'s files (a root or prefix at, inside or
    above its own) whose `acl` lets in fewer: the files they take are listed by them alone
    (`PathFilter`'s `ceded`), whatever globs hide the overlap. Each comes with how a path of
    `source` becomes one of theirs: a prefix to strip (rooted deeper) and one to put before it
    (rooted above, reaching in by their include). One exception, as documented: a source rooted
    strictly inside a plain tree (one whose include is the default: everything) is a wider folder
    the operator carved out of it on purpose (a public folder in a staff-only tree), and cedes
    nothing to the tree around it. Two sources over one folder, each letting in someone the
    other does not, both cede: a file both take is listed by neither (closed rather than open)."""
    store, root = _location(source)
    out: list[tuple[str, str, SourceConfig]] = []
    for other in sources:
        where, theirs = _location(other)
        if other.name == source.name or where != store or not _grants_more(source.acl, other.acl):
            continue
        if theirs.startswith(root):
            out.append((theirs[len(root):], "", other))
        elif root.startswith(theirs) and not _takes_everything(other.include):
            out.append(("", root[len(theirs):], other))
    return out


def _takes_everything(include: list[str]) -> bool:
    """Whether an include list is the default's (every file), not a choice of some."""
    return not include or any(p.strip() in ("**/*", "**", "*", "/**", "/**/*") for p in include)


def _grants_more(outer: list[str] | None, inner: list[str] | None) -> bool:
    """Whether a source ACL lets in someone another does not (None or `*` = public, [] = nobody),
    the principals compared as the listing applies them (stripped): `["*"]` against public, or
    `"group:hr "` against `"group:hr"`, made each source cede to the other and lost the files."""
    from connectors.acl import PUBLIC, normalise

    def who(acl: list[str] | None) -> set[str] | None:
        principals = None if acl is None else set(normalise(acl))
        return None if principals is None or PUBLIC in principals else principals

    o, i = who(outer), who(inner)
    if o is None:
        return i is not None
    return i is not None and bool(o - i)


def _acl_words(acl: list[str] | None) -> str:
    return "public" if acl is None else ", ".join(acl) or "nobody"


def check_stage_resources(cfg: BinderyConfig) -> None:
    """What a run's stages need from this machine, checked before a run starts, each a one-line
    ConfigError naming its key: the chunker's tokenizer (the embedding model's unless
    `stages.chunk.tokenizer` names another) found offline, and the Anthropic API key when the
    contextualiser calls Anthropic. Without this a misspelt model passed the plan, then every
    document became a dead letter (`tokenizer ... not found`) and the sync exited 1."""
    from connectors.tokenizer import find_tokenizer

    name = cfg.stages.chunk.tokenizer or cfg.stages.embed.model
    try:
        find_tokenizer(name)
    except ConfigError as e:
        key = "stages.embed.model" if name == cfg.stages.embed.model else "stages.chunk.tokenizer"
        raise ConfigError(f"{key}: {e}") from None
    if cfg.stages.context.provider == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise ConfigError("stages.context.provider: 'anthropic' needs the environment variable ANTHROPIC_API_KEY, "
                          "which is not set")


def _read_text(p: Path) -> str:
    """The configuration file's text, or a one-line ConfigError saying why it cannot be read."""
    if not p.exists():
        raise ConfigError(f"configuration file not found: {p} (set --config or BINDERY_CONFIG)")
    if p.is_dir():
        raise ConfigError(f"configuration file {p} is a folder, not a YAML file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"configuration file {p} cannot be read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"configuration file {p} is not UTF-8 (byte {e.start}: {data[e.start:e.start + 1]!r}); "
                          "save it as UTF-8") from None


def _yaml_error(p: Path, e: yaml.YAMLError) -> ConfigError:
    mark = getattr(e, "problem_mark", None)
    where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
    what = getattr(e, "problem", None) or str(e)
    return ConfigError(" ".join(f"{p}{where}: not valid YAML: {what}".split()))


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key written twice in one mapping.

    Plain YAML loaders keep the last value: a second `sources:` block silently replaced the
    first (its source vanished from the plan) and a second `data_dir:` pointed every command
    at an empty instance."""

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        # checked as written, before any construction: a merge (`<<: *base`) is not resolved yet
        # (its keys may be overridden), nor is a key's value (an unhashable key is YAML's error)
        node: yaml.MappingNode = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise yaml.composer.ComposerError(
                    None, None, f"key {key_node.value!r} is written twice (lines {first} and "
                    f"{key_node.start_mark.line + 1}); keep one", key_node.start_mark)
            seen[key] = key_node
        return node


def load_config(path: str | os.PathLike[str] | None = None) -> BinderyConfig:
    """Load `path`, else `$BINDERY_CONFIG`, else `./bindery.yaml`."""
    p = Path(path or os.environ.get("BINDERY_CONFIG") or "bindery.yaml")
    text = _read_text(p)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        raw = yaml.load(text, Loader=_StrictLoader) or {}  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        raise _yaml_error(p, e) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level, got {type(raw).__name__}")
    cfg = config_from_dict(raw, p.resolve().parent)
    cfg.config_path = str(p.resolve())
    cfg._given_path = str(p.absolute())
    cfg._loaded_digest = digest
    return cfg


def check_paths(cfg: BinderyConfig, sources: list[str] | None = None, *, roots: bool = True,
                create: bool = True) -> None:
    """What the file system must hold before a run: `data_dir` a folder (created if missing) and
    (with `roots`) every local source's `root` an existing, readable folder. Not part of `load_config`,
    which the query service and the Dagster code location also call: an unmounted source
    folder must not stop them, only the runs that would list it (and their safe-delete
    checks refuse to delete from an empty listing anyway). `create=False` (`bindery plan`, which
    writes nothing) checks that `data_dir` could be created without creating it: a probe folder
    made and removed at once in its nearest existing parent. A `data_dir` it creates is
    owner-only (0700)."""
    data = cfg.data_path
    existing = next((p for p in (data, *data.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"data_dir: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK):
        raise ConfigError(f"data_dir: {existing} is not writable")
    # the roots first: a run refused for one of them leaves no data_dir behind (a new-user pass)
    for i, s in enumerate(cfg.sources):
        if not roots or s.kind != "local" or (sources and s.name not in sources):
            continue
        root = Path(s.root or "")
        key = f"sources.{i}.root (source {s.name!r})"
        if not root.exists():
            raise ConfigError(f"{key}: folder {root} does not exist")
        if not root.is_dir():
            raise ConfigError(f"{key}: {root} is a file, not a folder")
        if not os.access(root, os.R_OK | os.X_OK):
            raise ConfigError(f"{key}: folder {root} is not readable")
    try:  # what access() cannot tell: a read-only or virtual file system (/proc), an odd mount
        if create and not data.exists():
            # it holds every source's text, whatever the sources' own permissions: owner-only, as
            # PostgreSQL keeps its data directory (an existing one keeps what its owner chose)
            with contextlib.suppress(FileExistsError):  # another process made it first: theirs
                data.mkdir(parents=True)
                data.chmod(0o700)
        elif existing is not None and existing != data:
            os.rmdir(tempfile.mkdtemp(prefix=".bindery-probe-", dir=existing))
    except OSError as e:
        raise ConfigError(f"data_dir: cannot create {data}: {e.strerror or e}") from None
