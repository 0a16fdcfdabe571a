"""A snapshot of the Dagster wiring, so a change to assets, checks, jobs, sensors or schedules
is visible in review (the layering rules are in tests/test_layers.py)."""

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
        "chunks", "contextual_prefixes", "embeddings", "generation_eval", "index_binding", "keyword_index",
        "parsed_documents", "source_listing", "vector_index"]
    checks = sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys)
    assert checks == ["generation_eval:eval_gate", "parsed_documents:parse_quality"]
    assert defs.jobs is not None and defs.sensors is not None and defs.schedules is not None
    assert sorted(j.name for j in defs.jobs) == ["plan", "promote", "reindex", "sync", "tune"]
    assert [s.name for s in defs.sensors] == ["source_change_sensor"]
    assert [s.name for s in defs.schedules] == ["reconcile_schedule"]
    reindex = defs.resolve_job_def("reindex")
    assert reindex.tags["bindery/target"] == "candidate"
    spec = graph.get(dg.AssetKey("vector_index"))
    assert isinstance(spec.partitions_def, dg.DynamicPartitionsDefinition) and spec.partitions_def.name == "sources"


def test_sensor_and_schedule_follow_configuration(tmp_path: Path) -> None:
    cfg = tmp_path / "bindery.yaml"
    cfg.write_text(f"data_dir: {tmp_path}/data\nsources: []\nautomation: {{sensor: true}}\n")
    defs = build_definitions(str(cfg))
    sensor = next(iter(defs.sensors or []))
    schedule = next(iter(defs.schedules or []))
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
