"""A snapshot of the Dagster wiring, so a change to assets, checks, jobs, sensors, schedules or
resources is visible in review (the layering rules are in tests/test_layers.py)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from orchestration.definitions import build_definitions


def test_definitions_snapshot(tmp_path: Path) -> None:
    cfg = tmp_path / "bindery.yaml"
    cfg.write_text(f"data_dir: {tmp_path}/data\nsources: [{{name: docs, kind: local, root: {tmp_path}}}]\n")
    defs = build_definitions(str(cfg))
    graph = defs.resolve_asset_graph()
    assert sorted(k.to_user_string() for k in graph.get_all_asset_keys()) == [
        "chunks", "contextual_prefixes", "embeddings", "generation", "generation_eval", "index_binding",
        "keyword_index", "parsed_documents", "source_listing", "vector_index"]
    checks = sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys)
    assert checks == ["generation_eval:eval_gate", "parsed_documents:parse_quality"]
    assert defs.jobs is not None and defs.sensors is not None and defs.schedules is not None
    assert sorted(j.name for j in defs.jobs) == ["plan", "promote", "reindex", "rollback", "sync", "tune"]
    assert [s.name for s in defs.sensors] == ["source_change_sensor"]
    assert [s.name for s in defs.schedules] == ["reconcile_schedule"]
    reindex = defs.resolve_job_def("reindex")
    assert reindex.tags["bindery/target"] == "candidate"
    spec = graph.get(dg.AssetKey("vector_index"))
    assert isinstance(spec.partitions_def, dg.DynamicPartitionsDefinition) and spec.partitions_def.name == "sources"
    # each generation's builds, verdicts and flips are its own: one partition per generation
    for key in ("generation", "generation_eval", "index_binding"):
        node = graph.get(dg.AssetKey(key))
        assert isinstance(node.partitions_def, dg.DynamicPartitionsDefinition), key
        assert node.partitions_def.name == "generations", key
    assert not graph.get(dg.AssetKey("generation")).is_executable  # recorded by the index step
    promote = defs.resolve_job_def("promote")
    assert isinstance(promote.partitions_def, dg.DynamicPartitionsDefinition)
    assert promote.partitions_def.name == "generations"


def test_one_resource_per_outside_system(tmp_path: Path) -> None:
    """The resources, and which asset reaches which outside system: a stage that starts using
    another system shows up here (and in the UI's resource view)."""
    cfg = tmp_path / "bindery.yaml"
    cfg.write_text(f"data_dir: {tmp_path}/data\nsources: [{{name: docs, kind: local, root: {tmp_path}}}]\n")
    defs = build_definitions(str(cfg))
    assert sorted(defs.resources or {}) == ["bindery", "contextualiser", "embedder", "keyword_index", "store",
                                            "vector_index"]
    graph = defs.resolve_asset_graph()
    uses = {k.to_user_string(): sorted(defs.resolve_assets_def(k).required_resource_keys - {"io_manager"})
            for k in graph.get_all_asset_keys()}
    assert uses == {
        # a listing that narrows access and then stops, and a run the parse-quality check
        # blocks, carry their access changes and deletes into the indexes themselves
        "source_listing": ["bindery", "keyword_index", "store", "vector_index"],
        "parsed_documents": ["bindery", "keyword_index", "store", "vector_index"],
        "chunks": ["bindery", "store"], "contextual_prefixes": ["bindery", "contextualiser", "store"],
        "embeddings": ["bindery", "embedder", "store"],
        "vector_index": ["bindery", "keyword_index", "store", "vector_index"],
        "keyword_index": ["bindery", "keyword_index", "store", "vector_index"],
        "generation": [], "generation_eval": ["bindery", "store"], "index_binding": ["bindery", "store"],
    }
    for job in ("plan", "tune", "rollback"):
        assert sorted(defs.resolve_job_def(job).required_resource_keys - {"io_manager"}) == ["bindery", "store"]


def test_sensor_and_schedule_follow_configuration(tmp_path: Path) -> None:
    cfg = tmp_path / "bindery.yaml"
    cfg.write_text(f"data_dir: {tmp_path}/data\nsources: []\nautomation: {{sensor: true}}\n")
    defs = build_definitions(str(cfg))
    sensor = next(iter(defs.sensors or []))
    schedule = next(iter(defs.schedules or []))
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
