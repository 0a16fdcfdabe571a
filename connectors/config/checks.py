"""What this machine must provide before a run, checked by the CLI's preflight rather than when
the file loads (the query service and the Dagster code location load it too, and an unmounted
source folder must not stop them): the tokenizer and API key the stages need, `data_dir` and
the local sources' roots."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from pathlib import Path

from connectors.config.models import BinderyConfig
from connectors.errors import ConfigError

# Run launchers by the name bindery.yaml uses: (module, class). Celery is a Dagster *executor*;
# the launcher that pairs with it is dagster-celery-k8s's.
RUN_LAUNCHERS: dict[str, tuple[str, str]] = {
    "docker": ("dagster_docker", "DockerRunLauncher"),
    "k8s": ("dagster_k8s", "K8sRunLauncher"),
    "celery-k8s": ("dagster_celery_k8s", "CeleryK8sRunLauncher"),
}


def check_run_launcher(cfg: BinderyConfig) -> None:
    """A named run launcher whose package is not installed here is a configuration mistake:
    Dagster loads the launcher only when its daemon dequeues a run, so `sync --submit` queued
    runs, the daemon logged a traceback for each, and they failed (a scale-out pass). The
    daemon runs where the CLI does (`bindery ui`), with the same packages."""
    name = cfg.orchestration.run_launcher
    if name == "default":
        return
    module, _ = RUN_LAUNCHERS[name]
    if importlib.util.find_spec(module) is None:
        package = module.replace("_", "-")
        raise ConfigError(f"orchestration.run_launcher: {name} needs the {package} package, which is not "
                          f"installed here (pip install {package}, at the version of the dagster Bindery pins)")


def check_sources(cfg: BinderyConfig) -> None:
    """A run lists sources: a configuration without any is refused before it starts."""
    if not cfg.sources:
        raise ConfigError("no sources configured: add one under `sources:` in the configuration")


def check_stage_resources(cfg: BinderyConfig) -> None:
    """What a run's stages need from this machine, checked before a run starts, each a one-line
    ConfigError naming its key: the chunker's tokenizer (the embedding model's unless
    `stages.chunk.tokenizer` names another) found offline, and the Anthropic API key when the
    contextualiser calls Anthropic. Without this a misspelt model passed the plan, then every
    document became a dead letter (`tokenizer ... not found`) and the sync exited 1."""
    from connectors.tokenizer import find_tokenizer

    name = cfg.stages.chunk.tokenizer or cfg.stages.embed.model
    try:
        find_tokenizer(name)
    except ConfigError as e:
        key = "stages.embed.model" if name == cfg.stages.embed.model else "stages.chunk.tokenizer"
        raise ConfigError(f"{key}: {e}") from None
    if cfg.stages.context.provider == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise ConfigError("stages.context.provider: 'anthropic' needs the environment variable ANTHROPIC_API_KEY, "
                          "which is not set")


def make_data_dir(data: Path) -> None:
    """Create `data` (a data_dir) if it is missing, owner-only: it holds every source's text,
    whatever the sources' own permissions, as PostgreSQL keeps its data directory. An existing
    one keeps what its owner chose. Every path that may be first to make it comes here (the
    Dagster home, the store's claim): made elsewhere, it was 0755 and a later sync's indexes in
    it readable by any local user."""
    if data.exists():
        return
    with contextlib.suppress(FileExistsError):  # another process made it first: theirs
        data.mkdir(parents=True)
        data.chmod(0o700)


def shown_path(p: Path, limit: int = 120) -> str:
    """A path for a one-line message: a long one keeps its start and end."""
    text = str(p)
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-(limit // 2):]}"


def path_exists(p: Path, key: str) -> bool:
    """`p.exists()`, or a ConfigError naming `key` where the path cannot even be looked up (a
    name longer than the file system allows, a loop of links): `Path.exists` raises then."""
    try:
        return p.exists()
    except OSError as e:
        raise ConfigError(f"{key}: {shown_path(p)}: {e.strerror or e}") from None


def check_paths(cfg: BinderyConfig, sources: list[str] | None = None, *, roots: bool = True,
                create: bool = True) -> None:
    """What the file system must hold before a run: `data_dir` a folder (created if missing) and
    (with `roots`) every local source's `root` an existing, readable folder. Not part of `load_config`,
    which the query service and the Dagster code location also call: an unmounted source
    folder must not stop them, only the runs that would list it (and their safe-delete
    checks refuse to delete from an empty listing anyway). `create=False` (`bindery plan`, which
    writes nothing) checks that `data_dir` could be created without creating it: a probe folder
    made and removed at once in its nearest existing parent. A `data_dir` it creates is
    owner-only (0700)."""
    data = cfg.data_path
    existing = next((p for p in (data, *data.parents) if path_exists(p, "data_dir")), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"data_dir: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK):
        raise ConfigError(f"data_dir: {existing} is not writable")
    # the roots first: a run refused for one of them leaves no data_dir behind (a new-user pass)
    for i, s in enumerate(cfg.sources):
        if not roots or s.kind != "local" or (sources and s.name not in sources):
            continue
        root = Path(s.root or "")
        key = f"sources.{i}.root (source {s.name!r})"
        if not path_exists(root, key):
            raise ConfigError(f"{key}: folder {root} does not exist")
        if not root.is_dir():
            raise ConfigError(f"{key}: {root} is a file, not a folder")
        if not os.access(root, os.R_OK | os.X_OK):
            raise ConfigError(f"{key}: folder {root} is not readable")
    try:  # what access() cannot tell: a read-only or virtual file system (/proc), an odd mount
        if create:
            make_data_dir(data)
        elif existing is not None and existing != data:
            os.rmdir(tempfile.mkdtemp(prefix=".bindery-probe-", dir=existing))
    except OSError as e:
        raise ConfigError(f"data_dir: cannot create {data}: {e.strerror or e}") from None
