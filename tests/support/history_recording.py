"""Re-recording committed histories: run a scenario against a throwaway DevStack and write
what the server recorded. Used by the ``python -m tests.test_*replay`` recorders."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path


def record_in_dev_stack(record: Callable[[str], Awaitable[None]]) -> None:
    """Start a headless DevStack, apply its environment, ``await record(address)``, stop it."""
    from agent.dev.stack import DevStack

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp, DevStack(Path(tmp), with_ui=False, persist_s3=False) as dev:
            previous = dev.apply_env()
            try:
                await record(dev.temporal.address)
            finally:
                DevStack.restore_env(previous)

    asyncio.run(main())
