"""The web inbox in a real browser (Debian's Chromium through Playwright) against the session's
Temporal dev server, the scripted model and a real worker: approve, reject with feedback, modify
(checked in the page and by the run's validator), approvers, two people deciding at once, and the
waiting list updating without a reload."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from pathlib import Path

from playwright.async_api import expect

from tests.agent.inbox.support import deploy_script, start_parked_run, tool_calls_of

#: Runs the approve test times (the click-to-tool p50 is over these).
APPROVE_RUNS = 5
#: Generous waits: the dev server's visibility lags, and two cores are shared.
WAIT_MS = 30_000


def call_url(inbox: str, run_id: str, call_id: str) -> str:
    return f"{inbox}/runs/{run_id}/calls/{call_id}"


async def test_approve_runs_the_tool_once(client, scripted, model, inbox, as_user):
    page = await as_user("alice")
    latencies = []
    for i in range(APPROVE_RUNS):
        run_id = f"inbox-approve-{model}-{i}"
        scripted.script(model, deploy_script("checkout", 3, reply="Deployed."))
        handle, call = await start_parked_run(client, model, run_id, "Deploy checkout with 3 replicas")
        await page.goto(call_url(inbox, run_id, call.tool_call_id))
        await expect(page.get_by_test_id("arguments")).to_contain_text('"replicas": 3')
        clicked = time.time()
        await page.get_by_test_id("approve").click()
        await expect(page.get_by_test_id("decision-recorded")).to_contain_text("confirm", timeout=WAIT_MS)
        result = await handle.result()
        calls = tool_calls_of(run_id)
        assert [(c["service"], c["replicas"]) for c in calls] == [("checkout", 3)]
        assert result.tool_call_counts["deploy_service"] == 1
        confirmation = result.messages[2].tool_calls[0].extra["confirmation"]
        assert confirmation["approver"] == "alice" and confirmation["action"] == "confirm"
        latencies.append(calls[0]["t"] - clicked)
    with open("/proc/loadavg") as f:
        load = f.read().strip()
    print(
        f"\nclick Approve -> tool activity starts, {APPROVE_RUNS} runs: p50 {statistics.median(latencies) * 1000:.0f} ms, "
        f"min {min(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms (loadavg {load})"
    )


async def test_reject_with_feedback_reaches_the_model(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, deploy_script("billing", 12, reply="Understood, not deploying."))
    handle, call = await start_parked_run(client, model, run_id, "Deploy billing with 12 replicas")
    page = await as_user("alice")
    await page.goto(call_url(inbox, run_id, call.tool_call_id))
    await page.fill("#feedback", "Freeze until Monday: no billing deploys.")
    await page.get_by_test_id("reject").click()
    await expect(page.get_by_test_id("decision-recorded")).to_contain_text("reject", timeout=WAIT_MS)

    result = await handle.result()
    assert tool_calls_of(run_id) == []
    sent = scripted.requests(model)[1]["messages"]
    assert sent[-1]["role"] == "tool" and "Freeze until Monday: no billing deploys." in sent[-1]["content"]
    (rejection,) = [m for m in result.messages if m.tool_call_result is not None]
    assert rejection.tool_call_result.error and rejection.meta["confirmation"]["approver"] == "alice"


async def test_modify_is_checked_in_the_page_and_by_the_validator(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, deploy_script("search", 2))
    handle, call = await start_parked_run(client, model, run_id, "Deploy search")
    page = await as_user("alice")
    url = call_url(inbox, run_id, call.tool_call_id)
    await page.goto(url)

    # The page's own check: a wrong type and a missing key never leave the browser.
    await page.fill("#new_tool_params", '{"replicas": "four"}')
    await page.get_by_test_id("modify").click()
    error = page.get_by_test_id("modify-error")
    await expect(error).to_be_visible()
    await expect(error).to_contain_text('"service" is required.')
    await expect(error).to_contain_text('"replicas" must be integer')
    assert page.url == url
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call.tool_call_id]

    # Sent anyway (the form submitted without the page's check): the run's validator refuses it
    # and the page shows its message inline; the run keeps waiting.
    await page.fill("#new_tool_params", '{"service": "search", "replicas": "four"}')
    await page.eval_on_selector("#modify-form", "form => form.submit()")
    await expect(page.get_by_test_id("decision-error")).to_contain_text("refused the decision", timeout=WAIT_MS)
    await expect(page.get_by_test_id("decision-error")).to_contain_text("four")
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call.tool_call_id]
    assert tool_calls_of(run_id) == []

    # A valid modification runs the tool with the new arguments.
    await page.fill("#new_tool_params", '{"service": "search", "replicas": 4, "region": "us-east-2"}')
    await page.get_by_test_id("modify").click()
    await expect(page.get_by_test_id("decision-recorded")).to_contain_text("modify", timeout=WAIT_MS)
    await handle.result()
    assert [(c["service"], c["replicas"], c["region"]) for c in tool_calls_of(run_id)] == [("search", 4, "us-east-2")]


async def test_an_approver_not_on_the_list_is_refused(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, deploy_script("payments", 6))
    handle, call = await start_parked_run(client, model, run_id, "Deploy payments", approvers=["alice"])
    mallory = await as_user("mallory")
    await mallory.goto(call_url(inbox, run_id, call.tool_call_id))
    await expect(mallory.get_by_test_id("approvers")).to_have_text("alice")
    # The page says why before anyone clicks; the run's validator refuses a POST all the same
    # (tests/agent/inbox/test_inbox_dev_identity.py).
    await expect(mallory.get_by_test_id("approve")).to_be_disabled()
    await expect(mallory.get_by_test_id("not-an-approver")).to_contain_text(
        "Only alice may decide this call; you are signed in as mallory."
    )
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call.tool_call_id]
    assert tool_calls_of(run_id) == []

    alice = await as_user("alice")
    await alice.goto(call_url(inbox, run_id, call.tool_call_id))
    await alice.get_by_test_id("approve").click()
    await expect(alice.get_by_test_id("decision-recorded")).to_contain_text("alice", timeout=WAIT_MS)
    await handle.result()
    assert len(tool_calls_of(run_id)) == 1


async def test_two_people_deciding_at_once_one_wins(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, deploy_script("search", 2))
    handle, call = await start_parked_run(client, model, run_id, "Deploy search")
    alice, bob = await as_user("alice"), await as_user("bob")
    for page in (alice, bob):
        await page.goto(call_url(inbox, run_id, call.tool_call_id))
        await expect(page.get_by_test_id("approve")).to_be_visible()
    await bob.fill("#feedback", "not today")

    # Both click at once: alice approves, bob rejects.
    await asyncio.gather(alice.get_by_test_id("approve").click(), bob.get_by_test_id("reject").click())
    outcome = '[data-testid="decision-recorded"], [data-testid="decision-error"]'
    for page in (alice, bob):
        await expect(page.locator(outcome)).to_be_visible(timeout=WAIT_MS)
    won = [page for page in (alice, bob) if await page.get_by_test_id("decision-recorded").count()]
    lost = [page for page in (alice, bob) if await page.get_by_test_id("decision-error").count()]
    assert len(won) == 1 and len(lost) == 1
    await expect(lost[0].get_by_test_id("decision-error")).to_contain_text("already decided")
    winner = "alice" if won[0] is alice else "bob"
    await expect(lost[0].get_by_test_id("decided")).to_contain_text(f"by {winner}")
    if directory := os.environ.get("INBOX_SCREENSHOT_DIR"):
        await lost[0].screenshot(path=str(Path(directory) / "inbox-already-decided.png"))

    result = await handle.result()
    assert len(tool_calls_of(run_id)) == (1 if winner == "alice" else 0)
    records = [m.meta.get("confirmation") for m in result.messages if m.tool_call_result is not None]
    records += [c.extra.get("confirmation") for m in result.messages for c in m.tool_calls if c.extra]
    assert {r["approver"] for r in records if r} == {winner}  # a rejection's record sits in two places
    print(f"\ntwo pages at once: {winner} won")


async def test_a_call_page_shows_a_decision_made_elsewhere(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, deploy_script("search", 2))
    handle, call = await start_parked_run(client, model, run_id, "Deploy search")
    bob = await as_user("bob")
    await bob.goto(call_url(inbox, run_id, call.tool_call_id))
    banner = bob.get_by_test_id("decided-elsewhere")
    await expect(bob.get_by_test_id("approve")).to_be_visible()
    await expect(banner).to_be_hidden()
    await handle.confirm(call.tool_call_id, approver="alice")  # through the API, not this page
    await expect(banner).to_be_visible(timeout=WAIT_MS)
    await bob.get_by_test_id("approve").click()  # too late: the run says so
    await expect(bob.get_by_test_id("decision-error")).to_contain_text("already decided", timeout=WAIT_MS)
    await handle.result()
    assert len(tool_calls_of(run_id)) == 1


async def test_the_waiting_list_updates_without_a_reload(client, scripted, model, run_id, inbox, as_user):
    page = await as_user("alice")
    await page.goto(f"{inbox}/?run={run_id}")
    await expect(page.locator("#waiting-rows")).to_contain_text("No tool call is waiting")
    await page.evaluate("window.__sameDocument = true")

    scripted.script(model, deploy_script("ledger", 1))
    handle, call = await start_parked_run(client, model, run_id, "Deploy ledger")
    row = page.locator(f'tr[data-call="{call.tool_call_id}"]')
    await expect(row).to_be_visible(timeout=WAIT_MS)
    await expect(row).to_contain_text("deploy_service")
    await expect(row).to_contain_text('"service": "ledger"')

    await handle.confirm(call.tool_call_id, approver="alice")  # decided elsewhere (the API)
    await expect(row).to_have_count(0, timeout=WAIT_MS)
    assert await page.evaluate("window.__sameDocument") is True  # never reloaded
    await handle.result()


async def test_call_page_shows_the_conversation_and_policy(client, scripted, model, run_id, inbox, as_user):
    """The call page a person sees (its screenshot goes to docs/ when INBOX_SCREENSHOT_DIR is set)."""
    scripted.script(
        model,
        [
            {"tool_calls": [{"name": "fetch_logs", "arguments": {"service": "checkout", "lines": 400}}]},
            *deploy_script("checkout", 3),
        ],
    )
    handle, call = await start_parked_run(
        client,
        model,
        run_id,
        "Check the checkout logs, then roll out v2.14 to 3 replicas.",
        approvers=["alice", "oncall-lead"],
        offload=True,
    )
    page = await as_user("alice")
    await page.goto(call_url(inbox, run_id, call.tool_call_id))
    await expect(page.locator("h1")).to_contain_text("deploy_service")
    await expect(page.locator(".description")).to_contain_text("Roll out a new version")
    conversation = page.locator("ol.conversation")
    await expect(conversation).to_contain_text("You are the release assistant")
    await expect(conversation).to_contain_text("Check the checkout logs")
    await expect(conversation).to_contain_text('deploy_service({"replicas": 3, "service": "checkout"})')
    policy = page.locator("dl.facts").first
    await expect(policy).to_contain_text("DurableConfirmationStrategy")
    await expect(policy).to_contain_text("then reject")
    await expect(page.get_by_test_id("approvers")).to_have_text("alice, oncall-lead")
    directory = os.environ.get("INBOX_SCREENSHOT_DIR")
    if directory:
        await page.screenshot(path=str(Path(directory) / "inbox-call.png"), full_page=True)

    await page.get_by_role("link", name="read the stored result").click()
    await expect(page.get_by_test_id("stored-result")).to_contain_text("checkout line 399")

    await page.goto(f"{inbox}/?tool=deploy_service")
    await expect(page.locator(f'tr[data-call="{call.tool_call_id}"]')).to_be_visible(timeout=WAIT_MS)
    if directory:
        await page.screenshot(path=str(Path(directory) / "inbox-list.png"))
    await page.locator(f'tr[data-call="{call.tool_call_id}"] a.button').click()
    await page.get_by_test_id("approve").click()
    await expect(page.get_by_test_id("decision-recorded")).to_contain_text("alice", timeout=WAIT_MS)
    await handle.result()
    await page.reload()
    timeline = page.locator("table.timeline")
    await expect(timeline).to_contain_text("confirm of deploy_service by alice via update")
    await expect(timeline).to_contain_text("run completed")
    if directory:
        await page.screenshot(path=str(Path(directory) / "inbox-run.png"), full_page=True)
