"""Fixtures of the browser tests: a worker with ``deploy_service``, the inbox served by uvicorn in
the test's event loop (so it shares the session's Temporal client), and Debian's Chromium driven
by Playwright's async API."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import async_playwright
from temporalio.client import Client

from agent.inbox import IdentityConfig, InboxServer, InboxSettings, create_app
from tests.agent.inbox.support import (
    BROWSER_TASK_QUEUE,
    CHROMIUM,
    CHROMIUM_ARGS,
    IDENTITY_HEADER,
    TOOL_LOG_ENV,
    deploy_service,
    fetch_logs,
)
from worker import create_worker


@pytest.fixture(scope="session")
async def browser_worker(client: Client, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A worker holding ``deploy_service`` on its own task queue; the tool logs to a session file."""
    os.environ[TOOL_LOG_ENV] = str(tmp_path_factory.mktemp("inbox") / "tool-calls.jsonl")
    async with create_worker(client, tools=[deploy_service, fetch_logs], task_queue=BROWSER_TASK_QUEUE):
        yield BROWSER_TASK_QUEUE
    os.environ.pop(TOOL_LOG_ENV, None)


@pytest.fixture(scope="session")
async def inbox(client: Client, browser_worker: str) -> AsyncIterator[str]:
    """The inbox (approver = the ``X-Forwarded-User`` header) on a free loopback port; yields its URL."""
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER), settings=InboxSettings(poll_seconds=1.0))
    async with InboxServer(app, port=0) as server:
        yield server.url


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[object]:
    """Headless Chromium from Debian's package (never ``playwright install``)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/bootstrap.sh does it in CI)")
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        await browser.close()


@pytest.fixture
async def as_user(browser) -> AsyncIterator[object]:
    """``await as_user("alice")``: a new page whose requests carry the identity header for that name."""
    contexts = []

    async def open_page(name: str):
        context = await browser.new_context(
            extra_http_headers={IDENTITY_HEADER: name}, viewport={"width": 1280, "height": 900}
        )
        contexts.append(context)
        return await context.new_page()

    yield open_page
    for context in contexts:
        await context.close()
