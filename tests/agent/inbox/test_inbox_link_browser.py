"""A one-time approval link in headless Chromium, as someone clicking it in Slack would use it: no
inbox identity, the page shows the call and one button, the click decides as the link's approver,
and the same link opened again shows the decision instead of a button."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from playwright.async_api import expect

from core.approval_links import LinkClaims, issue_token
from tests.agent.inbox.support import deploy_script, start_parked_run, tool_calls_of

LINK_SECRET = "browser-link-secret-0123456789abcdef"
WAIT_MS = 15_000


async def test_a_link_opened_in_a_browser_decides_once(client, scripted, model, run_id, inbox, browser, monkeypatch):
    monkeypatch.setenv("AGENT_APPROVAL_LINK_SECRET", LINK_SECRET)
    scripted.script(model, deploy_script("checkout", 3))
    handle, call = await start_parked_run(client, model, run_id, "Roll out checkout", approvers=["oncall-lead"])
    claims = LinkClaims(
        run_id=run_id,
        tool_call_id=call.tool_call_id,
        request_id=call.request_id,
        action="confirm",
        approver="oncall-lead",
        arguments_sha256=call.arguments_sha256,
        expires_at=call.expires_at,
    )
    url = f"{inbox}/link/{quote(issue_token(claims, LINK_SECRET), safe='')}"
    context = await browser.new_context(viewport={"width": 1100, "height": 700})  # no identity header
    try:
        page = await context.new_page()
        await page.goto(url)
        await expect(page.get_by_test_id("link-approver")).to_have_text("oncall-lead")
        await expect(page.get_by_test_id("arguments")).to_contain_text('"replicas": 3')
        assert tool_calls_of(run_id) == []  # opening decided nothing
        directory = os.environ.get("INBOX_SCREENSHOT_DIR")
        if directory:
            await page.screenshot(path=str(Path(directory) / "inbox-link.png"), full_page=True)
        await page.get_by_test_id("link-button").click()
        await expect(page.get_by_test_id("link-done")).to_contain_text("approved as oncall-lead", timeout=WAIT_MS)
        await handle.result()
        await page.goto(url)
        await expect(page.get_by_test_id("decided")).to_contain_text("confirm by oncall-lead")
        assert await page.get_by_test_id("link-button").count() == 0
    finally:
        await context.close()
    assert len(tool_calls_of(run_id)) == 1
