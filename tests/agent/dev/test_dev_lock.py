"""One ``agent dev`` per data directory: a live holder refuses a second start with its PID; the file
left by a killed holder is taken over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.dev.lock import LOCK_FILE, AlreadyRunningError, DataDirLock
from agent.dev.processes import ROOT

HOLDER = """
import sys, time
from agent.dev.lock import DataDirLock
DataDirLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


def _start_holder(data_dir: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_live_holder_refuses_with_its_pid_and_a_killed_ones_lock_is_taken_over(tmp_path: Path) -> None:
    holder = _start_holder(tmp_path)
    try:
        with pytest.raises(
            AlreadyRunningError, match=rf"^an agent dev already runs here \(pid {holder.pid}\)"
        ) as raised:
            DataDirLock(tmp_path).acquire()
        assert raised.value.pid == holder.pid
        assert (tmp_path / LOCK_FILE).read_text() == f"{holder.pid}\n"  # the refusal changed nothing
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert (tmp_path / LOCK_FILE).read_text() == f"{holder.pid}\n"  # killed: its file stays behind

    lock = DataDirLock(tmp_path).acquire()
    try:
        assert lock.took_over_stale
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    finally:
        lock.release()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_lock_file_naming_a_dead_pid_is_stale(tmp_path: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_FILE).write_text(finished.stdout)
    with DataDirLock(tmp_path) as lock:
        assert lock.took_over_stale
        with pytest.raises(AlreadyRunningError, match=rf"\(pid {os.getpid()}\)"):
            DataDirLock(tmp_path).acquire()  # a second holder in the same process is refused too
