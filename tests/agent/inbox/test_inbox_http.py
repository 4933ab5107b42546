"""The inbox's rules over plain HTTP (httpx against the app, the session's dev server and a real
worker): identity never from a form field, CSRF on every POST, a read-only inbox, token sign-in,
and offloaded results shown through the result store."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pytest

from agent import ChatMessage
from agent.inbox import IdentityConfig, IdentityConfigError, InboxSettings, create_app, load_tokens
from agent.inbox.csrf import CsrfTokens
from tests.agent.inbox.support import IDENTITY_HEADER, deploy_agent, deploy_script, start_parked_run, tool_calls_of


def http(app, **kwargs) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inbox.test", **kwargs)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


@pytest.fixture
async def parked(client, scripted, model, run_id, browser_worker):
    scripted.script(model, deploy_script("inventory", 2))
    handle, call = await start_parked_run(client, model, run_id, "Deploy inventory")
    yield handle, call
    if await handle.pending_confirmations():
        await handle.reject(call.tool_call_id, approver="cleanup")
    await handle.result()


async def test_a_post_without_a_valid_csrf_token_is_refused(client, parked):
    handle, call = parked
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    url = f"/runs/{handle.run_id}/calls/{call.tool_call_id}"
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        page = await browser.get(url)
        assert page.status_code == 200
        token = csrf_of(page.text)
        missing = await browser.post(f"{url}/decide", data={"action": "approve"})
        forged = await browser.post(f"{url}/decide", data={"action": "approve", "csrf_token": CsrfTokens().new()})
    assert missing.status_code == 403 and "security token" in missing.text
    assert forged.status_code == 403  # a well-formed token that is not the cookie's
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as other:  # no cookie: a cross-site form
        cross_site = await other.post(f"{url}/decide", data={"action": "approve", "csrf_token": token})
    assert cross_site.status_code == 403
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call.tool_call_id]


async def test_the_approver_comes_from_the_identity_never_from_the_form(client, parked):
    handle, call = parked
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    url = f"/runs/{handle.run_id}/calls/{call.tool_call_id}"
    async with http(app) as anonymous:
        assert (await anonymous.get(url)).status_code == 401
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        token = csrf_of((await browser.get(url)).text)
        del browser.headers[IDENTITY_HEADER]
        refused = await browser.post(f"{url}/decide", data={"action": "approve", "csrf_token": token})
        assert refused.status_code == 401 and "X-Forwarded-User" in refused.text
        browser.headers[IDENTITY_HEADER] = "alice"
        sent = await browser.post(
            f"{url}/decide", data={"action": "approve", "csrf_token": token, "approver": "mallory"}
        )
    assert sent.status_code == 303 and sent.headers["location"] == f"/runs/{handle.run_id}?decided={call.tool_call_id}"
    result = await handle.result()
    confirmed = next(m for m in result.messages if m.tool_calls).tool_calls[0]
    assert confirmed.extra["confirmation"]["approver"] == "alice"
    assert len(tool_calls_of(handle.run_id)) == 1


async def test_a_read_only_inbox_shows_pages_and_refuses_decisions(client, parked):
    handle, call = parked
    app = create_app(client)  # no identity source
    url = f"/runs/{handle.run_id}/calls/{call.tool_call_id}"
    async with http(app) as browser:
        page = await browser.get(url)
        assert page.status_code == 200 and "read-only" in page.text
        assert 'data-testid="approve"' not in page.text  # no decision forms
        token = browser.cookies["inbox_csrf"]  # a valid token, as a hand-made form would carry it
        refused = await browser.post(f"{url}/decide", data={"action": "approve", "csrf_token": token})
    assert refused.status_code == 403 and "--identity-header" in refused.text
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call.tool_call_id]


async def test_token_sign_in_sets_an_http_only_cookie(client, parked, tmp_path):
    handle, call = parked
    table = tmp_path / "tokens"
    table.write_text("# approvers\ns3cret-a = alice\ns3cret-b = bob\n")
    app = create_app(client, identity=IdentityConfig(tokens=load_tokens(table)))
    url = f"/runs/{handle.run_id}/calls/{call.tool_call_id}"
    async with http(app) as browser:
        assert (await browser.get(url)).status_code == 401
        assert (await browser.get("/login", params={"token": "guess"})).status_code == 401
        login = await browser.get("/login", params={"token": "s3cret-b"})
        assert login.status_code == 303
        assert "httponly" in login.headers["set-cookie"].lower()
        page = await browser.get(url)
        assert page.status_code == 200 and 'data-testid="identity">bob<' in page.text
        await browser.post(
            f"{url}/decide", data={"action": "reject", "feedback": "no", "csrf_token": csrf_of(page.text)}
        )
    async with http(app, headers={"Authorization": "Bearer s3cret-a"}) as api:
        assert 'data-testid="identity">alice<' in (await api.get("/")).text
    result = await handle.result()
    rejection = next(m for m in result.messages if m.tool_call_result is not None)
    assert rejection.meta["confirmation"]["approver"] == "bob"


async def test_an_offloaded_result_is_a_link_to_the_stored_text(client, scripted, model, run_id, browser_worker):
    scripted.script(
        model,
        [
            {"tool_calls": [{"name": "fetch_logs", "arguments": {"service": "search", "lines": 200}}]},
            *deploy_script("search", 2),
        ],
    )
    handle, call = await start_parked_run(client, model, run_id, "Check the logs, then deploy", offload=True)
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        page = await browser.get(f"/runs/{run_id}/calls/{call.tool_call_id}")
        assert page.status_code == 200
        links = re.findall(r'href="(/runs/[^"]+/results\?ref=[^"]+)"', page.text)
        assert len(links) == 1
        stored = await browser.get(links[0].replace("&amp;", "&"))
        assert stored.status_code == 200
        assert "search line 199: request served in 5 ms" in stored.text
        other_run = await browser.get(links[0].replace(run_id, "another-run", 1).replace("&amp;", "&"))
        assert other_run.status_code == 404  # a run's page reads only that run's results
    await handle.confirm(call.tool_call_id, approver="alice")
    await handle.result()


def test_token_tables_in_both_formats_and_their_errors(tmp_path):
    lines, as_json = tmp_path / "t.txt", tmp_path / "t.json"
    lines.write_text("a1 = alice\n\n# note\nb2=bob\n")
    as_json.write_text('{"a1": "alice", "b2": "bob"}')
    assert load_tokens(lines) == load_tokens(as_json) == {"a1": "alice", "b2": "bob"}
    for content, message in [
        ("a1 alice\n", "line 1: expected 'token = name'"),
        ("a1 = alice\na1 = bob\n", "line 2: token listed twice"),
        ("# nothing\n", "names no tokens"),
        ("{not json", "not valid JSON"),
    ]:
        (tmp_path / "bad").write_text(content)
        with pytest.raises(IdentityConfigError, match=re.escape(message)):
            load_tokens(tmp_path / "bad")
    with pytest.raises(IdentityConfigError, match="one identity source"):
        IdentityConfig(header="X-User", insecure_dev_identity="dev")


async def test_a_run_without_a_worker_gives_a_clear_page_not_a_hung_one(client, model, run_id):
    handle = await deploy_agent(model).start(
        client, [ChatMessage.from_user("Deploy")], run_id=run_id, task_queue=f"nobody-polls-{run_id}"
    )
    app = create_app(
        client,
        identity=IdentityConfig(header=IDENTITY_HEADER),
        settings=InboxSettings(query_timeout=timedelta(seconds=1)),
    )
    try:
        async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
            page = await browser.get(f"/runs/{run_id}/calls/call_1")
            missing = await browser.get("/runs/no-such-run/calls/call_1")
    finally:
        await handle.workflow.terminate("test over")
    assert page.status_code == 504 and "Is a worker polling its task queue?" in page.text
    assert missing.status_code == 404 and "No run &#39;no-such-run&#39;" in missing.text
