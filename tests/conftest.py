"""Shared fixtures: a real Temporal dev server and moto S3 (one DevStack per session), the
scripted OpenAI-compatible model server, a client with the project's converter, and a worker.

Each test scripts its own model name (the ``model`` fixture), so tests never share replies.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from agent.client import connect
from agent.dev.scripted_model import ScriptedModelServer
from agent.dev.stack import DevStack
from bench.cancel_support import CONVERSATION_TOOLS
from tests.tools import TEST_TOOLS
from worker import create_worker

TEST_TASK_QUEUE = "tests"

# The suite is the workers' operator: its agents' hooks, policies and stores live in tests/, bench/
# and examples/, which a run's input may name only because this says so (core/trust.py). Set before
# any worker or client reads its settings, and inherited by the workers the tests start as processes.
os.environ.setdefault("AGENT_TRUSTED_MODULES", "tests,bench,examples")

#: Fixtures that start a server or a browser (or need one that does). A test using any of them is
#: marked ``integration``; every other test is marked ``unit`` unless its module says
#: ``pytestmark = pytest.mark.integration`` (a test that starts its own servers).
SERVER_FIXTURES = frozenset({"stack", "client", "worker", "scripted", "moto_s3", "browser"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "unit: needs no server (set by tests/conftest.py from the test's fixtures)")
    config.addinivalue_line(
        "markers", "integration: needs a server or a browser (set from the fixtures, or by the module)"
    )
    config.addinivalue_line(
        "markers",
        "slow: takes more than about 5 s on a quiet machine; runs first, so that across processes "
        "(scripts/test runs pytest -n) it never ends the run alone",
    )


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by the markers set here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test ``unit`` or ``integration`` from its fixtures (``pytest -m unit`` runs
    what needs no server), move the tests marked ``slow`` to the front (the same order in every
    xdist process, which pytest-xdist requires), then deselect the history recorders (marked
    ``recorder``): they rewrite committed files, so they run only when ``RECORD_HITL_HISTORIES=1``
    asks for them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: otherwise in file order
    for item in items:
        if item.get_closest_marker("integration") is None and not SERVER_FIXTURES & set(
            getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.unit)
        else:
            item.add_marker(pytest.mark.integration)
    if os.environ.get("RECORD_HITL_HISTORIES") == "1":
        return
    recorders = [item for item in items if item.get_closest_marker("recorder")]
    if recorders:
        config.hook.pytest_deselected(items=recorders)
        items[:] = [item for item in items if not item.get_closest_marker("recorder")]


@pytest.fixture(scope="session", autouse=True)
def side_effects_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where ``tests.tools.record`` appends when a test names no file of its own.

    Without ``SIDE_EFFECTS_FILE`` the tool would write into the working directory, the checkout;
    a test that reads the lines sets its own file with ``monkeypatch.setenv``."""
    path = tmp_path_factory.mktemp("side-effects") / "effects.jsonl"
    previous = os.environ.get("SIDE_EFFECTS_FILE")
    os.environ["SIDE_EFFECTS_FILE"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("SIDE_EFFECTS_FILE", None)
    else:
        os.environ["SIDE_EFFECTS_FILE"] = previous


@pytest.fixture(scope="session", autouse=True)
def side_effect_limits() -> Iterator[None]:
    """The workers' ``AGENT_FILE_ROOTS`` for the session: the temporary directory, where every
    test's ``tmp_path`` is and where the committed histories' stores were recorded. Buckets: the
    stack's ``TOOL_RESULTS_BUCKET``; a test that uses another bucket or a webhook allows it
    itself (``tests.support.side_effects.allow_side_effects``)."""
    previous = os.environ.get("AGENT_FILE_ROOTS")
    os.environ["AGENT_FILE_ROOTS"] = tempfile.gettempdir()
    yield
    if previous is None:
        os.environ.pop("AGENT_FILE_ROOTS", None)
    else:
        os.environ["AGENT_FILE_ROOTS"] = previous


@pytest.fixture(scope="session")
def scripted() -> Iterator[ScriptedModelServer]:
    """The scripted model; the worker's OPENAI_BASE_URL points at it (never at a real model)."""
    server = ScriptedModelServer().start()
    previous = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    os.environ["OPENAI_BASE_URL"] = server.base_url
    os.environ["OPENAI_API_KEY"] = "scripted-model"
    yield server
    server.stop()
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """Temporal dev server + moto S3 on free loopback ports, env applied for the session."""
    data_dir: Path = tmp_path_factory.mktemp("devstack")
    dev = DevStack(data_dir, with_ui=False, persist_s3=False).start()
    previous = dev.apply_env()
    yield dev
    dev.stop()
    DevStack.restore_env(previous)


@pytest.fixture(scope="session")
async def client(stack: DevStack, scripted: ScriptedModelServer) -> Client:
    return await connect(stack.temporal.address, stack.temporal.namespace)


@pytest.fixture(scope="session")
async def worker(client: Client) -> AsyncIterator[str]:
    """A worker with the test tools on ``TEST_TASK_QUEUE``; yields the queue name."""
    async with create_worker(client, tools=[*TEST_TOOLS, *CONVERSATION_TOOLS], task_queue=TEST_TASK_QUEUE):
        yield TEST_TASK_QUEUE


@pytest.fixture
def model(scripted: ScriptedModelServer) -> str:
    """A model name of this test's own (script it with ``scripted.script(model, [...])``)."""
    return f"m-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"
