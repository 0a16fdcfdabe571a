"""Progress while a sync runs and a clean stop on Ctrl-C (issue 11, item 2).

Unit tests for the reporter; end-to-end runs of the real CLI in a subprocess: under a
pseudo-terminal (tqdm bars), through a pipe (periodic lines), in the Dagster step log, and
interrupted with SIGINT half-way (one line, a consistent store, the next sync resumes).
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from assets import progress as P
from orchestration.instance import get_instance
from tests.bindery_fixture import Deployment

ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[int, int]] = []
        self.closed: tuple[int, int] | None = None

    def update(self, done: int, total: int) -> None:
        self.updates.append((done, total))

    def close(self, done: int, total: int) -> None:
        self.closed = (done, total)


@pytest.fixture(autouse=True)
def _clean_progress() -> None:
    P.clear_sink_factories()
    P.reset_stored_counts()


def test_stage_progress_fans_out_and_tallies_what_was_stored() -> None:
    rec, extra = Recorder(), Recorder()
    P.add_sink_factory(lambda stage, source, unit: extra if stage == "embed" else None)
    with P.StageProgress("embed", "docs", "texts", sinks=[rec]) as prog:
        prog.total(100)
        prog.advance(40)
        prog.advance(0)
        prog.advance(60)
    assert rec.updates == [(0, 100), (40, 100), (100, 100)] and rec.closed == (100, 100)
    assert extra.updates == rec.updates  # the process-wide sink saw the same counts
    with P.StageProgress("parse", "docs", "documents") as prog:
        prog.total(3)
        prog.advance(2)
    assert P.stored_counts() == {"embed": 100, "parse": 2}


def test_format_line_has_counts_rate_and_eta() -> None:
    line = P.format_line("embed", "docs", "texts", 2048, 10860, 50.0)
    assert line == "embed [docs]: 2,048/10,860 texts (19%), 41.0/s, ETA 3m35s"
    assert "ETA" not in P.format_line("embed", "docs", "texts", 5, 5, 1.0)


@pytest.mark.parametrize("size", [(0, 0), (30, 120)], ids=["unsized", "sized"])
def test_a_bar_is_drawn_on_a_terminal_whatever_size_it_reports(size: tuple[int, int],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`script`, `docker run -t` and a fresh pseudo-terminal report 0 rows and 0 columns; tqdm
    then drew nothing at all (it reads the size of the process's own stderr, and a bar below a
    screen -1 rows high is hidden)."""
    from orchestration.terminal_progress import TqdmSink

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    stream = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", stream)  # tqdm sizes only the process's own stderr or stdout
    try:
        sink = TqdmSink("embed", "docs", "texts", sys.stderr)
        sink.update(512, 2048)
        sink.bar.refresh()
        stream.flush()
        seen = _read_until(master, b"512/2048", 5)
        sink.close(512, 2048)
    finally:
        stream.close()
        os.close(master)
    assert b"embed [docs]" in seen and b"512/2048" in seen, seen


def test_log_sink_is_periodic() -> None:
    lines: list[str] = []
    sink = P.LogSink(lines.append, "parse", "docs", "documents", every=3600)
    for i in range(1, 50):
        sink.update(i, 50)
    sink.close(50, 50)
    assert len(lines) == 2 and lines[0].startswith("parse [docs]: 1/50") and lines[1].endswith("— done")


def test_log_sink_says_nothing_of_nothing_and_ends_once() -> None:
    """A stage with nothing to do prints no "0/0" line; one that finishes between two periodic
    lines prints its last count once, as "done" (the 100 % line came before it as well)."""
    idle: list[str] = []
    sink = P.LogSink(idle.append, "parse", "docs", "documents", every=0)
    sink.update(0, 0)
    sink.close(0, 0)
    assert idle == []
    lines: list[str] = []
    sink = P.LogSink(lines.append, "embed", "docs", "texts", every=0)
    for i in (0, 10, 20):
        sink.update(i, 20)
    sink.close(20, 20)
    assert [line.split(":")[1].split()[0] for line in lines] == ["0/20", "10/20", "20/20"]
    assert lines[-1].endswith("— done") and not any("20/20" in line for line in lines[:-1])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _cli(dep: Deployment, *args: str) -> list[str]:
    return [sys.executable, "-m", "orchestration.cli", "--config", str(dep.config_path), *args]


