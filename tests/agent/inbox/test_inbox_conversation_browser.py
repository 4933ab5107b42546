"""The inbox's conversation pages in a real browser (Debian's Chromium through Playwright): a
session waiting for its user is listed, a message typed into the box starts the next turn and
its answer appears, and the run's validator's refusal shows inline. The screenshot goes to
docs/ when INBOX_SCREENSHOT_DIR is set."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from playwright.async_api import expect

from agent import Agent, ChatMessage
from tests.agent.inbox.support import BROWSER_TASK_QUEUE
from tests.support.polling import eventually

WAIT_MS = 30_000


async def test_a_waiting_session_is_listed_and_a_message_from_the_box_gets_its_answer(
    client, scripted, model, run_id, inbox, as_user
):
    scripted.script(model, [{"text": "Hello! Which service?"}, {"text": "Checkout is healthy: 3 of 3 replicas up."}])
    agent = Agent(model=model, participants=["alice"])
    handle = await agent.start(
        client,
        [ChatMessage.from_user("Help me check a service.", meta={"sender": "alice"})],
        run_id=run_id,
        task_queue=BROWSER_TASK_QUEUE,
        wait_for_user=timedelta(minutes=5),
    )
    await handle.wait_turn(1)
    page = await as_user("alice")

    async def listed() -> int:  # visibility lags: reload the list until the session shows
        await page.goto(f"{inbox}/replies")
        return await page.locator(f'[data-testid="reply-row"]:has-text("{run_id}")').count()

    await eventually(listed, message=f"{run_id} never listed as waiting for a reply")
    row = page.locator(f'[data-testid="reply-row"]:has-text("{run_id}")')
    await expect(row).to_contain_text("Hello! Which service?")
    await row.get_by_role("link", name=run_id).click()

    await expect(page.get_by_test_id("message-assistant")).to_contain_text("Hello! Which service?")
    await page.fill("#message-text", "The checkout service, please.")
    await page.get_by_test_id("send").click()
    await expect(page.get_by_test_id("message-user").last).to_contain_text("The checkout service, please.")

    async def answered() -> int:  # the turn runs after the redirect: reload until its answer shows
        await page.reload()
        return await page.get_by_test_id("message-assistant").filter(has_text="Checkout is healthy").count()

    await eventually(answered, message="the turn's answer never showed on the conversation page")
    await expect(page.get_by_test_id("conversation")).to_contain_text("turn 2 started")
    turn = await handle.wait_turn(2)
    assert turn.last_message.text == "Checkout is healthy: 3 of 3 replicas up."
    sent = scripted.requests(model)[-1]["messages"]
    assert (sent[-1]["role"], sent[-1]["content"]) == ("user", "The checkout service, please.")
    directory = os.environ.get("INBOX_SCREENSHOT_DIR")
    if directory:
        await page.screenshot(path=str(Path(directory) / "inbox-conversation.png"), full_page=True)

    bob = await as_user("bob")  # not a participant: the run's validator refuses, the page says why
    await bob.goto(f"{inbox}/runs/{run_id}/conversation")
    await bob.fill("#message-text", "me too")
    await bob.get_by_test_id("send").click()
    await expect(bob.get_by_test_id("send-error")).to_contain_text("Sender 'bob' may not write to this run")
    await expect(bob.locator("#message-text")).to_have_value("me too")

    await handle.cancel("test over")
    assert (await handle.result()).exit_reason == "cancelled"
