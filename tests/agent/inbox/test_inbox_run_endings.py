"""The inbox's pages of a cancelled run say "cancelled: REASON", not Temporal's "completed"."""

from __future__ import annotations

import re

from agent.inbox import IdentityConfig, create_app
from tests.agent.inbox.support import BROWSER_TASK_QUEUE, IDENTITY_HEADER
from tests.agent.inbox.test_inbox_http import http
from tests.support.sessions import answered_session


def by_testid(html: str, name: str) -> str:
    match = re.search(rf'data-testid="{name}">(.*?)</', html, re.S)
    assert match, f"the page has no {name}"
    return match.group(1)


async def test_a_cancelled_run_reads_cancelled_with_its_reason(client, scripted, model, run_id, browser_worker):
    scripted.script(model, [{"text": "Hi, how can I help?"}])
    handle = await answered_session(client, model, run_id, BROWSER_TASK_QUEUE, first="hello")
    await handle.cancel("closed by ann")
    await handle.result()
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    async with http(app, headers={IDENTITY_HEADER: "ann"}) as browser:
        run_page = await browser.get(f"/runs/{run_id}")
        conversation = await browser.get(f"/runs/{run_id}/conversation")
    assert run_page.status_code == 200 and conversation.status_code == 200
    assert by_testid(run_page.text, "run-status") == "cancelled: closed by ann"
    assert by_testid(conversation.text, "conversation-status") == "run cancelled: closed by ann"
