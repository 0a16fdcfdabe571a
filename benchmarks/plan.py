"""`bindery plan` against the run it predicts, measured in ONE run so the ratio survives a noisy
machine.

    python -m benchmarks.plan --corpus DIR [--work DIR] [--edits N] [--cli] [--repeats N] [--ocr]

On a copy of the corpus: plan then first sync; then N edits, one add, one delete and one move,
plan then sync again. Reports for each round whether the plan's counts equal the sync's
(`recomputed`, `written`, change classes) and the plan's wall time as a share of the sync's.

In one process by default (the plan's own cost). `--cli` runs each command as its own `bindery`
process, as an operator types them, so interpreter start-up, imports and exit count on both
sides. `--repeats N` starts over from an empty data dir N times and reports the medians.
Scanned pages are estimated by the plan (`scans_estimated` in each round; their counts differ
from the sync's) unless `--ocr` has it read them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import yaml

from orchestration.cli import main as cli

_CLI = False  # --cli: each command in a fresh `bindery` process
_PLAN_ARGS: list[str] = []  # --ocr: the plan reads scanned pages (exact counts) rather than estimate them


def _command() -> list[str]:
    script = Path(sys.executable).with_name("bindery")  # the console script, as installed
    return [str(script)] if script.exists() else [sys.executable, "-m", "orchestration.cli"]


def _timed(config: Path, *args: str) -> tuple[dict[str, Any], float]:
    if _CLI:
        t0 = time.perf_counter()
        done = subprocess.run([*_command(), "--config", str(config), "--json", *args],
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"bindery {' '.join(args)} exited {done.returncode}: {done.stdout[:500]}{done.stderr[-500:]}")
        return json.loads(done.stdout), seconds
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = cli(["--config", str(config), "--json", *args])
    seconds = time.perf_counter() - t0
    if code != 0:
        sys.exit(f"bindery {' '.join(args)} exited {code}: {buf.getvalue()[:500]}")
    return json.loads(buf.getvalue()), seconds


def _round(config: Path) -> dict[str, Any]:
    plan, plan_s = _timed(config, "plan", *_PLAN_ARGS)
    sync, sync_s = _timed(config, "sync")
    changes = {name: {k: v for k, v in s["changes"].items() if k in sync["sources"][name]}
               for name, s in plan["sources"].items()}
    return {"plan_seconds": round(plan_s, 2), "sync_seconds": round(sync_s, 2),
            "plan_share": round(plan_s / sync_s, 4),
            "counts_equal": plan["recomputed"] == sync["recomputed"] and plan["written"] == sync["written"]
            and changes == sync["sources"],
            "recomputed": sync["recomputed"], "plan_recomputed": plan["recomputed"],
            "scans_estimated": plan["scans_estimated"]}


def _edit(root: Path, n: int) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".txt", ".rst", ".html"))
    for p in files[:n]:
        p.write_text(p.read_text(errors="replace") + "\n\nAn added closing paragraph about maintenance windows.\n")
    (root / "bench-added.md").write_text("# Added\n\nA new page about the loading dock scheduler.\n")
    if len(files) > n + 1:
        files[n].unlink()
        files[n + 1].rename(files[n + 1].with_name("moved-" + files[n + 1].name))


def _once(corpus: Path, work: Path, edits: int) -> dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    root = work / "corpus"
    shutil.copytree(corpus, root)
    config = work / "bindery.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str((work / "data").resolve()),
                                      "sources": [{"name": "docs", "root": str(root.resolve())}]}))
    first = _round(config)
    _edit(root, edits)
    return {"first_sync": first, "after_edits": _round(config)}


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("first_sync", "after_edits"):
        rounds = [r[key] for r in runs]
        out[key] = {"plan_seconds": round(statistics.median(r["plan_seconds"] for r in rounds), 2),
                    "sync_seconds": round(statistics.median(r["sync_seconds"] for r in rounds), 2),
                    "plan_share": round(statistics.median(r["plan_share"] for r in rounds), 4),
                    "plan_shares": [r["plan_share"] for r in rounds],
                    "counts_equal": all(r["counts_equal"] for r in rounds)}
    return out


def main() -> None:
    global _CLI
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--work", type=Path, default=Path("bench-out/plan"))
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="each command as its own bindery process")
    ap.add_argument("--repeats", type=int, default=1, help="runs from an empty data dir; medians reported")
    ap.add_argument("--ocr", action="store_true", help="plan with --ocr: scanned pages read, counts exact")
    a = ap.parse_args()
    _CLI = a.cli
    _PLAN_ARGS[:] = ["--ocr"] if a.ocr else []
    runs = [_once(a.corpus, a.work, a.edits) for _ in range(max(1, a.repeats))]
    result = runs[0] if len(runs) == 1 else {"medians": _medians(runs), "runs": runs}
    print(json.dumps({"mode": "cli" if a.cli else "in-process", **result}, indent=2))


if __name__ == "__main__":
    main()
