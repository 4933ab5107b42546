"""What a plugin does when its own start-up check fails before the worker polls."""

from __future__ import annotations

from temporalio.worker import Worker


def release_shutdown_waiters(worker: Worker) -> None:
    """Mark ``worker`` as shut down, so ``async with worker`` raises the start-up error instead of
    waiting for a shutdown that never comes (temporalio's ``Worker._run`` does the same when its
    own validation fails). Nothing polls yet, so nothing else needs stopping."""
    shutdown_complete = getattr(worker, "_shutdown_complete_event", None)
    if shutdown_complete is not None:
        shutdown_complete.set()
