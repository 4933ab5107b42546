"""Telling a person what a command waits for, without noise when the wait is short."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TextIO

#: A wait shorter than this goes unannounced (a decision takes 13-20 ms when a worker is up).
ANNOUNCE_AFTER_SECONDS = 1.0


@contextlib.asynccontextmanager
async def announce_if_slow(
    text: str, after: float = ANNOUNCE_AFTER_SECONDS, out: TextIO | None = None
) -> AsyncIterator[None]:
    """Print ``text`` (to ``out``, default stderr) if the block is still running after ``after``
    seconds."""

    async def announce() -> None:
        await asyncio.sleep(after)
        print(text, file=out or sys.stderr, flush=True)

    task = asyncio.ensure_future(announce())
    try:
        yield
    finally:
        task.cancel()
