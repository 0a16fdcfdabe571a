"""`bindery ui`'s processes: Dagster's `dagster dev`, its webserver behind a Host check.

The Dagster UI has no sign-in and answered any Host header, so a web page the operator merely
opened could reach a UI bound to loopback under a name of the page's choosing (DNS rebinding)
and read what the UI shows (dead-letter paths and reasons) or launch runs (an attacker pass).
The query service refuses such names (`query_service.middleware.HostCheck`); the UI now does
the same, and refuses what another site's page sends it under its real name as well
(`CrossSiteCheck`: Dagster runs a GraphQL mutation from a plain form POST, even from a GET).
`dagster dev` starts its webserver as `python -m dagster_webserver`; run through `main` it
starts this module's `webserver` instead, which builds Dagster's own app with both checks in
front. The hooks are Dagster internals (the version is pinned in requirements.lock): a Dagster
that no longer has them, starts its webserver another way or builds its app another way stops
here with an error rather than serve an unguarded UI, and tests/test_ui_lifecycle.py fails if
the checks stop taking effect.
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
    if raw is None:
        return None
    try:
        hosts = json.loads(raw)
    except ValueError:
        hosts = None
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):  # a bare string is not a list
        raise SystemExit(f"bindery ui: {ALLOWED_HOSTS_ENV} must be a JSON list of host names, not {raw[:100]!r}")
    return hosts


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
            elif any("webserver" in str(part) for part in cmd[:3]):  # started some other way: unguarded
                raise SystemExit("bindery ui: dagster dev starts its webserver in a way this release does not "
                                 "guard; use the Dagster version of requirements.lock")
            return spawn(cmd, *args, **kwargs)
        return spawn_guarded

    _hook(dagster._cli.dev, "open_ipc_subprocess", guarded)
    sys.argv = ["dagster", "dev", *argv]
    _hook(dagster._cli, "main")()


def webserver(argv: list[str]) -> None:
    """`dagster-webserver ARGV`, its app behind the cross-site check and the Host check of
    `ALLOWED_HOSTS_ENV` (any host when unset)."""
    import dagster_webserver.cli as web

    from query_service.middleware import CrossSiteCheck, HostCheck

    hosts = _allowed_hosts()

    def guarded(build: Callable[..., Any]) -> Callable[..., Any]:
        def build_guarded(*args: Any, **kwargs: Any) -> Any:
            _BUILT.append(True)
            app = CrossSiteCheck(build(*args, **kwargs), hosts)
            return app if hosts is None else HostCheck(app, hosts, setting="`bindery ui --allow-host`")
        return build_guarded

    _hook(web, "create_app_from_workspace_process_context", guarded)
    serve = _hook(web, "uvicorn").run

    def run_guarded(app: Any, *args: Any, **kwargs: Any) -> Any:
        if not _BUILT:  # Dagster built its app some other way: never serve it unguarded
            raise SystemExit("bindery ui: the Dagster webserver's app was not built through the hook that puts "
                             "its Host and cross-site checks in front; use the Dagster version of requirements.lock")
        return serve(app, *args, **kwargs)

    _hook(web, "uvicorn", lambda _module: _Uvicorn(run_guarded))
    sys.argv = ["dagster-webserver", *argv]
    _hook(web, "main")()


_BUILT: list[bool] = []  # set when Dagster's app went through `build_guarded`


class _Uvicorn:
    """`uvicorn` as `dagster_webserver.cli` uses it (`uvicorn.run`), refusing an unguarded app."""

    def __init__(self, run: Callable[..., Any]):
        self.run = run


def main() -> None:
    role, *argv = sys.argv[1:]
    {"dev": dev, "webserver": webserver}[role](argv)


if __name__ == "__main__":
    main()
