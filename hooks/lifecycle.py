"""Running a hook's (or a hook part's) lifecycle: ``warm_up``/``close``, the async variant first.

The run loop does this for each hook once per workflow run; a composite hook (``CompactionHook``,
``SummarizationCompactor``) does it for its parts. What each step may do is in
:mod:`hooks.protocol` (``WarmsUp``, ``WarmsUpAsync``, ``Closes``, ``ClosesAsync``).
"""

from __future__ import annotations

import inspect
from typing import Any

from hooks.protocol import Closes, ClosesAsync, WarmsUp, WarmsUpAsync


def warm_up(part: Any) -> None:
    """``part.warm_up()`` when it has one (:class:`WarmsUp`)."""
    if isinstance(part, WarmsUp):
        part.warm_up()


def close(part: Any) -> None:
    """``part.close()`` when it has one (:class:`Closes`)."""
    if isinstance(part, Closes):
        part.close()


async def warm_up_async(part: Any) -> None:
    """``await part.warm_up_async()`` when it has one (:class:`WarmsUpAsync`), else :func:`warm_up`.
    The run loop does this for each hook, and composite hooks for their parts."""
    if isinstance(part, WarmsUpAsync):
        await _awaited(part.warm_up_async())
    else:
        warm_up(part)


async def close_async(part: Any) -> None:
    """``await part.close_async()`` when it has one (:class:`ClosesAsync`), else :func:`close`."""
    if isinstance(part, ClosesAsync):
        await _awaited(part.close_async())
    else:
        close(part)


async def _awaited(outcome: Any) -> None:
    # A duck-typed part may define its "async" variant as a plain method.
    if inspect.isawaitable(outcome):
        await outcome
