"""The docs tests' worker: the README's agent (examples/quickstart.py) and docs/composition.md's
(examples/researcher.py) served on the task queue ``agent``, as ``agent dev --agent ...`` serves them, against the session's
Temporal dev server, S3 and scripted model (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from core.settings import DEFAULT_TASK_QUEUE
from examples.quickstart import delete_file
from examples.researcher import lead
from worker import create_worker


@pytest.fixture(scope="session")
async def docs_worker(client: Client) -> AsyncIterator[str]:
    """A worker with the quickstart's and the researcher example's tools on the default task
    queue; yields the queue name."""
    async with create_worker(client, tools=[delete_file, *lead.tool_functions], task_queue=DEFAULT_TASK_QUEUE):
        yield DEFAULT_TASK_QUEUE
