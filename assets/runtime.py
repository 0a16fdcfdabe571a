"""What every stage needs: the configuration, the document store, and the generations a run
writes to.

A *sync* keeps the live generation current and, while a candidate is being built, the
candidate too (dual-write), so a promoted candidate is never staler than what it replaces.
Each generation is processed with the stage configuration recorded on it, not the one in the
YAML file: changing `bindery.yaml` changes what the next *reindex* builds, never silently the
live index. A *reindex* targets the candidate built from the current configuration.
"""

from __future__ import annotations

import fcntl
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from connectors.config import BinderyConfig, StageConfigs
from connectors.generations import physical_names
from connectors.store import DocumentStore
from connectors.versions import generation_key, stage_configs_dump, stage_versions

Target = Literal["sync", "candidate"]
ACTIVE = ("live", "building")  # statuses a sync writes to
RETAINED = ("live", "building", "previous")  # statuses whose indexes deletes must reach


@dataclass(frozen=True)
class Generation:
    id: int
    name: str
    status: str
    stages: StageConfigs
    versions: dict[str, str]
    row: dict[str, Any]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Generation:
        return cls(row["id"], row["name"], row["status"], StageConfigs.recorded(row["stage_configs"]),
                   dict(row["stage_versions"]), row)


class Runtime:
    def __init__(self, cfg: BinderyConfig, store: DocumentStore | None = None):
        self.cfg = cfg
        self.store = store or DocumentStore(cfg.database_url)

    @cached_property
    def current_versions(self) -> dict[str, str]:
        return stage_versions(self.cfg.stages)

    def generations(self, statuses: tuple[str, ...]) -> list[Generation]:
        return [Generation.from_row(r) for r in self.store.generations(statuses)]

    def live(self) -> Generation | None:
        b = self.store.get_binding()
        if not b:
            return None
        row = self.store.get_generation(b["generation_id"])
        return Generation.from_row(row) if row else None

    def candidate(self) -> Generation | None:
        gens = self.generations(("building",))
        return gens[-1] if gens else None

    def targets(self, target: Target) -> list[Generation]:
        """Generations this run writes to, creating generation 1 on a fresh system."""
        if target == "candidate":
            return [self.ensure_candidate()]
        gens = self.generations(ACTIVE)
        return gens or [self.ensure_candidate()]

    def ensure_candidate(self) -> Generation:
        """The building generation for the current configuration: reused if one exists for
        exactly these stage versions, else created (an older, different candidate is retired).
        A file lock makes concurrent partition runs agree on one candidate."""
        versions = self.current_versions
        lock_path = self.cfg.data_path / ".generations.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                for g in self.generations(("building",)):
                    if g.versions == versions:
                        return g
                    self.store.update_generation(g.id, status="retired", retired_at=time.time())
                    self.store.add_event("candidate-superseded",
                                         f"candidate {g.name} superseded by a new configuration")
                n = len(self.store.generations()) + 1
                name = f"g{n}_{generation_key(versions)}"
                vec, kw = physical_names(self.cfg, name)
                gen_id = self.store.create_generation({
                    "name": name, "status": "building", "stage_versions": versions,
                    "stage_configs": stage_configs_dump(self.cfg.stages), "embedder_id": versions["embed"],
                    "vector_index": vec, "vector_engine": self.cfg.backends.vector, "keyword_index": kw,
                    "counts": {}, "created_at": time.time(),
                })
                row = self.store.get_generation(gen_id)
                assert row is not None
                return Generation.from_row(row)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def config_drift(self) -> list[str]:
        """Stages whose current configuration differs from the live generation's."""
        live = self.live()
        if live is None:
            return []
        return [s for s, v in self.current_versions.items() if live.versions.get(s) != v]
