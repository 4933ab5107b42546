"""The inbox's one-time approval links over plain HTTP (httpx against the app, the session's dev
server and a real worker): GET shows the call and decides nothing, only POST decides, as the
approver the link was issued to; a link works once and is refused, case by case, when forged,
expired, already used, after its twin was used, or after the call was escalated away."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import httpx
import pytest

from agent.inbox import IdentityConfig, create_app
from core.approval_links import LinkClaims, issue_token
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy, Escalation
from tests.agent.inbox.support import IDENTITY_HEADER
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending
from tests.support.polling import eventually

LINK_SECRET = "inbox-link-secret-0123456789abcdef01"


@pytest.fixture(autouse=True)
def link_secret(monkeypatch):
    monkeypatch.setenv("AGENT_APPROVAL_LINK_SECRET", LINK_SECRET)


def http(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inbox.test")


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


def link(pending, run_id: str, action: str, approver: str, **changes) -> str:
    claims = LinkClaims(
        run_id=run_id,
        tool_call_id=pending.tool_call_id,
        request_id=pending.request_id,
        action=action,
        approver=approver,
        arguments_sha256=pending.arguments_sha256,
        expires_at=pending.expires_at,
    ).model_copy(update=changes)
    return "/link/" + quote(issue_token(claims, LINK_SECRET), safe="")


async def use(browser: httpx.AsyncClient, url: str, **form) -> httpx.Response:
    """Open the link and press its button; once the call is decided the page has no button, so
    this sends the form as a resubmission would (with the page's CSRF cookie)."""
    page = await browser.get(url)
    token = csrf_of(page.text) if 'data-testid="link-button"' in page.text else browser.cookies.get("inbox_csrf", "")
    return await browser.post(url, data={"csrf_token": token, **form})


async def parked(client, worker, scripted, model, run_id, **options):
    scripted.script(model, [calls(call("add", a=2, b=3)), {"text": "done"}])
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), approvers=["ann", "bob"], **options)
    handle = await start(hitl_agent(model, ConfirmationHook({"*": strategy})), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    return handle, pending


async def test_get_decides_nothing_post_decides_once_as_the_links_approver(client, worker, scripted, model, run_id):
    handle, pending = await parked(client, worker, scripted, model, run_id)
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))  # no header sent: the link is enough
    approve, twin = link(pending, run_id, "confirm", "bob"), link(pending, run_id, "reject", "ann")
    async with http(app) as browser:
        for _ in range(3):  # a previewer fetching the link, again and again
            page = await browser.get(approve)
            assert page.status_code == 200 and 'data-testid="link-button"' in page.text and "bob" in page.text
        assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]
        used = await use(browser, approve)
        assert used.status_code == 200 and 'data-testid="link-done"' in used.text
        again = await use(browser, approve)
        twin_used = await use(browser, twin, feedback="too late")
    # refused by the run's validator ("already decided (confirm by bob ...)") or, once the run has
    # finished, because nothing waits any more: either way, once
    assert again.status_code == 409 and "already decided" in again.text
    assert twin_used.status_code == 409 and "already decided" in twin_used.text
    result = await handle.result()
    record = next(m for m in result.messages if m.tool_calls).tool_calls[0].extra["confirmation"]
    assert (record["approver"], record["action"], record["via"]) == ("bob", "confirm", "update")


