"""Generations: where a generation's indexes live, how writers and readers open them, and how
a writer publishes an immutable snapshot for readers.

Embedded mode (Qdrant Edge or Qdrant local + tantivy) has two hard facts: both Qdrant engines
admit one process per storage path, and tantivy one writer per index. So ingestion owns a
generation's *working* indexes (under an exclusive file lock), and after each write it publishes
a consistent copy under `snapshots/<generation>/<seq>/`. The query service opens published
snapshots only, so it never contends with a running sync, and it swaps to a newer snapshot when
the binding row's version moves: tantivy read-only in place, Qdrant Edge from a private shadow
(hard links to the immutable segment files, milliseconds at any size), Qdrant local mode from a
private copy. Server backends (Qdrant server, Elasticsearch) need no snapshots: readers query
the physical collection named here.

Each generation records the vector engine that built it (`vector_engine`), and is always
opened with that engine, whatever `backends.vector` says now: a data dir built with local mode
keeps serving until a reindex builds a generation with the configured engine.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from connectors.config import BinderyConfig, VectorEngine
from connectors.errors import BindingError, ConfigError, IndexError_, IndexUnreadable
from connectors.indexes.base import KeywordIndex, VectorIndex
from connectors.store.records import GenerationRecord

if TYPE_CHECKING:
    from connectors.indexes.elasticsearch_index import ElasticsearchIndex
    from connectors.indexes.qdrant_index import QdrantIndex

__all__ = ["GenerationPaths", "IndexDamage", "IndexPair", "drop_generation_files", "is_embedded",
           "missing_snapshots", "open_keyword_writer", "open_reader", "open_vector_writer", "open_writer",
           "point_live_aliases", "publish", "vector_engine", "working_index_damage", "writer_lock", "writer_pair"]

_EMBEDDED: dict[str, str] = {"qdrant-edge": "edge", "qdrant-local": "qdrant"}  # engine -> working dir name


def is_embedded(engine: str) -> bool:
    """Embedded engines store a generation under data_dir and are read from snapshots."""
    return engine in _EMBEDDED


def vector_engine(cfg: BinderyConfig, gen: GenerationRecord) -> VectorEngine:
    """The vector engine that built `gen`. Rows from before engines were recorded were built by
    local mode (their vector index is a path) or by a server (a collection name); a row that
    records neither (not yet created) uses the configured engine."""
    recorded = gen.vector_engine
    if recorded:
        return cast(VectorEngine, recorded)
    location = gen.vector_index
    if not location:
        return cfg.backends.vector
    return "qdrant-local" if os.path.isabs(str(location)) else "qdrant-server"

_KEEP_SNAPSHOTS = 3  # per generation; readers copy/open within milliseconds of a publish


def copy_sparse(src: str, dst: str) -> str:
    """Copy a file keeping its holes (a `copytree` copy function).

    Qdrant's segment files are preallocated sparse: a 900-chunk shard holds 96 MB of file size
    on 7 MB of disk. `shutil.copy2` writes every hole out as zeros, so a publish spent ~0.1 s
    (0.5 s on a loaded machine) and 14x the disk per snapshot; this copies only the data extents (SEEK_DATA /
    SEEK_HOLE) and re-creates the holes by truncating to the source's size. Reads of either file
    give the same bytes. A filesystem without SEEK_DATA falls back to a plain copy."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        pos = 0
        try:
            while pos < size:
                try:
                    start = os.lseek(fin.fileno(), pos, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole is left
                    break
                end = os.lseek(fin.fileno(), start, os.SEEK_HOLE)
                os.lseek(fin.fileno(), start, os.SEEK_SET)
                os.lseek(fout.fileno(), start, os.SEEK_SET)
                left = end - start
                while left > 0:
                    n = os.sendfile(fout.fileno(), fin.fileno(), None, min(left, 1 << 30))
                    if n == 0:  # the source shrank under us: copy what there is
                        break
                    left -= n
                pos = end
        except (AttributeError, OSError):  # no SEEK_DATA/sendfile here: the ordinary copy
            fin.seek(0)
            fout.seek(0)
            fout.truncate()
            shutil.copyfileobj(fin, fout)
        fout.truncate(size)
    shutil.copystat(src, dst)
    return dst


@dataclass(frozen=True)
class GenerationPaths:
    root: Path

    @classmethod
    def of(cls, cfg: BinderyConfig, name: str) -> GenerationPaths:
        return cls(cfg.data_path / "indexes" / name)

    def vector(self, engine: str) -> Path:
        """Working directory of an embedded vector engine's index."""
        return self.root / _EMBEDDED[engine]

    @property
    def keyword(self) -> Path:
        return self.root / "tantivy"

    @property
    def snapshots(self) -> Path:
        return self.root.parent.parent / "snapshots" / self.root.name


@dataclass
class IndexPair:
    vector: VectorIndex
    keyword: KeywordIndex
    generation: GenerationRecord
    _cleanup: list[Path] = field(default_factory=list)

    def close(self) -> None:
        for idx in (self.vector, self.keyword):
            try:
                idx.close()
            except Exception:
                pass
        for p in self._cleanup:
            _release(p)


def physical_names(cfg: BinderyConfig, name: str) -> tuple[str, str]:
    """(vector index location, keyword index location) recorded on the generation row, with
    `vector_engine` = cfg.backends.vector."""
    paths = GenerationPaths.of(cfg, name)
    engine = cfg.backends.vector
    vec = str(paths.vector(engine)) if is_embedded(engine) else name
    kw = str(paths.keyword) if cfg.backends.keyword == "tantivy" else name
    return vec, kw


@contextmanager
def writer_lock(cfg: BinderyConfig, name: str, timeout: float = 600.0) -> Iterator[None]:
    """Exclusive lock on a generation's working indexes across processes (two syncs of
    different sources may run at once; their index writes take turns)."""
    root = GenerationPaths.of(cfg, name).root
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".writer.lock", "a+") as fh:  # not "w": that would blank the holder's pid
        deadline = time.monotonic() + timeout
        said = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                held = _holder(fh)
                if time.monotonic() > deadline:
                    raise IndexError_(f"timed out after {timeout:.0f} s waiting for the index writer lock of {name}"
                                      f"{held}: another run is writing this generation; let it finish or stop it, "
                                      "then run again") from None
                if not said:  # waiting in silence looked like a hang, then counted as this run's time
                    print(f"waiting for another run writing generation {name} to finish{held}...",
                          file=sys.stderr, flush=True)
                    said = True
                time.sleep(0.2)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _holder(fh: IO[str]) -> str:
    """" (process N)" naming the writer lock's holder, as it wrote itself in; "" if unknown."""
    fh.seek(0)
    pid = fh.read().strip()
    return f" (process {pid})" if pid.isdigit() else ""


