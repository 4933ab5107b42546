"""The inbox's pages live in a real browser (Debian's Chromium through Playwright): a run's events
arrive over Server-Sent Events without a reload, the answer shows while the model is still
streaming it, and a reload mid-answer shows the whole answer once, with no word twice."""

from __future__ import annotations

from datetime import timedelta

from playwright.async_api import expect

from agent import Agent, ChatMessage
from tests.agent.inbox.support import BROWSER_TASK_QUEUE
from tests.support.polling import eventually

WAIT_MS = 30_000


async def waiting_session(client, model: str, run_id: str, **agent_options):
    handle = await Agent(model=model, **agent_options).start(
        client,
        [ChatMessage.from_user("hello", meta={"sender": "alice"})],
        run_id=run_id,
        task_queue=BROWSER_TASK_QUEUE,
        wait_for_user=timedelta(minutes=5),
    )
    await handle.wait_turn(1)
    return handle


async def test_the_conversation_page_shows_a_new_turn_without_a_reload(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, [{"text": "Hi! Which service?"}, {"text": "Checkout is healthy."}])
    handle = await waiting_session(client, model, run_id)
    page = await as_user("alice")
    await page.goto(f"{inbox}/runs/{run_id}/conversation")
    await expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=WAIT_MS)

    await handle.send_message("How is checkout?", sender="bob")  # from elsewhere: this page only listens

    conversation = page.get_by_test_id("conversation")
    await expect(conversation.locator('[data-key^="m:"]')).to_have_text("bob: How is checkout?", timeout=WAIT_MS)
    answer = page.get_by_test_id("message-assistant").filter(has_text="Checkout is healthy.")
    await expect(answer).to_have_count(1, timeout=WAIT_MS)
    await expect(conversation).to_contain_text("turn 2 ended")
    await page.reload()  # the page rendered afresh shows the same, once
    await expect(page.get_by_test_id("message-assistant").filter(has_text="Checkout is healthy.")).to_have_count(1)
    await expect(page.get_by_test_id("message-user").filter(has_text="How is checkout?")).to_have_count(1)

    await handle.cancel("test over")
    await expect(page.get_by_test_id("live-state")).to_have_text("the run ended", timeout=WAIT_MS)
    await eventually(handle.status, lambda s: s.done, message="the run never ended")
