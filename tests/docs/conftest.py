"""The docs tests' worker: the README's agent (examples/quickstart.py) served on the task queue
``agent``, as ``agent dev --agent examples.quickstart:agent`` serves it, against the session's
Temporal dev server, S3 and scripted model (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from core.settings import DEFAULT_TASK_QUEUE
from examples.quickstart import delete_file
from worker import create_worker


@pytest.fixture(scope="session")
async def docs_worker(client: Client) -> AsyncIterator[str]:
    """A worker with the quickstart's tools on the default task queue; yields the queue name."""
    async with create_worker(client, tools=[delete_file], task_queue=DEFAULT_TASK_QUEUE):
        yield DEFAULT_TASK_QUEUE
