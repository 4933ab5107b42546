"""The inbox's "approve all" for a run over plain HTTP: each waiting call gets its own decision,
validated by the run on its own, and the page lists the outcome per call."""

from __future__ import annotations

import re

import httpx

from agent.inbox import IdentityConfig, create_app
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests.agent.inbox.support import IDENTITY_HEADER
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


async def test_approve_all_decides_each_call_on_its_own(client, worker, scripted, model, run_id):
    scripted.script(
        model, [calls(call("add", a=1, b=2), call("echo", text="hi"), call("add", a=3, b=4)), {"text": "ok"}]
    )
    hook = ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy())}, approvers={"echo": ["ops"]})
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    first, echo, second = await wait_pending(handle, count=3)
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://inbox.test", headers={IDENTITY_HEADER: "alice"}
    ) as browser:
        page = await browser.get(f"/runs/{run_id}/calls/{first.tool_call_id}")
        assert 'data-testid="approve-all"' in page.text and "Approve all 3 waiting calls" in page.text
        forged = await browser.post(f"/runs/{run_id}/approve-all", data={"csrf_token": "x"})
        assert forged.status_code == 403
        done = await browser.post(f"/runs/{run_id}/approve-all", data={"csrf_token": csrf_of(page.text)})
    assert done.status_code == 409 and "2 of 3 approved" in done.text  # one refusal, two decisions
    rows = dict(re.findall(r'<tr data-call="([^"]+)" class="(accepted|refused)"', done.text))
    assert rows == {first.tool_call_id: "accepted", echo.tool_call_id: "refused", second.tool_call_id: "accepted"}
    assert "allowed approvers are ops" in done.text
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [echo.tool_call_id]
    await handle.confirm(echo.tool_call_id, approver="ops")
    result = await handle.result()
    confirmed = next(m for m in result.messages if m.tool_calls).tool_calls
    assert [c.extra["confirmation"]["approver"] for c in confirmed] == ["alice", "ops", "alice"]
