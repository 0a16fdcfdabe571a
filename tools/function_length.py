"""Fail when a function is longer than the project's limit (docs/architecture.md, "Code health").

ruff's C901 bounds complexity; this bounds length, which complexity misses (a long, flat
function is as hard to hold in one's head). A function's length runs from its `def` line to its
last line, decorators and docstring excluded from neither count nor exemption: a function that
must stay long says why with `# length: <reason>` on its `def` line.

    python tools/function_length.py [--max 80] [paths...]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

DEFAULT_PATHS = ("assets", "connectors", "quality", "evals", "query_service", "orchestration", "benchmarks",
                 "tests", "tools")
SKIP = ("migrations/versions",)


def long_functions(path: Path, limit: int) -> list[tuple[int, str, int]]:
    """(line, name, length) of each function in `path` over `limit` lines without a reason."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            length = node.end_lineno - node.lineno + 1
            if length > limit and "# length:" not in lines[node.lineno - 1]:
                found.append((node.lineno, node.name, length))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("paths", nargs="*", default=DEFAULT_PATHS)
    args = ap.parse_args(argv)
    bad = 0
    for root in args.paths:
        for path in sorted(Path(root).rglob("*.py")):
            if any(s in path.as_posix() for s in SKIP):
                continue
            for line, name, length in long_functions(path, args.max):
                print(f"{path}:{line}: {name} is {length} lines (limit {args.max})")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
