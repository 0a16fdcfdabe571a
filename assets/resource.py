"""`BinderyResource`: how Dagster assets reach the configuration and the document store.

The config path comes through resource config (`EnvVar("BINDERY_CONFIG")` in the code
location), never from the environment at import time.
"""

from __future__ import annotations

import dagster as dg
from pydantic import PrivateAttr

from assets.runtime import Runtime
from connectors.config import BinderyConfig, load_config


class BinderyResource(dg.ConfigurableResource["BinderyResource"]):
    """Loads `bindery.yaml` once per process and hands out the shared `Runtime`."""

    config_path: str

    _runtime: Runtime | None = PrivateAttr(default=None)

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = Runtime(load_config(self.config_path))
        return self._runtime

    @property
    def config(self) -> BinderyConfig:
        return self.runtime.cfg
