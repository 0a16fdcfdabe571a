"""Bindery configuration: one YAML file, validated once, shared by every component.

`load_config(path)` reads `bindery.yaml` (or `$BINDERY_CONFIG`), fills every default and
raises `ConfigError` with the offending key on anything malformed. The stage sections
(`stages.parse`, `stages.chunk`, ...) are what stage versions are hashed from, so they hold
only settings that change a stage's *output*; throughput knobs (batch sizes, concurrency)
are kept out of the hash (connectors.versions).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from connectors.errors import ConfigError

__all__ = [
    "BinderyConfig",
    "ChunkConfig",
    "ContextConfig",
    "EmbedConfig",
    "GateConfig",
    "ParseConfig",
    "QueryAuthConfig",
    "QueryConfig",
    "SourceConfig",
    "StageConfigs",
    "load_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParseQualityThresholds(_Strict):
    """Per-source limits for the parse-quality gate."""

    max_failure_share: float = Field(0.3, ge=0, le=1)  # share of failed docs -> ERROR
    # fewer documents than this are judged with the whole source, and never fail the check
    min_batch: int = Field(20, ge=1)
    warn_failure_share: float = Field(0.05, ge=0, le=1)
    min_chars_per_page: float = 20.0  # below -> page counted as empty
    min_alnum_share: float = 0.5
    min_word_share: float = 0.4  # share of tokens that look like dictionary-ish words
    max_repeated_line_share: float = 0.5


class SourceConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    kind: Literal["local", "s3"] = "local"
    root: str | None = None  # local folder
    bucket: str | None = None  # s3
    prefix: str = ""
    endpoint_url: str | None = None  # s3-compatible endpoint (moto, MinIO)
    region: str | None = None
    include: list[str] = Field(default_factory=lambda: ["**/*"])
    exclude: list[str] = Field(default_factory=list)
    # Safe delete sweep: a listing smaller than either bound aborts all deletes.
    min_count: int = Field(1, ge=0)
    min_ratio: float = Field(0.5, ge=0, le=1)
    max_file_mb: float = Field(100.0, gt=0)
    # local: follow symlinks whose target lies outside `root` (off: they are skipped, with a
    # dead letter saying so, so a link can never publish files from elsewhere unnoticed)
    follow_external_symlinks: bool = False
    # Principals of items the source gives no ACL (connectors.acl): unset = public, [] = nobody.
    acl: list[str] | None = None
    quality: ParseQualityThresholds = Field(default_factory=ParseQualityThresholds)

    @field_validator("root")
    @classmethod
    def _expand(cls, v: str | None) -> str | None:
        return os.path.expanduser(v) if v else v

    def check_complete(self) -> None:
        if self.kind == "local" and not self.root:
            raise ConfigError(f"source {self.name!r}: kind local needs 'root'")
        if self.kind == "s3" and not self.bucket:
            raise ConfigError(f"source {self.name!r}: kind s3 needs 'bucket'")


class ParseConfig(_Strict):
    ocr: bool = True  # OCR image-only pages when tesseract is installed
    ocr_dpi: int = 300
    ocr_language: str = "eng"
    strip_headers_footers: bool = True
    language: str = "en"


class ChunkConfig(_Strict):
    # Sized in the embedder's own word pieces: all-MiniLM-L6-v2 reads 256 and drops the rest,
    # and the contextual prefix shares that budget.
    max_tokens: int = Field(200, ge=16, le=8192)
    overlap_tokens: int = Field(30, ge=0)
    min_tokens: int = Field(24, ge=0)  # merge smaller sibling sections up to max_tokens
    tokenizer: str = "all-MiniLM-L6-v2"


class ContextConfig(_Strict):
    provider: Literal["offline", "anthropic", "none"] = "offline"
    max_prefix_tokens: int = 48
    model: str = "claude-haiku-4-5"
    base_url: str | None = None  # an Anthropic-compatible endpoint; default is the SDK's
    concurrency: int = 4
    max_tokens: int = 120


class EmbedConfig(_Strict):
    model: str = "all-MiniLM-L6-v2"
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    batch_size: int = Field(64, ge=1)
    device: str = "cpu"


class StageConfigs(_Strict):
    parse: ParseConfig = Field(default_factory=ParseConfig)
    chunk: ChunkConfig = Field(default_factory=ChunkConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    embed: EmbedConfig = Field(default_factory=EmbedConfig)


class GateConfig(_Strict):
    queries: str | None = None
    metric: str = "recall@10"
    secondary_metric: str = "mrr@10"
    tolerance: float = Field(0.01, ge=0)
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
    audience: str | None = None
    issuer: str | None = None
    leeway_seconds: float = Field(30.0, ge=0)

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


class QueryConfig(_Strict):
    k: int = Field(10, ge=1, le=200)
    candidates: int = Field(50, ge=1, le=1000)  # over-retrieval per retriever
    rrf_k: int = Field(60, ge=1)
    score_floor: float = 0.0  # fused score below which hits are dropped
    # Each further chunk of a document already ranked has its fused score multiplied by this:
    # a gentle diversity prior (1.0 disables) so one long document cannot fill the whole top-k.
    same_doc_decay: float = Field(0.97, gt=0, le=1)
    poll_seconds: float = Field(0.5, gt=0)
    auth: QueryAuthConfig = Field(default_factory=QueryAuthConfig)
    max_body_bytes: int = Field(65536, ge=1024)  # larger request bodies are refused (413) unread


class BackendsConfig(_Strict):
    database_url: str | None = None  # default: sqlite file under data_dir
    vector: Literal["qdrant-local", "qdrant-server"] = "qdrant-local"
    qdrant_url: str | None = None
    keyword: Literal["tantivy", "elasticsearch"] = "tantivy"
    elasticsearch_url: str | None = None


class RetentionConfig(_Strict):
    keep_generations: int = Field(3, ge=2)  # live + previous always kept
    rollback_window_hours: float = Field(168.0, ge=0)


class AutomationConfig(_Strict):
    """Dagster sensors and schedules; off by default so nothing runs until an operator asks."""

    sensor: bool = False  # watch sources and sync those that changed
    sensor_interval_seconds: int = Field(30, ge=5)
    reconcile: bool = False  # periodic full reconciliation of every source
    reconcile_cron: str = "0 3 * * *"


class BinderyConfig(_Strict):
    data_dir: str = ".bindery"
    sources: list[SourceConfig] = Field(default_factory=list)
    stages: StageConfigs = Field(default_factory=StageConfigs)
    gate: GateConfig = Field(default_factory=GateConfig)
    query: QueryConfig = Field(default_factory=QueryConfig)
    backends: BackendsConfig = Field(default_factory=BackendsConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    automation: AutomationConfig = Field(default_factory=AutomationConfig)
    config_path: str | None = None  # where it was loaded from; relative paths resolve there

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def database_url(self) -> str:
        return self.backends.database_url or f"sqlite:///{self.data_path / 'bindery.db'}"

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


def config_from_dict(raw: dict[str, Any], base_dir: Path | None = None) -> BinderyConfig:
    """Validate a config mapping; relative paths resolve against `base_dir`."""
    try:
        cfg = BinderyConfig.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in e.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None
    base = base_dir or Path.cwd()
    cfg.data_dir = _resolve(base, cfg.data_dir) or cfg.data_dir
    cfg.gate.queries = _resolve(base, cfg.gate.queries)
    cfg.query.auth.jwt.jwks_file = _resolve(base, cfg.query.auth.jwt.jwks_file)
    names = [s.name for s in cfg.sources]
    if len(set(names)) != len(names):
        raise ConfigError(f"invalid configuration: duplicate source names in {names}")
    for s in cfg.sources:
        s.root = _resolve(base, s.root)
        s.check_complete()
    return cfg


def load_config(path: str | os.PathLike[str] | None = None) -> BinderyConfig:
    """Load `path`, else `$BINDERY_CONFIG`, else `./bindery.yaml`."""
    p = Path(path or os.environ.get("BINDERY_CONFIG") or "bindery.yaml")
    if not p.exists():
        raise ConfigError(f"configuration file not found: {p} (set --config or BINDERY_CONFIG)")
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level, got {type(raw).__name__}")
    cfg = config_from_dict(raw, p.resolve().parent)
    cfg.config_path = str(p.resolve())
    return cfg
