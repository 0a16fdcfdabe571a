"""Bindery's current default pipeline on the dev eval sets: one sync and one eval per set.

    python -m benchmarks.devsets_eval [--corpora DIR] [--work DIR] [SET ...]

For each set, writes the same configuration ``benchmarks.ingest`` writes (one local source at
``CORPORA/SET``, ``data_dir`` under ``WORK/SET``, the gate's queries = ``evalsets/SET.jsonl``,
defaults for everything else), runs ``bindery sync`` and ``bindery eval``, and prints recall@10 and
MRR@10 overall and per category. Unlike ``benchmarks.ingest`` it times nothing and does not embed
the corpus a second time, so it costs one sync per set; the data dir is kept, so a second run
with an unchanged configuration re-uses every stored parse, chunk and embedding. Results go to
``WORK/SET/eval.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import yaml

from benchmarks.corpora.evalset_tools import CORPUS_OF
from orchestration.cli import main as cli

_OWN_DAGSTER_HOME = os.environ.get("DAGSTER_HOME")  # set by the caller: then every set shares it
EVALSETS = Path(__file__).resolve().parent / "evalsets"
DEFAULT_CORPORA = Path.home() / ".cache" / "bench-corpora"
# sets that ask another set's questions of their own corpus (the same documents, scanned)
QUERIES_OF = {"pdf_scanned": "pdf_docs", "python_faq_site": "python_faq"}


def _cli(config: Path, *args: str) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli(["--config", str(config), "--json", *args])
    out: dict[str, Any] = json.loads(buf.getvalue() or "{}")
    if code != 0:
        raise SystemExit(f"bindery {' '.join(args)} exited {code}: {out.get('error')}")
    return out


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set dotted keys from ``KEY=VALUE`` strings (VALUE read as YAML), e.g.
    ``query.max_chunks_per_doc=0`` or ``stages.context.provider=none``."""
    for item in overrides:
        key, _, raw = item.partition("=")
        *path, leaf = key.split(".")
        node = config
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw)
    return config


def run_set(name: str, corpora: Path, work: Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Sync ``corpora/name`` into ``work/name`` and evaluate it on ``evalsets/name.jsonl`` (or
    the set's whose questions it asks, ``QUERIES_OF``)."""
    here = work / name
    here.mkdir(parents=True, exist_ok=True)
    config = here / "bindery.yaml"
    config.write_text(yaml.safe_dump(apply_overrides({
        "data_dir": str((here / "data").resolve()),
        "sources": [{"name": name, "kind": "local", "root": str((corpora / CORPUS_OF.get(name, name)).resolve())}],
        "gate": {"queries": str(EVALSETS / f"{QUERIES_OF.get(name, name)}.jsonl")},
    }, overrides or [])))
    # Bindery keeps its Dagster instance under the data dir and exports DAGSTER_HOME on first use;
    # drop what the previous set exported so each set runs on its own instance.
    if _OWN_DAGSTER_HOME is None:
        os.environ.pop("DAGSTER_HOME", None)
    sync = _cli(config, "sync")
    result = {"set": name, "sync": sync, "eval": _cli(config, "eval")}
    (here / "eval.json").write_text(json.dumps(result, indent=2))
    return result


def _row(result: dict[str, Any]) -> str:
    ev = result["eval"]
    m = ev["metrics"]
    cats = "  ".join(f"{c} {v['recall@10']:.3f}·{v['mrr@10']:.3f}" for c, v in ev.get("by_category", {}).items())
    return f"{result['set']:<16} {ev['cases']:>4}  {m['recall@10']:.3f}·{m['mrr@10']:.3f}   {cats}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sets", nargs="*", help="set names (default: every evalsets/*.jsonl)")
    p.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    p.add_argument("--work", type=Path, default=Path("bench-out") / "devsets")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (dotted, YAML value); repeatable")
    a = p.parse_args(argv)
    names = a.sets or sorted([x.stem for x in EVALSETS.glob("*.jsonl")] + list(QUERIES_OF))
    print("set              cases recall@10·MRR@10  per category")
    for name in names:
        print(_row(run_set(name, a.corpora, a.work, a.overrides)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
