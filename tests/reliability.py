"""`make reliability`: the long runs of the reliability checks, and one table of what they found.

    python -m tests.reliability [--kills N] [--fuzz-examples N] [--examples N] [--steps N]

1. SIGKILL trials: a real `bindery sync` subprocess kills itself (SIGKILL) between two exact
   writes (the hooks of tests/test_crash_recovery.py) after a round of changes; a re-sync must
   leave no orphan (chunk rows of deleted documents, chunk ids in an index but not in the store
   or the reverse, a drifted ACL) and `bindery verify` must agree.
2. Fuzzing: tests/test_query_fuzz.py with many more examples per operation.
3. The lifecycle state machine (tests/lifecycle.py), random, longer, with real SIGKILLs too.
4. ACL probes: every probe the state machine made through the real query path, and the leaks.

Exits 1 when any count that must be zero is not.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def sigkill_trials(n: int) -> tuple[int, int, list[str]]:
    """(trials, trials with orphans or drift after the re-sync, notes)."""
    from tests.sync_helpers import index_sets, orphan_chunk_rows
    from tests.test_crash_recovery import HOOKS, CrashDeployment, _change_everything

    hooks = ["purge", "publish", "index-state", "snapshot-recorded"]
    bad, notes = 0, []
    for i in range(n):
        hook = hooks[i % len(hooks)]
        with tempfile.TemporaryDirectory(prefix="bindery-kill-") as tmp:
            dep = CrashDeployment(Path(tmp))
            dep.cli("sync")
            _change_everything(dep)
            dep.crash_at_hook(hook)
            dep.cli("sync")
            sets = index_sets(dep)
            orphans = (orphan_chunk_rows(dep) + len(sets["store"] ^ sets["vector"])
                       + len(sets["store"] ^ sets["keyword"]))
            try:
                consistent = dep.cli("verify")["consistent"]
            except AssertionError:  # verify exits 1 when the indexes drifted
                consistent = False
            if orphans or not consistent:
                bad += 1
                notes.append(f"kill at {hook} ({HOOKS[hook]}): {orphans} orphans, verify consistent={consistent}")
    return n, bad, notes


def fuzz(examples: int) -> tuple[int, int, list[str]]:
    """tests/test_query_fuzz.py in a pytest subprocess (its own warnings filters and plugins)."""
    import json
    import subprocess

    with tempfile.TemporaryDirectory(prefix="bindery-fuzz-") as tmp:
        report = Path(tmp) / "fuzz.json"
        env = {**os.environ, "BINDERY_FUZZ_EXAMPLES": str(examples), "BINDERY_FUZZ_REPORT": str(report),
               "PYTHONPATH": str(REPO)}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(REPO / "tests" / "test_query_fuzz.py")], env=env, cwd=REPO,
                              capture_output=True, text=True)
        counts = json.loads(report.read_text()) if report.exists() else {}
    notes = [] if proc.returncode == 0 else [f"fuzzing exited {proc.returncode}:\n{proc.stdout[-3000:]}"]
    return int(counts.get("requests", 0)), int(counts.get("5xx", 0)), notes


def state_machine(examples: int, steps: int) -> tuple[Any, int, list[str]]:
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from tests.lifecycle import Lifecycle

    Lifecycle.REAL_KILL = True
    try:
        run_state_machine_as_test(Lifecycle, settings=settings(
            max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
            suppress_health_check=list(HealthCheck)))
    except BaseException as e:  # report it in the table, with the sequence Hypothesis printed
        return None, 1, [f"state machine: {type(e).__name__}: {e}"[:2000], traceback.format_exc()[-3000:]]
    return None, 0, []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.reliability")
    p.add_argument("--kills", type=int, default=4)
    p.add_argument("--fuzz-examples", type=int, default=300)
    p.add_argument("--examples", type=int, default=6)
    p.add_argument("--steps", type=int, default=25)
    a = p.parse_args(argv)
    for k, v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                 "DO_NOT_TRACK": "1", "UNSTRUCTURED_DISABLE_NOTICE": "1"}.items():
        os.environ.setdefault(k, v)
    from tests.lifecycle import STATS

    started = time.monotonic()
    rows, notes = [], []
    kills, orphaned, n1 = sigkill_trials(a.kills)
    rows.append(("SIGKILL trials / trials with orphans after re-sync", kills, orphaned))
    requests, errors5xx, n2 = fuzz(a.fuzz_examples)
    rows.append(("fuzzed requests / 5xx", requests, errors5xx + (1 if n2 else 0)))
    _, violations, n3 = state_machine(a.examples, a.steps)
    rows.append(("state-machine steps / invariant violations", STATS["steps"], violations))
    rows.append(("ACL probes / leaks", STATS["acl_probes"], STATS["acl_leaks"]))
    notes += n1 + n2 + n3
    width = max(len(r[0]) for r in rows)
    print(f"\n{'check':<{width}}  {'count':>8}  {'must be 0':>9}")
    for name, count, zero in rows:
        print(f"{name:<{width}}  {count:>8}  {zero:>9}")
    extra = {k: v for k, v in STATS.items() if k not in ("steps", "acl_probes", "acl_leaks")}
    print(f"(state machine: {dict(sorted(extra.items()))}; {time.monotonic() - started:.0f} s in all)")
    for n in notes:
        print(n, file=sys.stderr)
    return 1 if any(zero for _, _, zero in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