@pytest.mark.slow
def test_sync_through_a_pipe_prints_periodic_lines_and_step_logs(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    res = subprocess.run(_cli(dep, "sync"), capture_output=True, text=True, env=_env(), timeout=600)
    assert res.returncode == 0, res.stderr
    done = [line for line in res.stderr.splitlines() if line.endswith("— done")]
    stages = [line.split(" ")[0] for line in done]
    assert stages == ["parse", "chunk", "context", "embed", "index"], res.stderr
    assert done[0].startswith("parse [docs]: 6/6 documents (100%)")
    assert "Traceback" not in res.stderr
    # the same counts are in the Dagster step log of the run (what the UI shows)
    from connectors.config import load_config

    instance = get_instance(load_config(dep.config_path))
    run = instance.get_runs(limit=1)[0]
    messages = [e.user_message for e in instance.all_logs(run.run_id)]
    assert any(m.startswith("embed [docs]: ") and "texts" in m for m in messages)
    assert any(m.startswith("parse [docs]: 6/6 documents") for m in messages)


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    buf = b""
    end = time.monotonic() + timeout
    while needle not in buf and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


@pytest.mark.slow
def test_sync_under_a_terminal_shows_bars_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """Under a pseudo-terminal the stages draw tqdm bars with counts; SIGINT during the embed
    stage (the model is loading) stops the run with one line naming what was stored, the store
    stays consistent, and the next sync embeds exactly what was missing."""
    dep = Deployment(tmp_path)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))  # a terminal has a size
    proc = subprocess.Popen(_cli(dep, "sync"), stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=_env(),
                            start_new_session=True)
    os.close(slave)
    try:
        seen = _read_until(master, b"embed [docs]", 300)
        assert b"parse [docs]" in seen and b"documents/s" in seen, seen[-2000:]  # a tqdm bar with a rate
        assert b"6/6" in seen  # counts advanced before the run ended
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
        rest = _read_until(master, b"next run resumes", 120)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = (seen + rest).decode(errors="replace")
    assert proc.returncode == 130, text[-2000:]
    assert "Traceback" not in text and out == b""
    final = [line for line in text.replace("\r", "\n").splitlines() if "interrupted" in line]
    assert len(final) == 1 and "stored before stopping: parse 6, chunk 6, context" in final[0], final
    # `status` says the source's last sync was interrupted, and in which stage
    assert dep.cli("status")["sources"]["docs"]["last_error"].startswith("embed: interrupted")
    # consistent and resumable: nothing re-parsed, every missing embedding computed, indexes agree
    after = dep.cli("sync")
    assert dep.cli("status")["sources"]["docs"]["last_error"] is None
    assert after["recomputed"]["parse"] == 0 and after["recomputed"]["chunk"] == 0
    assert after["recomputed"]["context"] == 0 and after["recomputed"]["embed"] > 0
    from tests.sync_helpers import assert_converged

    assert_converged(dep)


def test_cli_display_is_installed_once_per_process() -> None:
    """A process that runs several commands (tests, benchmarks) keeps one display, not one more
    per command, and the interrupted-line tally starts again with each command."""
    import io

    from orchestration.terminal_progress import show_progress

    buf = io.StringIO()  # not a terminal: periodic lines
    show_progress(buf)
    with P.StageProgress("parse", "docs", "documents") as prog:
        prog.total(1)
        prog.advance(1)
    show_progress(buf)
    assert P.stored_counts() == {}
    with P.StageProgress("parse", "docs", "documents") as prog:
        prog.total(2)
        prog.advance(2)
    assert buf.getvalue().count("— done") == 2 and "2/2 documents" in buf.getvalue()
    assert P.stored_counts() == {"parse": 2}


