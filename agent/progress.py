"""Telling a person what a command waits for, without noise when the wait is short."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta
from typing import TextIO, TypeVar

from agent.deadlines import DeadlinePassed, within

T = TypeVar("T")

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


async def wait_within(seconds: float | None, what: str, awaitable: Awaitable[T], announce: bool = False) -> T:
    """``awaitable``, given at most ``seconds`` (None: no limit), for a command's ``--timeout``.

    :param what: What is awaited, e.g. ``"run R to accept the message"``.
    :param announce: Say ``waiting for WHAT (up to N s) ...`` once the wait takes over a second.
    :raises ValueError: ``seconds`` is not more than 0.
    :raises TimeoutError: After ``seconds``, saying what was awaited and that the run goes on.
    """
    if seconds is not None and seconds <= 0:
        raise ValueError(f"--timeout must be more than 0 seconds, got {seconds:g}")
    note = announce_if_slow(f"waiting for {what} (up to {seconds:g} s) ...") if announce and seconds else None

    async def wait(_: timedelta | None) -> T:
        return await awaitable

    try:
        async with note or contextlib.nullcontext():
            # within(), not wait_for: an Update's client turns the cancel into its own error.
            return await within(timedelta(seconds=seconds) if seconds is not None else None, wait)
    except DeadlinePassed as err:
        raise TimeoutError(f"stopped waiting for {what} after {seconds:g} s (--timeout); the run goes on") from err
