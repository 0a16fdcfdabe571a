"""The package's import directions match the layer table in docs/architecture.md.

The table is the single statement of which folder may import which; this test reads it rather
than repeating it, so changing the rule means changing the document. Every import counts —
module-level, function-local and `TYPE_CHECKING` ones — because an upward import for types only
still couples a lower layer to a higher one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def allowed_imports() -> dict[str, set[str]]:
    """folder -> the project folders it may import, from the "## Layers" table."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not (m := re.fullmatch(r"`(\w+)/`", cells[0])):
            continue
        table[m.group(1)] = set(re.findall(r"`(\w+)`", cells[2]))
    return table


def imported_modules(path: Path) -> set[str]:
    """Absolute module names `path` imports anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def violations(table: dict[str, set[str]]) -> list[str]:
    """`file imports module` lines for every import the table does not allow."""
    bad: list[str] = []
    for folder, allowed in table.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.parts and "versions" in path.parts:
                continue  # generated Alembic revisions
            for module in sorted(imported_modules(path)):
                top = module.split(".")[0]
                if top in table and top != folder and top not in allowed:
                    bad.append(f"{path.relative_to(ROOT)} imports {module}")
    return bad


def test_table_covers_every_package_folder() -> None:
    table = allowed_imports()
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks"}
    assert packages <= set(table), f"folders missing from the layer table: {packages - set(table)}"
    assert table["connectors"] == set()
    assert table["assets"] == {"connectors", "quality"}


def test_imports_follow_the_layer_table() -> None:
    assert violations(allowed_imports()) == []


def test_connectors_and_query_service_do_not_import_dagster() -> None:
    """The bottom layer and the query service run outside Dagster (the API process, benchmarks)."""
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("connectors", "query_service")
        for p in (ROOT / folder).rglob("*.py")
        if any(m.split(".")[0] == "dagster" for m in imported_modules(p))
    ]
    assert offenders == []


def test_an_upward_import_is_reported(tmp_path: Path) -> None:
    """The checker itself can fail: a quality module importing assets is caught."""
    table = {"quality": {"connectors"}, "assets": {"connectors", "quality"}, "connectors": set()}
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from assets.parsing.types import ParseResult\n", encoding="utf-8")
    modules = imported_modules(probe)
    assert "assets.parsing.types" in modules
    top = {m.split(".")[0] for m in modules}
    assert "assets" in top and "assets" not in table["quality"]
