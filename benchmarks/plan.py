"""`bindery plan` against the run it predicts, measured in ONE run so the ratio survives a noisy
machine.

    python -m benchmarks.plan --corpus DIR [--work DIR] [--edits N]

On a copy of the corpus: plan then first sync; then N edits, one add, one delete and one move,
plan then sync again. Reports for each round whether the plan's counts equal the sync's
(`recomputed`, `written`, change classes) and the plan's wall time as a share of the sync's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import yaml

from orchestration.cli import main as cli


def _timed(config: Path, *args: str) -> tuple[dict[str, Any], float]:
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = cli(["--config", str(config), "--json", *args])
    seconds = time.perf_counter() - t0
    if code != 0:
        sys.exit(f"bindery {' '.join(args)} exited {code}: {buf.getvalue()[:500]}")
    return json.loads(buf.getvalue()), seconds


def _round(config: Path) -> dict[str, Any]:
    plan, plan_s = _timed(config, "plan")
    sync, sync_s = _timed(config, "sync")
    changes = {name: {k: v for k, v in s["changes"].items() if k in sync["sources"][name]}
               for name, s in plan["sources"].items()}
    return {"plan_seconds": round(plan_s, 2), "sync_seconds": round(sync_s, 2),
            "plan_share": round(plan_s / sync_s, 4),
            "counts_equal": plan["recomputed"] == sync["recomputed"] and plan["written"] == sync["written"]
            and changes == sync["sources"],
            "recomputed": sync["recomputed"], "plan_recomputed": plan["recomputed"]}


def _edit(root: Path, n: int) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".txt", ".rst", ".html"))
    for p in files[:n]:
        p.write_text(p.read_text(errors="replace") + "\n\nAn added closing paragraph about maintenance windows.\n")
    (root / "bench-added.md").write_text("# Added\n\nA new page about the loading dock scheduler.\n")
    if len(files) > n + 1:
        files[n].unlink()
        files[n + 1].rename(files[n + 1].with_name("moved-" + files[n + 1].name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--work", type=Path, default=Path("bench-out/plan"))
    ap.add_argument("--edits", type=int, default=5)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    root = a.work / "corpus"
    shutil.copytree(a.corpus, root)
    config = a.work / "bindery.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str((a.work / "data").resolve()),
                                      "sources": [{"name": "docs", "root": str(root.resolve())}]}))
    first = _round(config)
    _edit(root, a.edits)
    second = _round(config)
    print(json.dumps({"first_sync": first, "after_edits": second}, indent=2))


if __name__ == "__main__":
    main()
