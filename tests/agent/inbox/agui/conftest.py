"""Fixtures of the AG-UI tests: the official client (installed from the npm registry once per
machine), and an inbox serving a test's own agent at /ag-ui/chat in the test's event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from agent.inbox import IdentityConfig, InboxServer, create_app
from agent.inbox.agui import AguiAgent
from tests.agent.inbox.agui.support import chat_agent, install_client
from tests.agent.inbox.support import IDENTITY_HEADER


@pytest.fixture(scope="session")
def agui_client_dir() -> Path:
    """Where ``@ag-ui/client`` 1.0.x (and esbuild) are installed."""
    return install_client()


@pytest.fixture
def serve_agui(client: Client, browser_worker: str) -> Callable:
    """``async with serve_agui(model) as url``: an inbox (identity: the X-Forwarded-User header,
    unless ``identity=`` says) serving :func:`chat_agent` for ``model`` at ``url`` = ``.../ag-ui/chat``."""

    def serve(model: str, identity: IdentityConfig | None = None) -> _Served:
        agent = AguiAgent(name="chat", agent=chat_agent(model), task_queue=browser_worker)
        identity = identity or IdentityConfig(header=IDENTITY_HEADER)
        app = create_app(client, identity=identity, agents={"chat": agent})
        return _Served(InboxServer(app, port=0))

    return serve


class _Served:
    def __init__(self, server: InboxServer) -> None:
        self.server = server

    async def __aenter__(self) -> str:
        await self.server.start()
        return f"{self.server.url}/ag-ui/chat"

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()


@pytest.fixture
async def agui_url(serve_agui, model: str) -> AsyncIterator[str]:
    """The endpoint of this test's agent (its own scripted model)."""
    async with serve_agui(model) as url:
        yield url
