"""The dev inbox (``--insecure-dev-identity``) lets a person choose who they are, and a call whose
approvers leave out the signed-in name shows its buttons disabled with the reason; ``agent watch``
names the approvers in its suggestion (over HTTP against the app, the session's dev server and a worker)."""

from __future__ import annotations

import re

from agent.inbox import IdentityConfig, create_app
from tests.agent.cli.test_cli import agent_cli
from tests.agent.inbox.support import deploy_script, start_parked_run
from tests.agent.inbox.test_inbox_http import csrf_of, http


def by_testid(html: str, name: str) -> str:
    match = re.search(rf'data-testid="{name}"[^>]*>(.*?)</', html, re.S)
    assert match, f"the page has no {name}"
    return match.group(1)


async def test_a_dev_inbox_person_chooses_who_they_are_and_sees_why_they_may_not_decide(
    client, scripted, model, run_id, browser_worker
):
    scripted.script(model, deploy_script("checkout", 2))
    handle, call = await start_parked_run(client, model, run_id, "deploy checkout", approvers=["ann"])
    app = create_app(client, identity=IdentityConfig(insecure_dev_identity="root"))
    url = f"/runs/{run_id}/calls/{call.tool_call_id}"
    async with http(app) as browser:
        page = await browser.get(url)
        assert page.status_code == 200 and by_testid(page.text, "identity") == "root"
        assert by_testid(page.text, "not-an-approver").startswith(
            "Only ann may decide this call; you are signed in as root. Choose one of their names"
        )
        assert re.search(r'data-testid="approve" disabled', page.text), page.text
        forced = await browser.post(  # a POST all the same: the run's validator refuses it
            f"{url}/decide",
            data={"action": "approve", "csrf_token": csrf_of(page.text), "arguments_sha256": call.arguments_sha256},
        )
        assert forced.status_code == 409 and "Approver &#39;root&#39; may not decide" in forced.text, forced.text
        switched = await browser.post(
            "/dev/sign-in", data={"name": "ann", "next": url, "csrf_token": csrf_of(page.text)}
        )
        assert switched.status_code == 303 and switched.headers["location"] == url
        page = await browser.get(url)
        assert by_testid(page.text, "identity") == "ann" and "not-an-approver" not in page.text
        decided = await browser.post(
            f"{url}/decide",
            data={"action": "approve", "csrf_token": csrf_of(page.text), "arguments_sha256": call.arguments_sha256},
        )
    assert decided.status_code == 303, decided.text
    result = await handle.result()
    assert result.messages[-3].tool_calls[0].extra["confirmation"]["approver"] == "ann"


async def test_another_inbox_has_no_dev_sign_in(client):
    app = create_app(client, identity=IdentityConfig(header="X-User"))
    async with http(app, headers={"X-User": "bob"}) as browser:
        page = await browser.get("/replies")
        assert "dev-sign-in" not in page.text
        token = browser.cookies["inbox_csrf"]
        refused = await browser.post("/dev/sign-in", data={"name": "ann", "csrf_token": token})
    assert refused.status_code == 404


async def test_watch_names_the_approvers_when_you_are_not_one(client, scripted, model, run_id, browser_worker):
    scripted.script(model, deploy_script("checkout", 2))
    handle, call = await start_parked_run(client, model, run_id, "deploy checkout", approvers=["ann"])
    watched = await agent_cli("watch", run_id, "--plain", "--timeout", "3", env={"AGENT_APPROVER": "root"})
    assert (
        f"waiting for approval of deploy_service ({call.tool_call_id}): only ann may decide it (you are root): "
        f"`agent approve {run_id} {call.tool_call_id} --approver ann` as them"
    ) in watched.stdout, watched.stdout
    await handle.confirm(call.tool_call_id, approver="ann")
    await handle.result()
