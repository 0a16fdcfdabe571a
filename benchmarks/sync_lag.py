"""How cheap is staying in sync? Measured on a generated folder source, in ONE run.

    python -m benchmarks.sync_lag [--docs 2000] [--words 150] [--work DIR] [--repeats 3] [--cold]

Reports:
(a) the first sync (everything new) and a no-op reconciliation sync (nothing changed), both
    through the CLI (`bindery --json sync`, in-process, the same Dagster job the UI runs), the
    no-op as seconds and as a share of the first, with per-step wall times of the no-op run
    from the Dagster instance;
(b) sensor-to-searchable lag for one changed file: modify one file, evaluate the source-change
    sensor (it must request exactly one run), run that sync through the CLI
    (`bindery sync --source S`), then poll `bindery query` (GenerationRetriever on the live
    generation) until it returns the new text. Timed from the write; the sensor's polling
    interval (minimum_interval_seconds, >= 5 s) comes on top in a deployment. `--cold` also
    measures the same with the sync in a fresh `bindery` subprocess (imports + model load),
    which is what a daemon-launched run pays.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import dagster as dg
import yaml

from assets.resources import BinderyConfigResource
from connectors.config import load_config
from orchestration.automation import build_sensor
from orchestration.cli import main as cli
from orchestration.instance import get_instance

_VOCAB = """robot battery dock charge fleet firmware rollback sensor lidar obstacle payload warehouse aisle shelf
pallet conveyor belt motor wheel bearing inspection maintenance schedule operator console alert threshold
temperature voltage current controller heartbeat network gateway update release version safety field stop
distance speed route map zone charging station queue order picking packing shipping inventory scanner barcode
label camera calibration torque gearbox encoder software hardware incident report escalation engineer shift
handover checklist procedure policy training"""
WORDS = tuple(_VOCAB.split())


def generate(root: Path, n: int, words: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        sub = root / f"area{i % 20:02}"
        sub.mkdir(exist_ok=True)
        body = []
        left = words
        while left > 0:
            k = min(left, rnd.randint(12, 24))
            body.append(" ".join(rnd.choice(WORDS) for _ in range(k)).capitalize() + ".")
            left -= k
        half = len(body) // 2
        text = (f"# Note {i:04} on {rnd.choice(WORDS)} {rnd.choice(WORDS)}\n\n## Summary\n\n"
                + " ".join(body[:half]) + "\n\n## Details\n\n" + " ".join(body[half:]) + "\n")
        (sub / f"note-{i:04}.md").write_text(text)


def _cli(config: Path, *args: str) -> tuple[Any, float]:
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        code = cli(["--config", str(config), "--json", *args])
    dt = time.perf_counter() - t0
    out = json.loads(buf.getvalue() or "null")
    if code != 0:
        raise SystemExit(f"bindery {' '.join(args)} exited {code}: {out}")
    return out, dt


def _step_seconds(instance: dg.DagsterInstance) -> dict[str, float]:
    run = instance.get_runs(limit=1)[0]
    return {s.step_key: round((s.end_time or 0) - (s.start_time or 0), 3)
            for s in instance.get_run_step_stats(run.run_id)}


class SensorTicker:
    def __init__(self, config: Path) -> None:
        self.cfg = load_config(config)
        self.config = config
        self.sensor = build_sensor(False, 30)
        self.cursor: str | None = None

    def tick(self) -> tuple[list[dg.RunRequest], float]:
        instance = get_instance(self.cfg)
        t0 = time.perf_counter()
        with dg.build_sensor_context(instance=instance, cursor=self.cursor,
                                     resources={"bindery": BinderyConfigResource(config_path=str(self.config))}) as ctx:
            result = self.sensor(ctx)
        dt = time.perf_counter() - t0
        assert isinstance(result, dg.SensorResult)
        self.cursor = result.cursor
        for req in result.dynamic_partitions_requests or []:
            if isinstance(req, dg.AddDynamicPartitionsRequest):
                instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        return list(result.run_requests or []), dt


def _wait_searchable(config: Path, token: str, timeout: float = 300.0) -> tuple[float, int]:
    """Poll `bindery query` until a hit contains `token`; (seconds spent, queries made)."""
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < timeout:
        n += 1
        out, _ = _cli(config, "query", token, "-k", "3")
        if any(token in h["text"] for h in out["hits"]):
            return time.perf_counter() - t0, n
        time.sleep(0.05)
    raise SystemExit(f"{token!r} not searchable after {timeout} s")


def _lag(config: Path, root: Path, ticker: SensorTicker, n: int, cold: bool) -> dict[str, Any]:
    target = root / "area07" / "note-0007.md"
    token = f"zq{n}marker{int(time.time()) % 100000}"
    with target.open("a") as f:
        f.write(f"\nThe replacement gasket part number is {token} for the left drive wheel.\n")
    t_mod = time.perf_counter()
    runs, t_tick = ticker.tick()
    if len(runs) != 1:
        raise SystemExit(f"the sensor requested {len(runs)} runs for one changed file, expected exactly 1")
    t_sensed = time.perf_counter()
    if cold:
        env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
        proc = subprocess.run([str(Path(sys.executable).parent / "bindery"), "--config", str(config), "--json",
                               "sync", "--source", str(runs[0].partition_key)],
                              capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"cold sync failed: {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout)
    else:
        out, _ = _cli(config, "sync", "--source", str(runs[0].partition_key))
    t_synced = time.perf_counter()
    t_query, queries = _wait_searchable(config, token)
    t_done = time.perf_counter()
    return {"mode": "cold subprocess" if cold else "warm in-process", "sensor_tick_s": round(t_tick, 3),
            "sync_s": round(t_synced - t_sensed, 3), "query_until_found_s": round(t_query, 3),
            "queries": queries, "lag_s": round(t_done - t_mod, 3),
            "sync_counts": out["sources"], "recomputed": out["recomputed"]}


def run(n: int, words: int, work: Path, repeats: int, cold: bool) -> dict[str, Any]:
    root = work / "corpus"
    t0 = time.perf_counter()
    generate(root, n, words)
    t_gen = time.perf_counter() - t0
    config = work / "bindery.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(work / "data"),
                                      "sources": [{"name": "notes", "kind": "local", "root": str(root)}]}))
    cfg = load_config(config)

    first, t_first = _cli(config, "sync")
    instance = get_instance(cfg)
    first_steps = _step_seconds(instance)
    noops, noop_steps = [], []
    for _ in range(max(1, repeats)):
        out, dt = _cli(config, "sync")
        if any(out["recomputed"].values()) or out["written"]["documents"]:
            raise SystemExit(f"the no-op sync recomputed something: {out}")
        noops.append(dt)
        noop_steps.append(_step_seconds(instance))
    t_noop = statistics.median(noops)

    ticker = SensorTicker(config)
    _, t_tick0 = ticker.tick()  # the cursor's baseline (first tick requests a run per source)
    runs2, t_tick_idle = ticker.tick()
    if runs2:
        raise SystemExit("the sensor requested a run with nothing changed")
    lags = [_lag(config, root, ticker, i, cold=False) for i in range(max(1, repeats))]
    if cold:
        lags.append(_lag(config, root, ticker, 99, cold=True))

    status, _ = _cli(config, "status")
    return {
        "documents": status["documents"], "chunks": status["chunks"], "words_per_doc": words,
        "generate_s": round(t_gen, 2),
        "first_sync_s": round(t_first, 2), "first_sync_steps_s": first_steps,
        "first_recomputed": first["recomputed"],
        "noop_sync_s": round(t_noop, 3), "noop_sync_runs_s": [round(x, 3) for x in noops],
        "noop_over_first": round(t_noop / t_first, 4), "noop_steps_s": noop_steps[len(noop_steps) // 2],
        "sensor_first_tick_s": round(t_tick0, 3), "sensor_idle_tick_s": round(t_tick_idle, 3),
        "lag": lags,
        "lag_warm_median_s": round(statistics.median(x["lag_s"] for x in lags if x["mode"].startswith("warm")), 3),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--words", type=int, default=150)
    p.add_argument("--work", type=Path)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cold", action="store_true", help="also measure the lag with the sync in a fresh subprocess")
    a = p.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="bindery-sync-lag-"))
    work.mkdir(parents=True, exist_ok=True)
    result = run(a.docs, a.words, work, a.repeats, a.cold)
    result["work"] = str(work)
    (work / "sync_lag.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
