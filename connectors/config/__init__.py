"""Bindery configuration: one YAML file, validated once, shared by every component.

`load_config(path)` reads `bindery.yaml` (or `$BINDERY_CONFIG`), fills every default and
raises `ConfigError` with the offending key on anything malformed. The schema is in `models`,
reading the file in `loading`, the rule for sources nested in one another in `nesting`, and what
the machine must provide before a run (`check_paths`, `check_stage_resources`) in `checks`.
Everything a caller needs is imported from here.
"""

from connectors.config.checks import (
    RUN_LAUNCHERS,
    check_paths,
    check_run_launcher,
    check_sources,
    check_stage_resources,
    make_data_dir,
)
from connectors.config.loading import config_from_dict, load_config
from connectors.config.models import (
    MAX_NEIGHBOURS,
    SUPPORTED_DATABASES,
    ApiKeyConfig,
    AutomationConfig,
    BackendsConfig,
    BinderyConfig,
    ChunkConfig,
    ContextConfig,
    EmbedBackend,
    EmbedConfig,
    EmbedPrecision,
    GateConfig,
    JwtConfig,
    OrchestrationConfig,
    ParseConfig,
    ParseQualityThresholds,
    PricesConfig,
    QueryAuthConfig,
    QueryConfig,
    RetentionConfig,
    SourceConfig,
    StageConfigs,
    TuneConfig,
    VectorEngine,
    check_database_url,
)
from connectors.config.nesting import narrower_within

__all__ = [
    "MAX_NEIGHBOURS",
    "RUN_LAUNCHERS",
    "SUPPORTED_DATABASES",
    "ApiKeyConfig",
    "AutomationConfig",
    "BackendsConfig",
    "BinderyConfig",
    "ChunkConfig",
    "ContextConfig",
    "EmbedBackend",
    "EmbedConfig",
    "EmbedPrecision",
    "GateConfig",
    "JwtConfig",
    "OrchestrationConfig",
    "ParseConfig",
    "ParseQualityThresholds",
    "PricesConfig",
    "QueryAuthConfig",
    "QueryConfig",
    "RetentionConfig",
    "SourceConfig",
    "StageConfigs",
    "TuneConfig",
    "VectorEngine",
    "check_database_url",
    "check_paths",
    "check_run_launcher",
    "check_sources",
    "check_stage_resources",
    "config_from_dict",
    "load_config",
    "make_data_dir",
    "narrower_within",
]
