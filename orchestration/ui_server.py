"""`bindery ui`'s processes: Dagster's `dagster dev`, its webserver behind a Host check.

The Dagster UI has no sign-in and answered any Host header, so a web page the operator merely
opened could reach a UI bound to loopback under a name of the page's choosing (DNS rebinding)
and read what the UI shows (dead-letter paths and reasons) or launch runs (an attacker pass).
The query service refuses such names (`query_service.middleware.HostCheck`); the UI now does
the same. `dagster dev` starts its webserver as `python -m dagster_webserver`; run through
`main` it starts this module's `webserver` instead, which builds Dagster's own app and puts the
Host check in front of it. Both hooks are Dagster internals (the version is pinned in
requirements.lock): a Dagster that no longer has them stops here with an error rather than
serve an unguarded UI, and tests/test_ui_lifecycle.py fails if the check stops taking effect.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

ALLOWED_HOSTS_ENV = "BINDERY_UI_ALLOWED_HOSTS"  # a JSON list; unset: any host (not on loopback)

_WEBSERVER = ["-m", "dagster_webserver"]


def _allowed_hosts() -> list[str] | None:
    raw = os.environ.get(ALLOWED_HOSTS_ENV)
    return None if raw is None else [str(h) for h in json.loads(raw)]


def _hook(module: Any, name: str, wrap: Callable[[Any], Any] | None = None) -> Any:
    """`module.name` (replaced by `wrap(module.name)` when given), or an error naming what
    changed: never a UI without its Host check."""
    if not hasattr(module, name):
        raise SystemExit(f"bindery ui: this Dagster has no {module.__name__}.{name}, through which the UI's "
                         "Host check is installed; use the Dagster version of requirements.lock")
    found = getattr(module, name)
    if wrap is not None:
        setattr(module, name, wrap(found))
    return found


def dev(argv: list[str]) -> None:
    """`dagster dev ARGV`, whose webserver is this module's `webserver`."""
    import dagster._cli
    import dagster._cli.dev

    def guarded(spawn: Callable[..., Any]) -> Callable[..., Any]:
        def spawn_guarded(cmd: list[str], *args: Any, **kwargs: Any) -> Any:
            if list(cmd[1:3]) == _WEBSERVER:
                cmd = [cmd[0], "-m", "orchestration.ui_server", "webserver", *cmd[3:]]
            return spawn(cmd, *args, **kwargs)
        return spawn_guarded

    _hook(dagster._cli.dev, "open_ipc_subprocess", guarded)
    sys.argv = ["dagster", "dev", *argv]
    _hook(dagster._cli, "main")()


def webserver(argv: list[str]) -> None:
    """`dagster-webserver ARGV`, its app behind the Host check of `ALLOWED_HOSTS_ENV`."""
    import dagster_webserver.cli as web

    from query_service.middleware import HostCheck

    hosts = _allowed_hosts()
    if hosts is not None:
        def guarded(build: Callable[..., Any]) -> Callable[..., Any]:
            def build_guarded(*args: Any, **kwargs: Any) -> Any:
                return HostCheck(build(*args, **kwargs), hosts, setting="`bindery ui --allow-host`")
            return build_guarded

        _hook(web, "create_app_from_workspace_process_context", guarded)
    sys.argv = ["dagster-webserver", *argv]
    _hook(web, "main")()


def main() -> None:
    role, *argv = sys.argv[1:]
    {"dev": dev, "webserver": webserver}[role](argv)


if __name__ == "__main__":
    main()
