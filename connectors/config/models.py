"""The configuration's schema: every section of `bindery.yaml` as a pydantic model, with its
defaults, ranges and the rules within a section. The stage sections (`stages.parse`,
`stages.chunk`, ...) are what stage versions are hashed from, so they hold only settings that
change a stage's *output*; throughput knobs (batch sizes, concurrency) are kept out of the hash
(connectors.versions)."""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from connectors.errors import ConfigError, without_secrets

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
    """Per-source limits for the parse-quality gate. Shares lie in [0, 1]: a share of 7 failed
    every document, and NaN quietly turned its check off."""

    max_failure_share: float = Field(0.3, ge=0, le=1, allow_inf_nan=False)  # share of failed docs -> ERROR
    # fewer documents than this are judged with the whole source, and never fail the check
    min_batch: int = Field(20, ge=1)
    warn_failure_share: float = Field(0.05, ge=0, le=1, allow_inf_nan=False)
    # a document's mean extracted characters per page below this fails it (a page counts as empty
    # below quality.metrics.EMPTY_PAGE_CHARS, a fixed constant, not this threshold)
    min_chars_per_page: float = Field(20.0, ge=0, allow_inf_nan=False)
    min_alnum_share: float = Field(0.5, ge=0, le=1, allow_inf_nan=False)
    # share of tokens that look like dictionary-ish words
    min_word_share: float = Field(0.4, ge=0, le=1, allow_inf_nan=False)
    # paginated documents only (PDF): their running headers
    max_repeated_line_share: float = Field(0.5, ge=0, le=1, allow_inf_nan=False)
    # more than this share of empty pages is almost always an unOCRed scan or a broken text layer
    max_empty_page_share: float = Field(0.5, ge=0, le=1, allow_inf_nan=False)


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
    min_ratio: float = Field(0.5, ge=0, le=1, allow_inf_nan=False)
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

    # Bindery's own folders (the configuration's data_dir): a local listing never walks into them,
    # wherever they lie under its root (`config.loading` sets it; a data_dir inside a root listed
    # the store's own database, WAL and run history as documents, and every sync then failed)
    _state_dirs: tuple[str, ...] = PrivateAttr(default=())

    @property
    def state_dirs(self) -> tuple[str, ...]:
        return self._state_dirs

    def keep_out(self, *folders: str) -> None:
        """Folders of Bindery's own that this source's listing must never walk into."""
        self._state_dirs = folders

    def missing_key(self) -> str | None:
        """The setting its kind needs that this source lacks: `root` (local), `bucket` (s3)."""
        return "root" if self.kind == "local" and not self.root else \
            "bucket" if self.kind == "s3" and not self.bucket else None

    def check_complete(self) -> None:
        if (missing := self.missing_key()) is not None:
            raise ConfigError(f"source {self.name!r}: kind {self.kind} needs {missing!r}")


