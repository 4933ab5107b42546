"""The inbox and sub-agents (``Agent.as_tool``) over plain HTTP: a child run's id holds "/"
(``{parent}/{call}``), and every page of a run is reachable with it; the waiting list says whose
sub-agent a call belongs to; the run page shows the tree of runs; deciding there lets the parent go on."""

from __future__ import annotations

import asyncio
import re

import httpx

from agent import ChatMessage, get_run
from agent.inbox import IdentityConfig, create_app
from tests.agent.inbox.support import IDENTITY_HEADER
from tests.support.polling import eventually
from tests.support.sub_agents import script_team, team, wait_child_pending


def http(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://inbox.test", headers={IDENTITY_HEADER: "ann"}
    )


def tree_of(html: str) -> list[str]:
    """The run ids of the page's tree of runs, in page order."""
    section = html.split('data-testid="run-tree"', 1)
    return re.findall(r'<li data-run="([^"]+)"', section[1]) if len(section) == 2 else []


async def test_a_childs_pages_the_tree_and_deciding_it(client, worker, scripted, model, run_id):
    lead, _, _ = team(model)
    script_team(scripted, model)
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    child_id = f"{run_id}/r1"
    (pending,) = await wait_child_pending(get_run(client, child_id))
    await asyncio.wait_for(get_run(client, f"{run_id}/s1").result(), timeout=30)
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    async with http(app) as browser:
        waiting = await eventually(
            lambda: browser.get("/"),
            lambda page: child_id in page.text,
            message="the child's waiting call never shows in the inbox's list",
        )
        assert f'sub-agent of <a href="/runs/{run_id}">{run_id}</a>' in waiting.text

        child_page = await browser.get(f"/runs/{child_id}")
        assert child_page.status_code == 200 and f"Run <code>{child_id}</code>" in child_page.text
        tree = await eventually(
            lambda: browser.get(f"/runs/{run_id}"),
            lambda page: len(tree_of(page.text)) == 3,
            message="the parent's page never shows its two children",
        )
        assert tree_of(tree.text) == [run_id, child_id, f"{run_id}/s1"]
        assert tree_of(child_page.text)[0] == run_id  # a child's page shows its parent too
        conversation = await browser.get(f"/runs/{child_id}/conversation")
        assert conversation.status_code == 200 and "what is 2+3?" in conversation.text
        no_ref = await browser.get(f"/runs/{child_id}/results")  # the results route, not the run page
        assert no_ref.status_code == 400 and "No reference" in no_ref.text

        call_url = f"/runs/{child_id}/calls/{pending.tool_call_id}"
        call_page = await browser.get(call_url)
        assert call_page.status_code == 200
        token = re.search(r'name="csrf_token" value="([^"]+)"', call_page.text).group(1)
        sent = await browser.post(f"{call_url}/decide", data={"action": "approve", "csrf_token": token})
        assert sent.status_code == 303 and sent.headers["location"].startswith(f"/runs/{child_id}?decided=")

    result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result.last_message.text == "Both are done."