def _open_vector(cfg: BinderyConfig, gen: GenerationRecord, path: str | None, dim: int | None) -> VectorIndex:
    engine = vector_engine(cfg, gen)
    if engine == "qdrant-edge":
        from connectors.indexes.qdrant_edge_index import QdrantEdgeIndex

        assert path is not None
        return QdrantEdgeIndex(path, dim=dim)
    from connectors.indexes.qdrant_index import QdrantIndex

    if engine == "qdrant-local":
        return QdrantIndex(path=path, dim=dim)
    return qdrant_server(cfg, gen.name, dim)


def _open_keyword(cfg: BinderyConfig, gen: GenerationRecord, path: str | None, *, read_only: bool) -> KeywordIndex:
    if cfg.backends.keyword == "tantivy":
        from connectors.indexes.tantivy_index import TantivyIndex

        assert path is not None
        return TantivyIndex(path, read_only=read_only)
    return elasticsearch(cfg, gen.name)


def _open(cfg: BinderyConfig, gen: GenerationRecord, vector_path: str | None, keyword_path: str | None,
          *, read_only: bool, dim: int | None) -> tuple[VectorIndex, KeywordIndex]:
    vec = _open_vector(cfg, gen, vector_path, dim)
    return vec, _open_keyword(cfg, gen, keyword_path, read_only=read_only)


def open_vector_writer(cfg: BinderyConfig, gen: GenerationRecord, dim: int | None) -> VectorIndex:
    """Open a generation's working vector index for writing, with the engine that built it."""
    engine = vector_engine(cfg, gen)
    vec_path = GenerationPaths.of(cfg, gen.name).vector(engine) if is_embedded(engine) else None
    if engine == "qdrant-local" and vec_path is not None:
        vec_path.mkdir(parents=True, exist_ok=True)
    return _open_vector(cfg, gen, str(vec_path) if vec_path else None, dim)