class ParseConfig(_Strict):
    ocr: bool = True  # OCR image-only pages when tesseract is installed
    ocr_dpi: int = Field(300, ge=50, le=1200)  # tesseract reads badly below ~70 dpi
    ocr_language: str = "eng"
    # A PDF with more pages to OCR than this is a `needs-ocr` dead letter naming the count, not a
    # run held for hours: 2,000 pages sharing one small image (a 755 KB file) took ~1.5 s of OCR
    # each. A limit, not an output setting: it stays out of the parse version, so raising it
    # re-parses nothing but what `bindery dlq retry` asks for.
    max_ocr_pages: int = Field(1000, ge=1)
    # A parse that runs longer than this is stopped and its document becomes a `parse-timeout`
    # dead letter, so one pathological file (a regular expression that backtracks for hours, a
    # loop in a parser) costs minutes, not the run. 0 = no limit. Out of the parse version too.
    max_parse_seconds: float = Field(600.0, ge=0, le=7 * 24 * 3600, allow_inf_nan=False)  # at most a week
    strip_headers_footers: bool = True
    # A PDF table set without rules (LaTeX's booktabs) as a table, a row a line and its cells
    # apart by tabs, its header row repeated in every chunk of it, rather than as lines of text.
    # Off: on the dev sets it read every such table (cooking-units' side-by-side halves too) but
    # ranked a little worse (pdf_tables MRR@10 0.858 -> 0.847, pdf_docs 0.891 -> 0.888).
    pdf_unruled_tables: bool = False
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
    tolerance: float = Field(0.01, ge=0, lt=1, allow_inf_nan=False)  # metrics are shares: 1 or more never refuses
    max_regressions: int = Field(2, ge=0)
    k: int = Field(50, ge=1, le=200)  # the query service's own limit on k


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
    leeway_seconds: float = Field(30.0, ge=0, allow_inf_nan=False)

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
    # fused score below which hits are dropped; null (default) keeps all. 0 is a floor like any
    # other: z-score fusion gives a below-average match a negative score (a new user set 0.0 to
    # drop those and still got them, when 0 meant "off")
    score_floor: float | None = Field(None, ge=0, allow_inf_nan=False)
    # Each further unit of a document already ranked has its fused score multiplied by this (a
    # negative one divided): a diversity prior (1.0 disables) so one long page's sections cannot
    # fill the top-k. 0.7 over 0.97: recall@10 up one question on redis, man pages and quoted
    # e-mail, down on no dev set; 0.5-0.7 measure alike (docs/retrieval.md)
    same_doc_decay: float = Field(0.7, gt=0, le=1, allow_inf_nan=False)
    # How the retrievers' unit lists are combined (query_service/fusion.py): `zscore` sums each
    # retriever's standardised scores times its weight; `rrf` sums weight / (rrf_k + rank).
    fusion: Literal["zscore", "rrf"] = "zscore"
    dense_weight: float = Field(1.0, ge=0, allow_inf_nan=False)
    sparse_weight: float = Field(1.0, ge=0, allow_inf_nan=False)
    unit_weight: float = Field(0.6, ge=0, allow_inf_nan=False)  # BM25 over whole units (0 skips that search)
    # ... the same list's weight for e-mail messages: a message is one unit and nearly always one
    # chunk, so its whole-unit BM25 repeats its chunk BM25 and only tips the balance towards
    # keywords. 0: messages take no part in that list (mail_ham 0.557 -> 0.566 recall@10,
    # pasted 0.794 -> 0.806, quoted equal; docs/retrieval.md)
    message_unit_weight: float = Field(0.0, ge=0, allow_inf_nan=False)
    # BM25 over heading paths, added to the chunk-level BM25
    heading_weight: float = Field(0.0, ge=0, allow_inf_nan=False)
    plain_weight: float = Field(1.0, ge=0, allow_inf_nan=False)  # BM25 over the unstemmed words, added at both levels
    # Proximity (sequential dependence): each adjacent pair of the query's non-stopword words as a
    # phrase with `proximity_slop`, its BM25 times this weight added at both levels (0 = off).
    # 0.5 with slop 1: MRR@10 up on 9 of 10 dev sets, chosen the same on 9 of 10 leave-one-set-out
    # (docs/retrieval.md)
    proximity_weight: float = Field(0.5, ge=0, allow_inf_nan=False)
    proximity_slop: int = Field(1, ge=0, le=50)
    # E-mail: a message's parent and replies gain this share of its lead (0 = off; see ranking.py)
    thread_weight: float = Field(0.5, ge=0, allow_inf_nan=False)
    # ... and the other messages of its thread (same root Message-ID) this share (0 = off)
    thread_mates_weight: float = Field(0.35, ge=0, allow_inf_nan=False)
    # A pasted reply's attribution line ("On <date>, X wrote:") names the message it answers:
    # that writer's message of that date gains this share of the fused list's spread times the
    # evidence (query_service/attribution.py; 0 = off)
    attribution_weight: float = Field(2.0, ge=0, allow_inf_nan=False)
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
    poll_seconds: float = Field(0.5, gt=0, allow_inf_nan=False)
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
    rollback_window_hours: float = Field(168.0, ge=0)  # .inf: no generation expires by age


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
            if self.orchestration.postgres_url:
                raise ValueError(f"orchestration.postgres_url: not a PostgreSQL URL "
                                 f"({without_secrets(repr(self.orchestration.postgres_url))})")
            raise ValueError("orchestration.storage: postgres needs orchestration.postgres_url or a PostgreSQL "
                             "backends.database_url")
        if backend == "postgresql" and self.orchestration.storage != "sqlite" and self._dagster_in_store_schema():
            # the two alembic_version tables would be one: each side then finds the other's revision
            # and every command fails until the database is repaired by hand (an operator pass)
            raise ValueError("orchestration.postgres_schema: 'public' is the document store's schema in this "
                             "database; Dagster's tables must live in another (the default: dagster)")
        return self

    def _dagster_in_store_schema(self) -> bool:
        """Whether Dagster's instance would share the document store's schema: `public` on the
        store's own database."""
        from sqlalchemy.engine import make_url

        if self.orchestration.postgres_schema != "public" or not self.backends.database_url:
            return False
        if not self.orchestration.postgres_url:
            return True
        store, dagster = make_url(self.backends.database_url), make_url(self.orchestration.postgres_url)
        return (store.host, store.port or 5432, store.database) == (dagster.host, dagster.port or 5432,
                                                                     dagster.database)

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
