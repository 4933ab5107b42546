"""How a long-running command (a worker, ``agent inbox``, ``agent codec-server``, ``agent dev``) learns
it should stop: SIGINT (Ctrl-C) or SIGTERM (a supervisor, ``kill PID``)."""

from __future__ import annotations

import asyncio
import signal


def stop_requested() -> asyncio.Event:
    """An event the running loop sets on SIGINT or SIGTERM (call it from within that loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop
