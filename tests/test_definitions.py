"""A snapshot of the Dagster wiring, so a change to assets, checks, jobs, sensors or schedules
is visible in review, and the layering rules of the design hold."""

from __future__ import annotations

import ast
from pathlib import Path

import dagster as dg

from orchestration.definitions import build_definitions

ROOT = Path(__file__).resolve().parent.parent


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
    assert sorted(j.name for j in defs.jobs) == ["plan", "promote", "reindex", "sync", "tune"]  # type: ignore[union-attr]
    assert [s.name for s in defs.sensors] == ["source_change_sensor"]  # type: ignore[union-attr]
    assert [s.name for s in defs.schedules] == ["reconcile_schedule"]  # type: ignore[union-attr]
    reindex = defs.resolve_job_def("reindex")
    assert reindex.tags["bindery/target"] == "candidate"
    spec = graph.get(dg.AssetKey("vector_index"))
    assert spec.partitions_def is not None and spec.partitions_def.name == "sources"  # type: ignore[attr-defined]


def test_sensor_and_schedule_follow_configuration(tmp_path: Path) -> None:
    cfg = tmp_path / "bindery.yaml"
    cfg.write_text(f"data_dir: {tmp_path}/data\nsources: []\nautomation: {{sensor: true}}\n")
    defs = build_definitions(str(cfg))
    sensor = next(iter(defs.sensors or []))
    schedule = next(iter(defs.schedules or []))
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED


LAYERS = {  # package -> packages it may import (DESIGN.md, "Layout")
    "connectors": {"connectors"},
    "quality": {"quality", "connectors"},
    "assets": {"assets", "connectors", "quality"},
    "evals": {"evals", "connectors", "query_service"},
    "query_service": {"query_service", "connectors"},
}
OURS = {"connectors", "quality", "assets", "evals", "query_service", "orchestration"}


def test_layering_rules_hold() -> None:
    problems = []
    for pkg, allowed in LAYERS.items():
        for path in (ROOT / pkg).rglob("*.py"):
            tree = ast.parse(path.read_text())
            typing_only = {id(n) for blk in ast.walk(tree) if isinstance(blk, ast.If)
                           and "TYPE_CHECKING" in ast.unparse(blk.test) for n in ast.walk(blk)}
            for node in ast.walk(tree):
                if id(node) in typing_only:
                    continue
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top in OURS and top not in allowed:
                        problems.append(f"{path.relative_to(ROOT)} imports {name}")
                    if pkg in ("connectors", "query_service") and top == "dagster":
                        problems.append(f"{path.relative_to(ROOT)} imports dagster")
    assert problems == []
