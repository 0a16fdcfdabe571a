"""Reading `bindery.yaml`: the file, its YAML (a key written twice refused), validation into
`BinderyConfig` with one-line errors naming the key (secrets never echoed), and relative paths
resolved against the file's folder."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import (
    BaseModel,
    ValidationError,
)

from connectors.config.checks import path_exists
from connectors.config.models import BinderyConfig
from connectors.config.nesting import check_nested_sources
from connectors.errors import ConfigError, without_secrets

# keys whose values are secrets: an error message (terminals, CI logs, `--json`) never echoes them
_SECRET_KEY = re.compile(r"(password|secret|token|api_key|access_key)$", re.IGNORECASE)
# ... but a count of word pieces is no secret (`max_tokens`, or `max_token` misspelt)
_TOKEN_COUNT = re.compile(r"(max|min|overlap|prefix|max_prefix)_tokens?|\w*_tokens", re.IGNORECASE)


def _is_secret(loc: tuple[Any, ...]) -> bool:
    """Whether the value at `loc` may be a secret: a key named like one, or anything under
    `query.auth.api_keys` (a raw key pasted into `hash:` by mistake is a key all the same)."""
    path = [str(p) for p in loc]
    return (bool(path and _SECRET_KEY.search(path[-1]) and not _TOKEN_COUNT.fullmatch(path[-1]))
            or "api_keys" in path)


_ENV_VAR = re.compile(r"\$(\w+|\{[^}]*\})")


def _resolve(base: Path, value: str | None, key: str) -> str | None:
    """A path of the file made absolute against `base`, with `~` and `$VAR` / `${VAR}` expanded
    (what an operator writes in a shell); a variable the environment lacks is a ConfigError
    naming `key`, never a folder literally named `$HOME`."""
    if not value or "://" in value:
        return value
    expanded = os.path.expandvars(value)
    if unset := _ENV_VAR.search(expanded):
        raise ConfigError(f"invalid configuration: {key}: {unset.group(0)} is not set in the environment "
                          f"(got {value!r})")
    p = Path(os.path.expanduser(expanded))
    return str(p if p.is_absolute() else (base / p).resolve())


def _problem(err: Any) -> str:
    """One pydantic error as `dotted.key: what is wrong (got VALUE)`, on one line."""
    loc = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    shown = "***" if _is_secret(err["loc"]) else without_secrets(repr(value))
    got = f" (got {shown})" if isinstance(value, (int, float, str, bool)) and err["type"] != "missing" else ""
    if err["type"] == "model_type":  # pydantic names its class ("or instance of StageConfigs"): not the file's words
        msg = "Input should be a mapping of settings"
    if err["type"] in ("model_type", "list_type", "dict_type") and value is None:
        got = " (got nothing: the key has nothing under it)"  # `stages:` with every setting commented out
    elif err["type"] == "list_type" and isinstance(value, dict):
        got = " (got a mapping: write each item on a line of its own starting with `- `)"
    if err["type"] == "extra_forbidden" and (near := _near_key(err["loc"])):
        got += f"; did you mean {near!r}?"  # `exlude` named no alternative (a new-user pass)
    # a rule across sections (checked on the whole file) names its keys itself
    return " ".join((f"{loc}: {msg}{got}" if loc else f"{msg}{got}").split())


def _near_key(loc: tuple[Any, ...]) -> str | None:
    """The key of the same section closest to an unknown one (`exlude` -> `exclude`), if any."""
    import difflib

    model: type[BaseModel] | None = BinderyConfig
    for part in loc[:-1]:
        if isinstance(part, int):  # an item of a list: the list's own model
            continue
        field = model.model_fields.get(str(part)) if model is not None else None
        model = _model_in(field.annotation) if field is not None else None
        if model is None:
            return None
    near = difflib.get_close_matches(str(loc[-1]), list(model.model_fields) if model else [], n=1, cutoff=0.75)
    return near[0] if near else None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The configuration model an annotation holds (itself, or inside Optional/list/dict)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def _nul_key(value: Any, key: str = "") -> str | None:
    """The dotted key of the first string holding a NUL character, or None. No path, name or
    pattern may hold one (the OS refuses it: a NUL in `root` or `data_dir` was an internal
    error at run time, and `status` even exited 0)."""
    if isinstance(value, str):
        return key if "\x00" in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        sub = f"{key}.{k}" if key else str(k)  # sources.0.root, as validation errors name it
        if (found := _nul_key(v, sub)) is not None:
            return found
    return None


def config_from_dict(raw: dict[str, Any], base_dir: Path | None = None) -> BinderyConfig:
    """Validate a config mapping; relative paths resolve against `base_dir`."""
    if (bad := _nul_key(raw)) is not None:
        raise ConfigError(f"invalid configuration: {bad}: holds a NUL character (\\0), which no path or name may hold")
    try:
        cfg = BinderyConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"invalid configuration: {'; '.join(_problem(err) for err in e.errors())}") from None
    base = base_dir or Path.cwd()
    cfg.data_dir = _resolve(base, cfg.data_dir, "data_dir") or cfg.data_dir
    cfg.gate.queries = _resolve(base, cfg.gate.queries, "gate.queries")
    cfg.orchestration.workspace = _resolve(base, cfg.orchestration.workspace, "orchestration.workspace")
    cfg.query.auth.jwt.jwks_file = _resolve(base, cfg.query.auth.jwt.jwks_file, "query.auth.jwt.jwks_file")
    names = [s.name for s in cfg.sources]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        where = " and ".join(f"sources.{i}.name" for i, n in enumerate(names) if n == twice)
        raise ConfigError(f"invalid configuration: {where}: the source name {twice!r} is used more than once")
    for i, s in enumerate(cfg.sources):
        s.root = _resolve(base, s.root, f"sources.{i}.root")
        if (missing := s.missing_key()) is not None:
            raise ConfigError(f"invalid configuration: sources.{i}.{missing}: a source of kind {s.kind} needs one "
                              f"(source {s.name!r})")
        if s.kind == "local" and os.path.realpath(s.root or ".") == os.path.realpath(cfg.data_dir):
            raise ConfigError(f"invalid configuration: sources.{i}.root: {s.root} is the data_dir, so Bindery "
                              "would list its own database; keep data_dir elsewhere (a folder under the root "
                              "is fine: it is never listed)")
        # skipped by the listing wherever it lies under the root (a copy made by model_validate
        # of a dump loses it: reload such a configuration with load_config)
        s.keep_out(cfg.data_dir)
    check_nested_sources(cfg.sources)
    return cfg


def _read_text(p: Path) -> str:
    """The configuration file's text, or a one-line ConfigError saying why it cannot be read."""
    if not path_exists(p, "configuration file"):
        raise ConfigError(f"configuration file not found: {p} (set --config or BINDERY_CONFIG)")
    if p.is_dir():
        raise ConfigError(f"configuration file {p} is a folder, not a YAML file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"configuration file {p} cannot be read: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"configuration file {p} is not UTF-8 (byte {e.start}: {data[e.start:e.start + 1]!r}); "
                          "save it as UTF-8") from None


def _yaml_error(p: Path, e: yaml.YAMLError) -> ConfigError:
    mark = getattr(e, "problem_mark", None)
    where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
    what = getattr(e, "problem", None) or str(e)
    return ConfigError(" ".join(f"{p}{where}: not valid YAML: {what}".split()))


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key written twice in one mapping.

    Plain YAML loaders keep the last value: a second `sources:` block silently replaced the
    first (its source vanished from the plan) and a second `data_dir:` pointed every command
    at an empty instance."""

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        # checked as written, before any construction: a merge (`<<: *base`) is not resolved yet
        # (its keys may be overridden), nor is a key's value (an unhashable key is YAML's error)
        node: yaml.MappingNode = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise yaml.composer.ComposerError(
                    None, None, f"key {key_node.value!r} is written twice (lines {first} and "
                    f"{key_node.start_mark.line + 1}); keep one", key_node.start_mark)
            seen[key] = key_node
        return node


# No setting nests deeper than a handful of levels or holds more than a few thousand values.
_MAX_DEPTH = 64
_MAX_VALUES = 100_000


def _check_expansion(raw: dict[str, Any], p: Path) -> None:
    """Refuse YAML whose aliases expand past any real configuration, or refer to themselves.

    An alias is the same object at every place it is used, so nine lines of anchors stand for
    10**9 values: every walk of the mapping (the NUL check, validation, error messages) took
    minutes and gigabytes, and an alias inside its own anchor (`&a [*a]`) was an internal
    RecursionError. Sizes are counted once per distinct object."""
    sizes: dict[int, int] = {}

    def size(value: Any, depth: int) -> int:
        if not isinstance(value, dict | list):
            return 1
        if depth > _MAX_DEPTH:
            raise ConfigError(f"{p}: nests more than {_MAX_DEPTH} levels deep, or a YAML alias is used inside "
                              "its own anchor; no setting does")
        if (known := sizes.get(id(value))) is not None:
            return known
        items = list(value.values()) if isinstance(value, dict) else value
        n = 1 + len(items) + sum(size(v, depth + 1) for v in items)
        if n > _MAX_VALUES:
            raise ConfigError(f"{p}: its YAML aliases expand to more than {_MAX_VALUES:,} values; no "
                              "configuration holds that many (write the values out, or use fewer aliases)")
        sizes[id(value)] = n
        return n

    size(raw, 0)


def load_config(path: str | os.PathLike[str] | None = None) -> BinderyConfig:
    """Load `path`, else `$BINDERY_CONFIG`, else `./bindery.yaml`."""
    p = Path(path or os.environ.get("BINDERY_CONFIG") or "bindery.yaml")
    text = _read_text(p)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        raw = yaml.load(text, Loader=_StrictLoader) or {}  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        raise _yaml_error(p, e) from None
    except RecursionError:  # PyYAML composes recursively: `[[[[...` a few hundred deep
        raise ConfigError(f"{p}: not valid YAML for a configuration: it nests too deep") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level, got {type(raw).__name__}")
    _check_expansion(raw, p)
    if "config_path" in raw:  # a field Bindery fills from where the file is read; a value here would be lost
        raise ConfigError(f"invalid configuration: config_path: is not a setting (Bindery records where the file "
                          f"was read from, here {p}); remove the key")
    cfg = config_from_dict(raw, p.resolve().parent)
    cfg.config_path = str(p.resolve())
    cfg._given_path = str(p.absolute())
    cfg._loaded_digest = digest
    return cfg
