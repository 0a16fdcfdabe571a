"""The generation lifecycle, in one place: create -> build -> judge -> flip -> rollback -> gc.

A generation is one complete build of the indexes from one stage configuration. Its status
moves through a small state machine, and every move is made here (the binding row itself is
flipped in one transaction by `DocumentStore.flip_binding`):

    building --(first index published, nothing live)--------> live      (the first binding)
    building --(gate passes, or a forced promotion)----------> live      (the old live: previous)
    live     --(a newer generation promoted)-----------------> previous  (the old previous: retired)
    previous --(rollback)------------------------------------> live      (the rolled-back one: previous)
    building --(a reindex with another configuration)--------> retired   (superseded)
    retired  --(past the rollback window, or over the budget)-> dropped  (gc: indexes deleted)
    building --(a judged `bindery tune` trial)----------------> dropped  (drop_candidate)

- **create**: `ensure_candidate` reuses the building generation for exactly the current stage
  versions or creates one (a different, older candidate is retired); `describe_candidate` is
  the same answer for `bindery plan`, which must not create anything.
- **build**: `targets` are the generations a run writes (a sync: live + a building candidate,
  or generation 1 on a fresh system; a reindex: the candidate); `maintained` are the other
  retained generations, which receive access changes and deletes only.
- **judge** needs the eval runner and the query service, so it lives in `evals/promotion.py`;
  it records its verdict through `record_verdict` and flips through `promote`.
- **flip**: `bind_first` binds a fresh system's first generation once its index is published
  (there is nothing to compare it with); `promote` flips to a judged (or forced) candidate.
- **rollback** restores the previous generation; **gc** drops retired generations past the
  rollback window, never the live or the previous one; `drop_candidate` drops a candidate no
  one will promote (a judged tune trial).

Each generation is processed with the stage configuration recorded on it (`Generation.stages`),
not the one in the YAML file: changing `bindery.yaml` changes what the next *reindex* builds,
never silently the live index. No Dagster here and no query service: the CLI, the Dagster
assets and the evals all call this module.
"""

from __future__ import annotations

import fcntl
import getpass
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from connectors.config import BinderyConfig, StageConfigs
from connectors.errors import BindingError, GateRefused, IndexError_, UnknownGeneration, UsageError
from connectors.generations import (
    GenerationPaths,
    drop_generation_files,
    is_embedded,
    keyword_missing_fields,
    missing_snapshots,
    physical_names,
    point_live_aliases,
    vector_engine,
    working_index_damage,
    writer_lock,
)
from connectors.store import BindingRecord, DocumentStore, GenerationRecord
from connectors.versions import generation_key, stage_configs_dump, stage_versions

__all__ = ["ACTIVE", "RETAINED", "Flip", "Generation", "Lifecycle", "Target", "bind_live"]

Target = Literal["sync", "candidate"]
ACTIVE = ("live", "building")  # statuses a sync writes to
RETAINED = ("live", "building", "previous")  # statuses whose indexes deletes must reach
FIRST_GENERATION = "first generation: nothing to compare with"
# of a source's documents live serves, the share an older generation may lack before a flip back
# to it warns: a sync writes new documents into live alone, so one that lags far behind is silent
# about them otherwise (an operator pass re-promoted one lacking 705 documents, and no word)
LEFT_OUT_SHARE = 0.01


@dataclass(frozen=True)
class Generation:
    """A generation with the stage configuration recorded on it, parsed (`record` is its row)."""

    id: int
    name: str
    status: str
    stages: StageConfigs
    versions: dict[str, str]
    record: GenerationRecord

    @classmethod
    def of(cls, record: GenerationRecord) -> Generation:
        return cls(record.id, record.name, record.status, StageConfigs.recorded(record.stage_configs),
                   dict(record.stage_versions), record)


@dataclass(frozen=True)
class Flip:
    """What `bind_live` did: the binding row after the flip, and the server aliases it moved
    (`aliases`) or why it could not move them (`alias_error`)."""

    binding: BindingRecord
    aliases: dict[str, str] | None = None
    alias_error: str | None = None

    def alias_keys(self) -> dict[str, Any]:
        """The alias outcome for the JSON output (only the key that applies)."""
        if self.alias_error is not None:
            return {"alias_error": self.alias_error}
        return {"aliases": self.aliases} if self.aliases is not None else {}


