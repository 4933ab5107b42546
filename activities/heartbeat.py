"""Heartbeats: an activity awaiting a long call heartbeats every second, so a crashed worker is
noticed within ``HEARTBEAT_TIMEOUT`` instead of the (long) start-to-close timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")

HEARTBEAT_EVERY_SECONDS = 1.0
#: What workflow code gives heartbeating activities: three missed beats and the call is retried
#: elsewhere (measured resume: see README "Crash recovery").
HEARTBEAT_TIMEOUT = timedelta(seconds=3)


async def with_heartbeats(call: Awaitable[T], every: float = HEARTBEAT_EVERY_SECONDS) -> T:
    """Await ``call`` while heartbeating every ``every`` seconds."""
    task = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        if not task.done():
            task.cancel()