def open_keyword_writer(cfg: BinderyConfig, gen: GenerationRecord) -> KeywordIndex:
    """Open a generation's working keyword index for writing."""
    path = GenerationPaths.of(cfg, gen.name).keyword
    path.mkdir(parents=True, exist_ok=True)
    return _open_keyword(cfg, gen, str(path), read_only=False)


def missing_snapshots(gen: GenerationRecord) -> int:
    """Published snapshots the generation row names that are gone from disk. Readers (the query
    service, `bindery query`, the gate) open these copies, never the working indexes, so a
    generation whose snapshot was deleted cannot be served however consistent its indexes are."""
    return sum(1 for p in (gen.vector_snapshot, gen.keyword_snapshot) if p and not Path(p).exists())


@dataclass(frozen=True)
class IndexDamage:
    """What `working_index_damage` found: `checked` False when the probe itself failed (nothing
    is known of the index; said as such, never as damage)."""

    reason: str
    checked: bool = True


def working_index_damage(cfg: BinderyConfig, gen: GenerationRecord, *, write_nothing: bool = False
                         ) -> IndexDamage | None:
    """Why `gen`'s embedded working indexes cannot be opened (a damaged file, or a keyword index
    of another schema: every sync that writes it fails until `bindery verify --repair`), or None.
    Cheap: tantivy is opened read-only (it writes at most its meta lock file, when missing);
    Qdrant Edge under the writer lock (a run writing it now answers None: its sync will say),
    unless `write_nothing` (`bindery plan`: tantivy alone is probed); Qdrant local mode is not
    opened (it loads a whole collection into memory), nor a server engine (nothing of it is on
    this disk to damage)."""
    keyword = GenerationPaths.of(cfg, gen.name).keyword
    try:
        if cfg.backends.keyword == "tantivy" and (keyword / "meta.json").exists():  # none yet: nothing to damage
            try:
                _open_keyword(cfg, gen, str(keyword), read_only=True).close()
            except IndexError_ as e:  # the index is there: any refusal to open it is the sync's too
                return IndexDamage(str(e))
        if vector_engine(cfg, gen) == "qdrant-edge" and not write_nothing:
            with writer_lock(cfg, gen.name, timeout=5.0):
                open_vector_writer(cfg, gen, None).close()
    except IndexUnreadable as e:
        return IndexDamage(str(e))
    except IndexError_:  # a run holds the writer lock: it is being written, nothing known to be damaged
        return None
    except Exception as e:  # the probe failed, not the index: said, never a reason for the caller to fail
        return IndexDamage(f"{type(e).__name__}: {e}", checked=False)
    return None


def open_writer(cfg: BinderyConfig, gen: GenerationRecord, dim: int | None) -> IndexPair:
    """Open a generation's working indexes for writing. Hold `writer_lock` around its use."""
    return writer_pair(gen, open_vector_writer(cfg, gen, dim), lambda: open_keyword_writer(cfg, gen))


def writer_pair(gen: GenerationRecord, vector: VectorIndex, keyword: Callable[[], KeywordIndex]) -> IndexPair:
    """`vector` and the keyword index `keyword()` opens as one pair; the vector index is closed
    again when the keyword index cannot be opened."""
    try:
        kw = keyword()
    except BaseException:
        vector.close()
        raise
    return IndexPair(vector, kw, gen)


def publish(cfg: BinderyConfig, gen: GenerationRecord) -> tuple[str | None, str | None]:
    """Copy the (closed, consistent) working indexes to a new immutable snapshot.

    Call with the writer lock held and the writers flushed and closed. Returns the snapshot
    paths to record on the generation row; old snapshots beyond the newest few are removed.
    An Edge shard is copied without its write-ahead log (a flushed shard does not need it).
    """
    engine = vector_engine(cfg, gen)
    if not is_embedded(engine) and cfg.backends.keyword != "tantivy":
        return None, None
    paths = GenerationPaths.of(cfg, gen.name)
    paths.snapshots.mkdir(parents=True, exist_ok=True)
    dest = Path(tempfile.mkdtemp(prefix=f"{time.time_ns()}-", dir=paths.snapshots))
    vec_snap = kw_snap = None
    if is_embedded(engine):
        vec_dir = dest / _EMBEDDED[engine]
        if paths.vector(engine).exists():
            shutil.copytree(paths.vector(engine), vec_dir, ignore=shutil.ignore_patterns(".lock", "wal"),
                            copy_function=copy_sparse)
        else:  # nothing written yet: an empty index that readers open as empty
            vec_dir.mkdir()
        vec_snap = str(vec_dir)
    if cfg.backends.keyword == "tantivy" and paths.keyword.exists():
        shutil.copytree(paths.keyword, dest / "tantivy", ignore=shutil.ignore_patterns("*.lock"),
                        copy_function=copy_sparse)
        kw_snap = str(dest / "tantivy")
    snaps = sorted(p for p in paths.snapshots.iterdir() if p.is_dir())
    for old in snaps[:-_KEEP_SNAPSHOTS]:
        shutil.rmtree(old, ignore_errors=True)
    return vec_snap, kw_snap


_READER_PREFIX = "bindery-reader-"
_OWNER = ".owner"  # inside a reader's copy; its owner holds an exclusive lock on it for its life
_held: dict[Path, int] = {}  # this process's copies -> the descriptor that holds each one's lock
_swept = False


def _sweep_dead_readers() -> None:
    """Remove, once per process, the private copies that killed readers left (atexit never ran
    for them: each held up to the vector index's size, ~95 MB seen, for ever). A copy whose
    owner lock can be taken has no owner: the lock dies with its process, in any PID namespace
    sharing the folder, whatever PID came after it. Never fails an open: a copy it cannot judge
    stays."""
    global _swept
    if _swept:
        return
    _swept = True
    try:
        found = list(Path(tempfile.gettempdir()).glob(f"{_READER_PREFIX}*"))
    except OSError:
        return
    for path in found:
        if path in _held:
            continue
        try:
            fd = os.open(path / _OWNER, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # not a reader's copy (or one still being made): left alone
        try:
            # the lock is taken just after the file is made: a copy younger than a minute is left
            if os.fstat(fd).st_mtime > time.time() - 60:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its owner is alive
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)


def _release(private: Path) -> None:
    """Remove a reader's copy and let go of its lock."""
    shutil.rmtree(private, ignore_errors=True)
    fd = _held.pop(private, None)
    if fd is not None:
        os.close(fd)