async def test_forged_altered_and_expired_links_are_refused_before_the_run(client, worker, scripted, model, run_id):
    handle, pending = await parked(client, worker, scripted, model, run_id)
    app = create_app(client)
    good = link(pending, run_id, "confirm", "ann")
    body, _, mac = good.removeprefix("/link/").partition(".")
    other = link(pending, run_id, "confirm", "mallory").removeprefix("/link/").split(".")[0]
    async with http(app) as browser:
        altered = await browser.get(f"/link/{other}.{mac}")  # someone else's name under ann's signature
        garbage = await browser.get("/link/not-a-token")
        expired = await browser.get(
            link(pending, run_id, "confirm", "ann", expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        posted = await browser.post(f"/link/{other}.{mac}", data={"csrf_token": "x"})
    assert altered.status_code == 403 and "signature does not match" in altered.text
    assert garbage.status_code == 403
    assert expired.status_code == 410 and "expired" in expired.text
    assert posted.status_code == 403
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]
    await handle.reject(pending.tool_call_id, approver="ann")
    await handle.result()


async def test_a_link_is_refused_once_the_call_was_escalated_away(client, worker, scripted, model, run_id):
    escalation = [Escalation(after=timedelta(seconds=1), approvers=["lead"])]
    handle, pending = await parked(client, worker, scripted, model, run_id, escalation=escalation)
    app = create_app(client)
    await eventually(
        handle.pending_confirmations, lambda found: found and found[0].escalations == 1, message="never escalated"
    )
    async with http(app) as browser:
        shown = await browser.get(link(pending, run_id, "confirm", "ann"))
        assert 'data-testid="link-superseded"' in shown.text and 'data-testid="link-button"' not in shown.text
        refused = await use(browser, link(pending, run_id, "confirm", "ann"))  # a form sent anyway
        accepted = await use(browser, link(pending, run_id, "confirm", "lead"))
    assert (
        refused.status_code == 409
        and "Approver &#39;ann&#39; may not decide" in refused.text
        and "lead" in refused.text
    )
    assert accepted.status_code == 200 and 'data-testid="link-done"' in accepted.text
    await handle.result()


async def test_links_are_off_without_the_key(client, worker, scripted, model, run_id, monkeypatch):
    handle, pending = await parked(client, worker, scripted, model, run_id)
    monkeypatch.delenv("AGENT_APPROVAL_LINK_SECRET")
    async with http(create_app(client)) as browser:
        page = await browser.get(link(pending, run_id, "confirm", "ann"))
    assert page.status_code == 404 and "AGENT_APPROVAL_LINK_SECRET" in page.text
    await handle.reject(pending.tool_call_id, approver="ann")
    await handle.result()


async def test_a_link_does_not_decide_a_later_run_or_a_rewound_one_with_the_same_ids(
    client, worker, scripted, model, run_id
):
    """Issue 30: a link for ``call_fixed`` of run R, never used, approved the same call (same id,
    same arguments) of a later run with id R. A link binds to the request it was issued for."""
    fixed = calls(call("add", id="call_fixed", a=2, b=3))
    scripted.script(model, [fixed])
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), approvers=["ann"])
    agent = hitl_agent(model, ConfirmationHook({"*": strategy}))
    first = await start(agent, client, worker, run_id)
    (old,) = await wait_pending(first)
    stale = link(old, run_id, "confirm", "ann")
    await first.cancel("never used")
    await first.result()

    scripted.script(model, [fixed, {"text": "done"}])
    later = await start(agent, client, worker, run_id)  # same run id, call id and arguments
    (new,) = await wait_pending(later)
    assert (new.tool_call_id, new.arguments_sha256) == (old.tool_call_id, old.arguments_sha256)
    async with http(create_app(client)) as browser:
        shown = await browser.get(stale)
        refused = await use(browser, stale)
    assert 'data-testid="link-button"' not in shown.text and 'data-testid="link-stale"' in shown.text
    assert refused.status_code == 409 and "was issued for an earlier request" in refused.text
    assert [p.tool_call_id for p in await later.pending_confirmations()] == ["call_fixed"]

    # a rewind to the step re-asks the same call: the link issued before it no longer applies either
    before_rewind = link(new, run_id, "confirm", "ann")
    scripted.script(model, [fixed, {"text": "done"}])
    await later.rewind(0, "ask again")
    await eventually(
        later.pending_confirmations,
        lambda found: found and found[0].requested_at > new.requested_at,
        message="the call was never asked again after the rewind",
    )
    async with http(create_app(client)) as browser:
        refused = await use(browser, before_rewind)
        fresh = await use(browser, link((await later.pending_confirmations())[0], run_id, "confirm", "ann"))
    assert refused.status_code == 409 and "was issued for an earlier request" in refused.text
    assert fresh.status_code == 200 and 'data-testid="link-done"' in fresh.text
    assert (await later.result()).last_message.text.endswith("done")
