"""Waiting for a condition in a test: the one poll loop of the suite.

A test that must wait for something another process does (a workflow task, visibility, a file a
worker writes) asks :func:`eventually` for it instead of sleeping a fixed time, so it waits no
longer than the condition needs and, when the condition never holds, fails saying what it waited
for and what it saw last.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: Characters of the last value's repr an AssertionError shows (histories can be long).
SHOWN_CHARS = 2_000


async def eventually(
    probe: Callable[[], T | Awaitable[T]],
    until: Callable[[T], object] = bool,
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    message: str = "the condition never held",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``probe`` until ``until`` accepts what it returned; return that value.

    :param probe: Called with no arguments, plain or ``async``; what it returns (awaited when it is
        awaitable) is the value looked at.
    :param until: Says whether a value is the one waited for; by default, any truthy value is.
    :param timeout: Seconds after the first call at which it gives up (the probe is called once
        more at that moment, so a slow probe still gets its last look).
    :param interval: Seconds between one call's end and the next call.
    :param message: What the test waited for, the start of the AssertionError's text.
    :param ignoring: Exception types the probe may raise meaning "not yet" (a server still starting);
        the last one raised counts as the last value seen. Any other exception propagates at once.
    :raises AssertionError: When ``timeout`` passes first: ``message``, the timeout and the last value.
    :raises ValueError: When ``timeout`` or ``interval`` is not a positive number.
    """
    if not timeout > 0 or not interval > 0:
        raise ValueError(
            f"timeout and interval must be positive seconds, got timeout={timeout!r}, interval={interval!r}"
        )
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + timeout
    while True:
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
        except ignoring as error:
            last: object = error
        else:
            if until(value):
                return value
            last = value
        remaining = give_up_at - loop.time()
        if remaining <= 0:
            shown = repr(last)
            if len(shown) > SHOWN_CHARS:
                shown = shown[:SHOWN_CHARS] + f"... ({len(shown)} characters)"
            raise AssertionError(f"{message} (waited {timeout:g} s); last seen: {shown}")
        await asyncio.sleep(min(interval, remaining))
