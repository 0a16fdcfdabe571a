"""A small, real Bindery deployment under tmp_path: a folder source, a config file, an eval set,
and a helper that runs the `bindery` CLI in-process (the same Dagster jobs the UI runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from orchestration.cli import main

DOCS: dict[str, str] = {
    "robots/xr4471.md": """# XR-4471 warehouse robot

## Battery

The XR-4471 runs for 11 hours on one charge of its lithium iron phosphate pack.
Charging from empty to full takes 95 minutes on the CD-2 dock.

## Payload

Maximum payload is 35 kilograms, set by the `max_payload_kg` key in the fleet configuration.
""",
    "robots/xr5200.md": """# XR-5200 heavy carrier

## Battery

The XR-5200 carries a larger pack and operates for seven hours under full load.

## Safety

The carrier stops within 40 centimetres when its lidar sees an obstacle in the protective field.
""",
    "ops/firmware.md": """# Firmware rollback

## When to roll back

Roll back when a release such as v2.14.3 raises the error rate of the fleet above two percent.

## How

Run the rollback command from the fleet console and wait for every robot to report the old version.
""",
    "ops/oncall.txt": """On-call policy

Engineers on call acknowledge a page within fifteen minutes.
Escalate to the duty manager after thirty minutes without a fix.
Hand over the pager every Monday at nine in the morning.
""",
    "ops/errors.html": """<html><head><title>Error codes</title></head><body>
<nav><a href="/">Home</a> <a href="/wiki">Wiki</a> navigation chrome</nav>
<main><h1>Error codes</h1>
<h2>ERR-0x1F</h2><p>The drive controller lost its heartbeat. Power-cycle the robot and check the CAN bus cable.</p>
<h2>ERR-0x2A</h2><p>The lidar is dirty or blocked. Clean the window with a dry cloth.</p>
</main><footer>Copyright Northwind footer chrome</footer></body></html>
""",
    "people/lyon.md": """# Lyon office

The Lyon office moved to the Part-Dieu district in March. Visitors sign in at the ground floor desk.
The office hosts the robotics test lab with a twenty metre track.
""",
}

EVAL = [
    {"id": "battery", "query": "How long does the XR-4471 battery last?", "category": "lookup",
     "gold": [{"doc": "robots/xr4471.md", "text": "runs for 11 hours on one charge"}]},
    {"id": "payload", "query": "max_payload_kg", "category": "identifier",
     "gold": [{"doc": "robots/xr4471.md", "text": "maximum payload is 35 kilograms"}]},
    {"id": "stop", "query": "how quickly does the heavy carrier halt for obstacles", "category": "paraphrase",
     "gold": [{"doc": "robots/xr5200.md", "text": "stops within 40 centimetres"}]},
    {"id": "rollback", "query": "when should v2.14.3 be rolled back", "category": "identifier",
     "gold": [{"doc": "ops/firmware.md", "text": "raises the error rate of the fleet above two percent"}]},
    {"id": "oncall", "query": "how fast must the on-call engineer acknowledge a page", "category": "paraphrase",
     "gold": [{"doc": "ops/oncall.txt", "text": "acknowledge a page within fifteen minutes"}]},
    {"id": "err", "query": "ERR-0x1F", "category": "identifier",
     "gold": [{"doc": "ops/errors.html", "text": "drive controller lost its heartbeat"}]},
    {"id": "lyon", "query": "where did the Lyon office move", "category": "lookup",
     "gold": [{"doc": "people/lyon.md", "text": "moved to the part dieu district"}]},
    {"id": "lidar", "query": "lidar window blocked error", "category": "paraphrase",
     "gold": [{"doc": "ops/errors.html", "text": "clean the window with a dry cloth"}]},
]


class Deployment:
    def __init__(self, tmp: Path, **overrides: Any) -> None:
        self.root = tmp / "corpus"
        self.data = tmp / "data"
        self.config_path = tmp / "bindery.yaml"
        self.eval_path = tmp / "eval.jsonl"
        self.root.mkdir(parents=True, exist_ok=True)
        for rel, text in DOCS.items():
            self.write(rel, text)
        self.eval_path.write_text("".join(json.dumps({**c, "exclude_docs": []}) + "\n" for c in EVAL))
        self.config: dict[str, Any] = {
            "data_dir": str(self.data),
            "sources": [{"name": "docs", "kind": "local", "root": str(self.root), "min_ratio": 0.5}],
            "gate": {"queries": str(self.eval_path), "max_regressions": 0, "tolerance": 0.0},
            "query": {"poll_seconds": 0.1},
        }
        for k, v in overrides.items():
            self.config[k] = v
        self.save()

    def save(self) -> None:
        self.config_path.write_text(yaml.safe_dump(self.config))

    def write(self, rel: str, text: str | bytes) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
        return p

    def cli(self, *args: str, expect: int = 0) -> Any:
        """Run `bindery --json ARGS`, assert the exit code, return the parsed JSON."""
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["--config", str(self.config_path), "--json", *args])
        out = buf.getvalue()
        assert code == expect, f"bindery {' '.join(args)} exited {code}, expected {expect}: {out}"
        return json.loads(out) if out.strip() else None

    def set_stage(self, stage: str, **values: Any) -> None:
        self.config.setdefault("stages", {}).setdefault(stage, {}).update(values)
        self.save()
