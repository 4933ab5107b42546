"""One ``agent dev`` per data directory: a lock file holding the owner's PID.

The lock is an exclusive ``flock`` on ``DATA_DIR/agent-dev.lock``, held for as long as the process
lives; the PID written into the file is for the message. A process that is killed releases the
``flock`` with its last file descriptor, so its leftover file is a stale lock that the next start
takes over; a PID that the OS reused for another process cannot fake a live owner.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType

#: The lock file under a data directory.
LOCK_FILE = "agent-dev.lock"


class AlreadyRunningError(RuntimeError):
    """Another live process holds the data directory's lock.

    :param pid: That process's PID, as its lock file says (``None`` if the file held none yet).
    """

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        self.pid = pid
        owner = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(
            f"an agent dev already runs here ({owner}), on {data_dir}. Use that one (source {data_dir}/env.sh "
            "in another shell), stop it (Ctrl-C in its terminal), or start another with --data-dir OTHER_DIR."
        )


class DataDirLock:
    """The exclusive lock of a data directory (a context manager).

    :param data_dir: The directory (created if missing).
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LOCK_FILE
        self._fd: int | None = None
        #: True when the last :meth:`acquire` found a file left by a process that had died.
        self.took_over_stale = False

    def acquire(self) -> DataDirLock:
        """Take the lock and write this process's PID into the file. Returns ``self``.

        :raises AlreadyRunningError: When a live process holds it.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise AlreadyRunningError(self.data_dir, pid) from None
        self.took_over_stale = _read_pid(fd) is not None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Remove the file and drop the lock. Idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(fd)

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except ValueError:
        return None