_POOL_INTERRUPTED = """
import logging, sys
from sqlalchemy.pool import NullPool
from orchestration import interrupts

class Conn:
    def close(self):
        raise KeyboardInterrupt  # Ctrl-C landing while the pool closes a connection
    def rollback(self):
        pass

class DagsterExecutionInterruptedError(BaseException):  # what Dagster raises for SIGINT inside a run
    pass

class InRunConn(Conn):
    def close(self):
        raise DagsterExecutionInterruptedError()  # ... the same, inside a run (an operator pass)

if sys.argv[1] == "cli":
    interrupts.quiet_interrupted_logging()
pool = NullPool(Conn)
for conn in (Conn(), InRunConn()):
    try:
        pool._close_connection(conn)
    except (KeyboardInterrupt, DagsterExecutionInterruptedError):
        print("re-raised")
import time, weakref

class Finalised:
    def __del__(self):
        raise KeyboardInterrupt  # Ctrl-C landing in a finalizer

class Target:
    pass

def callback(ref):
    raise DagsterExecutionInterruptedError()  # ... or in a weakref callback, inside a run

for make in (lambda: Finalised(), lambda: weakref.ref(Target(), callback)):
    try:
        make()  # Python drops what a finalizer raises: the interrupt must come again
        # the redelivered signal ends this sleep at once (bare mode has nothing coming)
        time.sleep(10 if sys.argv[1] == "cli" else 0.5)
        print("lost")
    except (KeyboardInterrupt, DagsterExecutionInterruptedError):
        print("delivered again")
try:
    raise ValueError("a real failure")
except ValueError:
    logging.getLogger("sqlalchemy.pool").error("Exception closing connection", exc_info=True)
"""


def test_ctrl_c_inside_a_connection_close_logs_no_traceback() -> None:
    """SQLAlchemy logs the interrupt it re-raises from a connection close, with its traceback;
    under the CLI only that record is dropped (the flaky half of the Ctrl-C test above). An
    interrupt a finalizer swallowed (KeyboardInterrupt, or Dagster's own inside a run) is sent
    again, or the Ctrl-C would be lost and the sync run to its end (the test above, exit 0)."""
    def run(mode: str) -> subprocess.CompletedProcess[str]:
        # SIGINT as a terminal gives it: a test runner started in the background (`cmd &` in a
        # script) ignores SIGINT, and an ignored signal stays ignored across exec
        return subprocess.run([sys.executable, "-c", _POOL_INTERRUPTED, mode], capture_output=True, text=True,
                              cwd=Path(__file__).parent.parent, timeout=60, check=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    bare = run("bare")  # what a traceback-free Ctrl-C is up against
    assert "KeyboardInterrupt" in bare.stderr and bare.stdout.count("re-raised") == 2
    assert "Traceback" in bare.stderr.split("DagsterExecutionInterruptedError")[0]
    assert "Exception ignored in" in bare.stderr and "Exception closing connection" in bare.stderr
    assert bare.stdout.count("lost") == 2  # a finalizer swallows the interrupt: the Ctrl-C is gone
    quiet = run("cli")
    assert quiet.stdout.count("re-raised") == 2 and quiet.stdout.count("delivered again") == 2, quiet.stdout
    assert "KeyboardInterrupt" not in quiet.stderr and "Exception ignored in" not in quiet.stderr
    assert "DagsterExecutionInterruptedError" not in quiet.stderr
    assert "ValueError: a real failure" in quiet.stderr, "other library errors must still show"


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_stage_stopped_by_an_exception_is_not_reported_done(error: type[BaseException]) -> None:
    """Ctrl-C during embed: the stage's last line says it stopped, never "— done"."""
    import io

    from orchestration.terminal_progress import show_progress

    buf = io.StringIO()  # not a terminal: periodic lines
    show_progress(buf)
    with pytest.raises(error), P.StageProgress("embed", "docs", "texts") as prog:
        prog.total(6)
        raise error
    lines = buf.getvalue().splitlines()
    assert "— done" not in buf.getvalue() and lines[-1] == "embed [docs]: 0/6 texts (0%), 0.0/s — stopped"


@pytest.mark.slow
def test_the_index_total_is_known_once_when_a_sync_writes_live_and_a_candidate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync while a candidate is building writes both generations' indexes: the index stage's
    total grew by the second generation's documents after the first was done (a bar at 100 %
    that fell back). Every generation is planned first now, so the total is said once."""
    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.set_stage("chunk", max_tokens=64)
    dep.cli("reindex")  # a candidate beside live: the next sync writes both
    dep.write("ops/oncall.txt", "On-call policy\n\nAcknowledge a page within ten minutes.\n")
    import assets.pipeline

    rec = Recorder()
    monkeypatch.setattr(assets.pipeline, "_progress", lambda context, stage, unit: P.StageProgress(
        stage, context.partition_key, unit, sinks=[rec] if stage == "index" else []))
    out = dep.cli("sync")
    assert out["recomputed"]["chunk"] >= 2  # the new file, once per generation
    totals = {total for _, total in rec.updates if total}
    assert totals == {2} and rec.closed == (2, 2), (rec.updates, rec.closed)
