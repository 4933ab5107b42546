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
    """Await ``call`` while heartbeating every ``every`` seconds.

    A call that ends within ``every`` sends no heartbeat at all. The beats come from a timer on
    the event loop rather than a task racing the call, so a short call costs one timer, not a
    task and a wait per second (a model or tool call is usually short).
    """
    if activity.info().is_local:  # a local activity has no heartbeats
        return await call
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle

    def beat() -> None:
        nonlocal timer
        activity.heartbeat()
        timer = loop.call_later(every, beat)

    timer = loop.call_later(every, beat)  # the timer runs in this context: the activity's
    try:
        return await call
    finally:
        timer.cancel()