def _private_vector_copy(engine: str, snap: str) -> Path:
    """A reader's own openable copy of a vector snapshot (both Qdrant engines lock their path):
    an Edge shadow of hard links, or a full copy for local mode. Removed by `_release` (on
    close, at exit, or by the next process's sweep if this one is killed)."""
    from connectors.indexes.qdrant_edge_index import shadow_snapshot

    _sweep_dead_readers()
    private = Path(tempfile.mkdtemp(prefix=_READER_PREFIX))
    fd = os.open(private / _OWNER, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _held[private] = fd
    target = private / _EMBEDDED[engine]
    try:
        if engine == "qdrant-edge":
            shadow_snapshot(Path(snap), target)
        else:
            shutil.copytree(snap, target, copy_function=copy_sparse)
    except FileNotFoundError as e:  # pruned between read and copy: the caller retries
        _release(private)
        raise BindingError(f"snapshot {snap} vanished while opening; retry") from e
    atexit.register(_release, private)  # a reader never closed still cleans up
    return private


# what mends a snapshot deleted from disk (a cleanup script, a restore that missed it): an
# operator saw every query fail with no hint, while the working indexes could publish it again
_REPUBLISH = "`bindery verify --repair` publishes a missing snapshot again"


def open_reader(cfg: BinderyConfig, gen: GenerationRecord) -> IndexPair:
    """Open a generation for reading, from its published snapshot in embedded mode, with the
    vector engine that built it. The reader's private copy is removed on close."""
    cleanup: list[Path] = []
    vec_path = kw_path = None
    engine = vector_engine(cfg, gen)
    if is_embedded(engine):
        snap = gen.vector_snapshot
        if not snap or not Path(snap).exists():
            # the row read before may be stale: a `discard` or `gc` meanwhile removed the files
            # (a concurrency pass met this line after a discard and read it as damage)
            raise BindingError(f"generation {gen.name} has no published vector snapshot: it was never built, or "
                               "was discarded or collected meanwhile (`bindery status` lists the generations), "
                               f"or its files were removed ({_REPUBLISH})")
        private = _private_vector_copy(engine, snap)
        cleanup.append(private)
        vec_path = str(private / _EMBEDDED[engine])
    try:
        if cfg.backends.keyword == "tantivy":
            kw_path = gen.keyword_snapshot
            if not kw_path or not Path(kw_path).exists():
                raise BindingError(f"generation {gen.name} has no published keyword snapshot ({_REPUBLISH})")
        vec, kw = _open(cfg, gen, vec_path, kw_path, read_only=True, dim=None)
    except BaseException:  # a reader that never opened leaves no private copy behind
        for path in cleanup:
            _release(path)
        raise
    return IndexPair(vec, kw, gen, cleanup)


def keyword_missing_fields(cfg: BinderyConfig, gen: GenerationRecord) -> list[str]:
    """Fields of today's keyword schema that `gen`'s keyword index was written without (a
    generation of an older release); opens the keyword index alone, read-only. ``[]`` when it
    cannot be opened (nothing to say about an index that is not there)."""
    path = gen.keyword_snapshot if cfg.backends.keyword == "tantivy" else None
    if cfg.backends.keyword == "tantivy" and (not path or not Path(path).exists()):
        return []
    index = _open_keyword(cfg, gen, path, read_only=True)
    try:
        return index.missing_fields()
    finally:
        index.close()


# -- server backends: connections, the live alias, dropping ---------------------------------


def qdrant_server(cfg: BinderyConfig, collection: str, dim: int | None = None) -> QdrantIndex:
    """A generation's collection on the Qdrant server (`$QDRANT_API_KEY` when set)."""
    from connectors.indexes.qdrant_index import QdrantIndex

    b = cfg.backends
    if not b.qdrant_url:
        raise ConfigError("backends.vector: qdrant-server needs backends.qdrant_url")
    return QdrantIndex(url=b.qdrant_url, collection=collection, dim=dim, api_key=os.environ.get("QDRANT_API_KEY"),
                       on_disk=b.qdrant_on_disk, quantization=b.qdrant_quantization)


def elasticsearch(cfg: BinderyConfig, index_name: str) -> ElasticsearchIndex:
    """A generation's index on the Elasticsearch cluster (`$ELASTICSEARCH_API_KEY` when set)."""
    from connectors.indexes.elasticsearch_index import ElasticsearchIndex

    url = cfg.backends.elasticsearch_url
    if not url:
        raise ConfigError("backends.keyword: elasticsearch needs backends.elasticsearch_url")
    return ElasticsearchIndex(url, index_name, replicas=cfg.backends.elasticsearch_replicas,
                              api_key=os.environ.get("ELASTICSEARCH_API_KEY") or None)


def point_live_aliases(cfg: BinderyConfig, name: str) -> dict[str, str]:
    """Move `backends.live_alias` to generation `name` on each server backend, each engine in
    one atomic request (Elasticsearch `_aliases` remove+add, Qdrant one alias-operations call).
    Called right after the binding row flips (`connectors.lifecycle.bind_live`): the row is the
    truth, the alias lets other readers follow it. Returns {backend: alias} for the aliases
    moved; embedded engines have none."""
    alias = cfg.backends.live_alias
    moved: dict[str, str] = {}
    if cfg.backends.vector == "qdrant-server":
        vec = qdrant_server(cfg, name)
        try:
            vec.point_alias(alias)
        finally:
            vec.close()
        moved["qdrant"] = alias
    if cfg.backends.keyword == "elasticsearch":
        with elasticsearch(cfg, name) as kw:
            kw.point_alias(alias)
        moved["elasticsearch"] = alias
    return moved


def drop_generation_files(cfg: BinderyConfig, name: str) -> None:
    """Remove everything generation `name` holds: local files and snapshots, and on server
    backends its Qdrant collection and Elasticsearch index. Safe to repeat."""
    paths = GenerationPaths.of(cfg, name)
    shutil.rmtree(paths.root, ignore_errors=True)
    shutil.rmtree(paths.snapshots, ignore_errors=True)
    if cfg.backends.vector == "qdrant-server":
        vec = qdrant_server(cfg, name)
        try:
            vec.drop()
        finally:
            vec.close()
    if cfg.backends.keyword == "elasticsearch":
        with elasticsearch(cfg, name) as kw:
            kw.drop_index()
