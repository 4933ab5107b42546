"""Heartbeat while an awaited call runs, so a crashed worker is noticed within the
heartbeat timeout instead of the (long) start-to-close timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")

HEARTBEAT_EVERY_SECONDS = 1.0


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