def bind_live(cfg: BinderyConfig, store: DocumentStore, gen: GenerationRecord, **flip: Any) -> Flip:
    """Flip the binding row to `gen` (one transaction; `flip` goes to `store.flip_binding`),
    then move the server aliases in the same step. The row is the truth: an alias that fails
    to move is recorded as an `alias-move-failed` event and reported under `alias_error`,
    never undoes the flip, and is moved again by the next flip."""
    binding = store.flip_binding(gen.id, **flip)
    try:
        return Flip(binding, aliases=point_live_aliases(cfg, gen.name))
    except Exception as e:  # any engine error: the flip stands, the drift is visible
        error = f"{type(e).__name__}: {e}"
        store.add_event("alias-move-failed", f"generation {gen.name} is live but {cfg.backends.live_alias} "
                                             f"was not moved: {error}")
        return Flip(binding, alias_error=error)



MAX_OPERATOR_CHARS = 128  # `bindings.flipped_by`, `generations.forced_by`


def operator_name(by: str | None) -> str:
    """Who flips the binding: `by` (`--by`, the UI's `forced_by`), else the user running the
    process. Longer than the store keeps is a usage error before anything is judged: PostgreSQL
    refused it at the flip, after the gate had passed (SQLite keeps any length). Blank (or
    whitespace) names nobody, so the user running the process is recorded instead."""
    who = (by or "").strip() or getpass.getuser()
    if len(who) > MAX_OPERATOR_CHARS:
        raise UsageError(f"--by: at most {MAX_OPERATOR_CHARS} characters, got {len(who)}")
    return who


class Lifecycle:
    """Every state change of generations, and every lookup of one, for one configuration and
    one document store."""

    def __init__(self, cfg: BinderyConfig, store: DocumentStore):
        self.cfg = cfg
        self.store = store

    # -- lookups --------------------------------------------------------------------------

    @cached_property
    def current_versions(self) -> dict[str, str]:
        """The stage versions the current configuration builds."""
        return stage_versions(self.cfg.stages)

    def generations(self, statuses: tuple[str, ...]) -> list[Generation]:
        return [Generation.of(r) for r in self.store.generations(statuses)]

    def _bound(self, previous: bool) -> Generation | None:
        b = self.store.get_binding()
        gen_id = (b.previous_generation_id if previous else b.generation_id) if b else None
        if gen_id is None:
            return None
        row = self.store.get_generation(gen_id)
        return Generation.of(row) if row else None

    def live(self) -> Generation | None:
        return self._bound(previous=False)

    def previous(self) -> Generation | None:
        """The generation a rollback would restore."""
        return self._bound(previous=True)

    def building(self) -> Generation | None:
        """The newest building generation: the candidate, or before anything is live the
        first build (which binds itself when its first index is published)."""
        gens = self.generations(("building",))
        return gens[-1] if gens else None

    def candidate(self) -> Generation | None:
        """The newest building generation while a generation is live: what the gate judges."""
        return self.building() if self.store.get_binding() is not None else None

    def first_build(self) -> Generation | None:
        """The newest building generation while nothing is live yet."""
        return self.building() if self.store.get_binding() is None else None

    def resolve(self, which: str | int | None) -> GenerationRecord:
        """The row of `which`: "live", "previous" (the rollback target, as `bindery status` names
        it), "candidate" (the newest building generation; also when `which` is None), a
        generation id or a generation name (a Dagster `generations` partition). Raises
        BindingError naming what to run."""
        if which == "live":
            gen = self.live()
            if gen is None:
                raise BindingError("no live generation yet: run `bindery sync`")
            return gen.record
        if which == "previous":
            gen = self.previous()
            if gen is None:
                raise BindingError("no previous generation: one is kept once a promote replaced a live one")
            return gen.record
        if which is None or which == "candidate":
            gen = self.building()
            if gen is None:
                raise BindingError("no candidate generation: run `bindery reindex` first")
            return gen.record
        if isinstance(which, str) and not which.isdigit():
            named = next((g for g in self.store.generations() if g.name == which), None)
            if named is None:
                raise UnknownGeneration(f"no generation {which} (`bindery status` lists them)")
            return named
        row = self.store.get_generation(int(which)) if int(which) < 2**63 else None  # beyond: no such row
        if row is None:
            raise UnknownGeneration(f"no generation {which} (`bindery status` lists them)")
        return row

    def resolve_searchable(self, which: str | int | None) -> GenerationRecord:
        """`resolve`, refusing a dropped generation by name: its indexes are gone (a search of it
        failed on "no published vector snapshot")."""
        gen = self.resolve(which)
        if gen.status == "dropped":
            raise BindingError(f"generation {gen.id} ({gen.name}) was dropped: its indexes are gone "
                               "(`bindery status` lists the generations that can be searched)")
        return gen

    def config_drift(self) -> list[str]:
        """Stages whose current configuration differs from the live generation's."""
        live = self.live()
        return [] if live is None else self.drift(live.versions)

    def drift(self, versions: dict[str, str]) -> list[str]:
        """Stages whose version under the current configuration differs from `versions` (a
        generation's `stage_versions`)."""
        return [s for s, v in self.current_versions.items() if versions.get(s) != v]

    def nothing_to_reindex(self) -> str | None:
        """Why a reindex would build nothing new, or None when it has work: the configuration
        matches the live generation, whose keyword index already has every field this release
        reads. (`bindery reindex --force` rebuilds anyway.)"""
        live = self.live()
        if live is None or self.config_drift():
            return None
        if keyword_missing_fields(self.cfg, live.record):
            return None  # an index of an older release: rebuilding it is the upgrade
        return f"nothing to reindex: the configuration matches live generation {live.name}"

    # -- create -----------------------------------------------------------------------------

    def _next_name(self) -> str:
        return f"g{len(self.store.generations()) + 1}_{generation_key(self.current_versions)}"

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
                name = self._next_name()
                vec, kw = physical_names(self.cfg, name)
                gen_id = self.store.create_generation(
                    name=name, status="building", stage_versions=versions,
                    stage_configs=stage_configs_dump(self.cfg.stages), embedder_id=versions["embed"],
                    vector_index=vec, vector_engine=self.cfg.backends.vector, keyword_index=kw,
                    counts={}, created_at=time.time(),
                )
                row = self.store.get_generation(gen_id)
                assert row is not None
                return Generation.of(row)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def describe_candidate(self) -> Generation:
        """What `ensure_candidate` would return, without creating anything: the matching
        building generation, or a description (id 0) of the one it would create."""
        versions = self.current_versions
        found = next((g for g in self.generations(("building",)) if g.versions == versions), None)
        if found is not None:
            return found
        name = self._next_name()
        record = GenerationRecord.unrecorded(0, name, stage_versions=dict(versions), embedder_id=versions["embed"],
                                             stage_configs=stage_configs_dump(self.cfg.stages))
        return Generation(0, name, "building", self.cfg.stages, dict(versions), record)

    # -- build ------------------------------------------------------------------------------

    def targets(self, target: Target) -> list[Generation]:
        """Generations this run writes to, creating generation 1 on a fresh system."""
        if target == "candidate":
            return [self.ensure_candidate()]
        gens = self.generations(ACTIVE)
        return gens or [self.ensure_candidate()]

    def maintained(self, targets: list[Generation]) -> list[Generation]:
        """The retained generations a run does not write but must keep correct: access
        changes and deletes reach them (a rollback must never widen access)."""
        names = {g.name for g in targets}
        return [g for g in self.generations(RETAINED) if g.name not in names]

    def preview_targets(self, kind: str) -> tuple[list[Generation], list[Generation]]:
        """(generations a `kind` run would write, generations it would maintain), as `targets`
        would pick them — but a generation that does not exist yet is only described."""
        if kind == "reindex":
            targets = [self.describe_candidate()]
        else:
            targets = self.generations(ACTIVE) or [self.describe_candidate()]
        return targets, self.maintained(targets)

    # -- judge (the verdict; judging itself is evals.promotion.judge) ------------------------

    def record_verdict(self, gen_id: int, verdict: dict[str, Any]) -> None:
        """Store the gate's verdict on the generation it judged (`promote` reads it back), with
        when it was judged: `promote` shows a verdict only when its own run recorded it."""
        self.store.update_generation(gen_id, eval_report={"judged_at": time.time(), **verdict})

    # -- flip -------------------------------------------------------------------------------

    def bind_first(self, gens: list[Generation], *, by: str = "first-sync") -> str | None:
        """On a fresh system (nothing bound), bind the building generation among `gens` once
        readers can open it — its index is published. Returns its name when it was bound."""
        if self.store.get_binding() is not None:
            return None
        first = next((g for g in gens if g.status == "building"), None)
        row = self.store.get_generation(first.id) if first is not None else None
        if first is None or row is None or not row.published_at:
            return None  # never bind a generation readers cannot open
        # the verdict first: a process killed between the two leaves a verdict and no binding,
        # which the next run's bind_first completes; the other order left "not judged" for good
        self.record_verdict(first.id, {"passed": True, "reasons": [FIRST_GENERATION]})
        bind_live(self.cfg, self.store, row, by=by)
        return first.name

    def check_promotable(self, cand: GenerationRecord, *, force: bool, reason: str | None) -> None:
        """Refuse, before any judging, a promotion that cannot happen."""
        if cand.status == "retired":  # older than previous: deletes and access changes no longer reach it
            raise BindingError(f"generation {cand.id} is retired: its indexes missed the deletes and access "
                               "changes since; `bindery reindex` builds a current candidate")
        if cand.status not in ("building", "previous"):
            raise BindingError(f"generation {cand.id} is {cand.status}: only a candidate or the previous "
                               "generation can be promoted")
        if not cand.vector_snapshot and is_embedded(vector_engine(self.cfg, cand)):
            raise BindingError(f"candidate {cand.name} has no indexed data yet; finish its reindex first")
        if cand.status == "building" and (missing := self.unbuilt_sources(cand)):
            # not even forced: the gate's verdict can be overridden, a source missing from live cannot
            raise BindingError(
                f"candidate {cand.name} holds nothing of {', '.join(map(repr, missing))}, which the live "
                "generation serves: promoted, they would leave search. Build it for every source first "
                "(`bindery reindex`, or in the UI a backfill of `reindex` over all sources)")
        if force and not reason:
            # one message for both: the CLI's --reason, the UI's promote job config `reason`
            raise UsageError("a forced promotion needs a reason (--reason; in the UI, the promote job's `reason`)")

    def record_candidate_built(self, cand: GenerationRecord, by: str) -> bool:
        """Record "candidate-built" for `cand` once (`status` lists it), whichever built it: the
        CLI's reindex, or the UI's last partition step (`by`: who, as the event says it). False
        when it was recorded already."""
        if any(f"candidate {cand.name} " in e.message for e in self.store.events("candidate-built", limit=50)):
            return False
        live = self.live()
        changed = ", ".join(s for s in self.current_versions if live is not None
                            and cand.stage_versions.get(s) != live.versions.get(s)) or "none"
        self.store.add_event("candidate-built", f"{by} built candidate {cand.name} (stages changed: {changed})")
        return True

    def unbuilt_sources(self, cand: GenerationRecord) -> list[str]:
        """The partitions (sources, or shards of a sharded source) the live generation holds
        documents of and `cand` holds none of: a reindex run for some partitions only, from the
        UI's per-partition jobs."""
        from connectors.shards import parse_key, partition_keys

        live = self.live()
        if live is None:
            return []
        keys = [k for s in self.cfg.sources for k in partition_keys(s)]
        by_source: dict[str, list[tuple[str, Any]]] = {}
        for key in keys:
            name, shard = parse_key(key)
            by_source.setdefault(name, []).append((key, shard))

        def partitions(gen_id: int) -> set[str]:
            """The partitions of the configured sources `gen_id` holds a document of."""
            return {key for did, r in self.store.index_state(gen_id).items() if r.digest
                    for key, shard in by_source.get(r.source, ()) if shard is None or shard.holds(did)}

        serving, held = partitions(live.id), partitions(cand.id)
        return [k for k in keys if k in serving and k not in held]

    def promote(self, cand: GenerationRecord, verdict: dict[str, Any], *, force: bool = False,
                reason: str | None = None, by: str | None = None) -> dict[str, Any]:
        """Flip to `cand` if its `verdict` passed, or when forced — a forced promotion records
        who forced it and why. Raises GateRefused (with the verdict) otherwise."""
        who = operator_name(by)
        if not verdict["passed"] and not force:
            self.store.add_event("gate-refused", f"candidate {cand.name} refused: {'; '.join(verdict['reasons'])}",
                                 details=verdict)
            raise GateRefused(f"gate refused candidate {cand.name}: {'; '.join(verdict['reasons'])}", verdict)
        forced = {"by": who, "reason": reason} if force and not verdict["passed"] else None
        if forced:
            self.store.add_event("forced-promotion", f"{who} forced promotion of {cand.name}: {reason}",
                                 details={"report": verdict})
        # a rollback by another door, or a candidate that lacks documents live serves
        warnings = self._left_out(cand) if cand.status == "previous" else self._not_carried(cand)
        # the verdict holds for the live generation it was judged against: one flipped meanwhile
        # (a rollback while the gate ran) is refused at the flip, not promoted past
        judged = {"expect_live": verdict["live_generation"]} if "live_generation" in verdict else {}
        flip = bind_live(self.cfg, self.store, cand, by=who, forced=forced, **judged)
        binding = flip.binding
        self.store.add_event("promoted", f"{cand.name} is live (previous: {binding.previous_generation_id})")
        return {"promoted": True, "live": binding.generation_id, "previous": binding.previous_generation_id,
                "forced": bool(forced), "report": verdict, "warnings": warnings, **flip.alias_keys()}

    def _left_out(self, gen: GenerationRecord) -> list[str]:
        """What a flip back to an older generation takes out of search: the sources the live
        generation serves that `gen` holds nothing of (added since it was built). The next sync
        writes them into it; a UI pass found the flip silent about it."""
        missing = self.unbuilt_sources(gen)
        return ([f"generation {gen.id} holds nothing of {', '.join(map(repr, missing))}: their documents are out of "
                 "search until the next `bindery sync` writes them into it"] if missing else []) + self._lacking(gen)

    def _lacking(self, gen: GenerationRecord) -> list[str]:
        """Per source `gen` holds some of, the documents the live generation serves and `gen` does
        not (added since it was last written: a sync writes new documents into live alone), where
        they are at least `LEFT_OUT_SHARE` of them. A source `gen` holds nothing of is
        `unbuilt_sources`' warning; only a whole source missing was warned of before."""
        live = self.live()
        if live is None or live.id == gen.id:
            return []
        held = {did for did, r in self.store.index_state(gen.id).items() if r.digest}
        configured = set(self.cfg.source_names())
        serving: dict[str, list[str]] = {}
        for did, r in self.store.index_state(live.id).items():
            if r.digest and r.source in configured:
                serving.setdefault(r.source, []).append(did)
        out = []
        for source, dids in sorted(serving.items()):
            lacking = sum(1 for did in dids if did not in held)
            if lacking == len(dids) or not lacking or lacking < LEFT_OUT_SHARE * len(dids):
                continue
            out.append(f"generation {gen.id} lacks {lacking:,} of the {len(dids):,} documents of {source!r} the live "
                       f"generation serves ({lacking / len(dids):.0%}): they are out of search until the next "
                       "`bindery sync` writes them into it")
        return out

    def _not_carried(self, cand: GenerationRecord) -> list[str]:
        """The documents the live generation serves that candidate `cand` holds nothing of: a
        file whose new bytes fail to parse keeps its indexed version in live, but a candidate
        cut under other chunk settings does not take that version (a kept version is carried
        only as the chunks live holds, `assets.index_stage.unsafe_kept_versions`), nor a
        document that failed in the candidate alone. The gate judges only its questions; a
        robustness pass promoted such a candidate and the document left search without a word."""
        live = self.live()
        if live is None or cand.status != "building":
            return []
        held = {did for did, r in self.store.index_state(cand.id).items() if r.digest}
        missing = [did for did, r in self.store.index_state(live.id).items() if r.digest and did not in held]
        configured = set(self.cfg.source_names())
        docs = sorted(f"{d.source}:{d.external_id}" for d in self.store.get_documents(missing).values()
                      if d.deleted_at is None and d.source in configured)
        if not docs:
            return []
        shown = ", ".join(docs[:5]) + (f" and {len(docs) - 5:,} more" if len(docs) > 5 else "")
        return [f"candidate {cand.name} holds nothing of {len(docs):,} document{'s' if len(docs) != 1 else ''} "
                f"the live generation serves ({shown}): promoted, they leave search until a sync can write "
                "them (`bindery dlq` names those whose current bytes do not parse)"]

    # -- rollback ---------------------------------------------------------------------------

    def rollback(self, *, by: str | None = None) -> dict[str, Any]:
        """Restore the previous generation in one step; the one rolled back from becomes previous."""
        b = self.store.get_binding()
        if b is None or b.previous_generation_id is None:
            raise BindingError("nothing to roll back to: no previous generation is kept")
        prev = self.store.get_generation(b.previous_generation_id)
        if prev is None or prev.status == "dropped":
            raise BindingError(f"previous generation {b.previous_generation_id} no longer exists")
        who = operator_name(by)
        warnings = self._left_out(prev) + self._damage(prev)
        flip = bind_live(self.cfg, self.store, prev, by=who, previous_id=b.generation_id,
                         expect_live=b.generation_id, expect_previous=b.previous_generation_id)
        binding = flip.binding
        self.store.add_event("rollback", f"{who} rolled back from generation {b.generation_id} to {prev.id}")
        # the promote shape (docs/json-contract.md): no candidate was judged and no gate overridden;
        # the report says what happened instead of a gate's verdict
        why = f"rolled back from generation {b.generation_id} to {prev.id} by {who}; a rollback runs no gate"
        return {"promoted": True, "live": binding.generation_id, "previous": binding.previous_generation_id,
                "candidate": None, "forced": False,
                "report": {"rollback": True, "from": b.generation_id, "to": prev.id, "by": who, "reasons": [why]},
                "warnings": warnings, **flip.alias_keys()}

    def _damage(self, gen: GenerationRecord) -> list[str]:
        """Warnings for what a flip to `gen` will meet: a published snapshot gone (the query
        service keeps serving what it has open) or a working index that cannot be opened
        (searches read the published copy, every sync fails writing it). A rollback is what an
        operator reaches for in trouble, so it warns rather than refuses (an operator pass: it
        flipped in silence, then every sync failed)."""
        out = []
        if missing_snapshots(gen):
            out.append(f"generation {gen.name}'s published snapshot is missing: the query service keeps serving "
                       "the generation it has open, and `bindery query` fails, until `bindery verify --repair` "
                       "publishes it again")
        damage = working_index_damage(self.cfg, gen)
        if damage is not None and damage.checked:
            out.append(f"generation {gen.name}'s working index cannot be opened ({damage.reason}): searches read "
                       "its published copy, but every sync fails writing it until `bindery verify --repair` "
                       "rebuilds it from the store")
        elif damage is not None:
            out.append(f"generation {gen.name}'s working index could not be checked ({damage.reason}); "
                       "`bindery verify` checks it")
        return out

    def discard(self, *, by: str | None = None) -> dict[str, Any]:
        """Drop the candidate (`bindery discard`): one the gate refused, or a reindex no one will
        promote. Until then syncs keep writing to it and `bindery tune` will not build its trials."""
        cand = self.candidate()
        if cand is None:
            raise BindingError("no candidate generation to discard" + (
                " (the first build binds itself once indexed)" if self.first_build() else ""))
        who = operator_name(by)
        self.drop_candidate(cand.record, reason=f"discarded by {who}")
        return {"discarded": {"id": cand.id, "name": cand.name}, "by": who}

    # -- gc ---------------------------------------------------------------------------------

    def expired(self, now: float | None = None) -> list[GenerationRecord]:
        """Retired generations past the rollback window, or beyond `keep_generations`
        (counting the live and the previous one, which are never expired)."""
        b = self.store.get_binding()
        protected = {b.generation_id, b.previous_generation_id} if b else set()
        window = self.cfg.retention.rollback_window_hours * 3600
        now = time.time() if now is None else now
        retired = [g for g in self.store.generations(("retired",)) if g.id not in protected]
        keep_budget = max(self.cfg.retention.keep_generations - len(protected - {None}), 0)
        return [g for i, g in enumerate(sorted(retired, key=lambda g: g.retired_at or 0, reverse=True))
                if (now - (g.retired_at or 0)) > window or i >= keep_budget]

    def collect_garbage(self) -> list[str]:
        """Drop the expired generations (their indexes, snapshots and index state on every
        backend) and the chunk rows only they used; returns their names."""
        dropped = []
        for g in self.expired():
            # as `drop_candidate`: the row first (a promotion or rollback racing this one refuses
            # a dropped generation), then its files under its writer lock: a sync writing it (an
            # access change reaching the previous generations) finishes that write first and
            # writes no more once it sees the row dropped; without the lock, a paused sync wrote
            # a dropped generation's index back onto the disk after gc (a concurrency pass)
            if not self.store.drop_generation_row(g.id, statuses=("retired",)):
                continue  # bound again meanwhile: not expired any more
            self._drop_files(g.name)
            self.store.clear_index_state(g.id, list(self.store.index_state(g.id)))
            dropped.append(g.name)
        # the files of generations dropped before whose deletion did not happen (a writer held
        # the lock past the wait, a process killed between the row and the files): the row says
        # dropped, so nothing else would ever come back for them
        for g in self.store.generations(("dropped",)):
            if g.name not in dropped and GenerationPaths.of(self.cfg, g.name).root.exists():
                self._drop_files(g.name)
        if dropped:
            kept = {g.stage_versions["chunk"] for g in self.store.generations() if g.status != "dropped"}
            removed = self.store.drop_chunk_versions_except(kept)
            self.store.add_event("gc", f"dropped generations {', '.join(dropped)} "
                                       f"and {removed} chunk rows only they used")
        return dropped

    def _drop_files(self, name: str) -> None:
        """A dropped generation's files, under its writer lock; a writer that holds it past the
        wait leaves them to the next `bindery gc` (an event says so), never stops this one."""
        try:
            with writer_lock(self.cfg, name):
                drop_generation_files(self.cfg, name)
        except IndexError_ as e:
            self.store.add_event("gc-deferred", f"the files of dropped generation {name} are kept until the next "
                                                f"gc: {e}")

    def drop_candidate(self, gen: GenerationRecord, *, reason: str) -> None:
        """Drop a building generation no one will promote (a judged `bindery tune` trial, or the
        candidate `bindery discard` names): its files and index state go, its row stays as
        `dropped`. Its cached chunks and embeddings stay too (a later trial or reindex re-uses them;
        `bindery gc` removes what nothing uses)."""
        if gen.status not in ("building", "retired") or not self.store.drop_generation_row(
                gen.id, statuses=("building", "retired")):
            now = self.store.get_generation(gen.id)
            raise BindingError(f"generation {gen.name} is {now.status if now else gen.status}: only a candidate "
                               "can be dropped")
        # the row first: a promotion racing this one refuses a dropped generation (`flip_binding`)
        # before its files go; under its writer lock: a run writing to it finishes that write
        # first, and writes no more once it sees the row dropped (`index_stage._writing`)
        with writer_lock(self.cfg, gen.name):
            drop_generation_files(self.cfg, gen.name)
        self.store.clear_index_state(gen.id, list(self.store.index_state(gen.id)))
        self.store.add_event("candidate-dropped", f"candidate {gen.name} dropped: {reason}")
