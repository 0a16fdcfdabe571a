"""Validate a `dagster.yaml` the way Dagster does when an instance loads it, without connecting
to anything: the instance schema (`dagster_instance_config`), then each configurable class
(storage, run coordinator, run launcher) against that class's own `config_type()`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config
from dagster._serdes import class_from_code_pointer
from dagster._serdes.config_class import ConfigurableClass

_STORAGE_CLASSES = {
    "postgres": ("dagster_postgres", "DagsterPostgresStorage"),
    "sqlite": ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage"),
}


def validate_instance_yaml(path: Path) -> dict[str, Any]:
    """Raise on anything Dagster would refuse; return the validated instance config."""
    raw = yaml.safe_load(path.read_text()) or {}
    value, _ = dagster_instance_config(str(path.parent), path.name)
    blocks: list[tuple[str, str, Any]] = []
    for key in ("run_coordinator", "run_launcher"):
        if key in raw:
            blocks.append((raw[key]["module"], raw[key]["class"], raw[key].get("config") or {}))
    for kind, conf in (raw.get("storage") or {}).items():
        module, cls = _STORAGE_CLASSES[kind]
        blocks.append((module, cls, conf))
    for module, cls, conf in blocks:
        klass = cast(type[ConfigurableClass], class_from_code_pointer(module, cls))
        result = validate_config(klass.config_type(), conf)
        if not result.success:
            raise AssertionError(f"{path}: {module}.{cls} config invalid: "
                                 + "; ".join(e.message for e in result.errors or []))
    return dict(value)
