"""The inbox's pages live in a real browser (Debian's Chromium through Playwright): a run's events
arrive over Server-Sent Events without a reload, the answer shows while the model is still
streaming it, and a reload mid-answer shows the whole answer once, with no word twice."""

from __future__ import annotations

from datetime import timedelta

from playwright.async_api import expect

from agent import Agent, ChatMessage
from tests.agent.inbox.support import BROWSER_TASK_QUEUE
from tests.support.hitl_helpers import wait_pending
from tests.support.live import ANSWER, REWIND_REASON, REWOUND_ANSWER, parked_for_rewind, slowly
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


async def live_conversation_page(as_user, inbox: str, run_id: str):
    """alice's conversation page of ``run_id``, once it follows the run's events."""
    page = await as_user("alice")
    await page.goto(f"{inbox}/runs/{run_id}/conversation")
    await expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=WAIT_MS)
    return page


async def test_the_conversation_page_shows_a_new_turn_without_a_reload(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, [{"text": "Hi! Which service?"}, {"text": "Checkout is healthy."}])
    handle = await waiting_session(client, model, run_id)
    page = await live_conversation_page(as_user, inbox, run_id)

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


async def test_the_answer_shows_while_it_streams_and_a_reload_mid_answer_shows_it_whole_once(
    client, scripted, model, run_id, inbox, as_user
):
    scripted.script(model, [{"text": "Hi! Which service?"}, slowly(ANSWER), slowly("Inventory " * 30)])
    handle = await waiting_session(client, model, run_id, stream_tokens=True)
    page = await live_conversation_page(as_user, inbox, run_id)

    await handle.send_message("How did the deploy go?", sender="alice")
    streaming = page.locator('[data-testid="message-assistant"].streaming .text')
    await expect(streaming).to_contain_text("The deploy", timeout=WAIT_MS)
    early = await streaming.text_content()
    assert ANSWER.startswith(early) and len(early) < len(ANSWER)  # before the model call ended

    await page.reload()  # mid-answer: the page renders the answer so far and streams the rest
    assert not (await handle.status()).waiting_for_user, "the answer ended before the reload"
    answers = page.get_by_test_id("message-assistant").filter(has_text="The deploy")
    await expect(answers).to_have_count(1)
    await expect(answers).to_have_text(f"assistant: {ANSWER}", timeout=WAIT_MS)  # whole, no word twice
    await expect(page.locator(".streaming")).to_have_count(0)

    run_page = await as_user("alice")  # the run page follows the same events
    await run_page.goto(f"{inbox}/runs/{run_id}")
    await expect(run_page.get_by_test_id("live-state")).to_have_text("live", timeout=WAIT_MS)
    await handle.send_message("And inventory?", sender="alice")
    await expect(run_page.get_by_test_id("live-events")).to_contain_text("alice: And inventory?", timeout=WAIT_MS)
    await expect(run_page.locator(".streaming")).to_contain_text("Inventory", timeout=WAIT_MS)
    await handle.cancel("test over")  # while the third answer streams: token Signals arrive as the Update does
    await expect(run_page.get_by_test_id("live-events")).to_contain_text("run ended: cancelled", timeout=WAIT_MS)


async def test_a_retried_stream_restarts_the_answer_on_the_page(client, scripted, model, run_id, inbox, as_user):
    broken = slowly(ANSWER, pace=0.1, break_after=8)
    scripted.script(model, [{"text": "Hi! Which service?"}, broken, slowly(ANSWER, pace=0.1)])
    handle = await waiting_session(client, model, run_id, stream_tokens=True)
    page = await live_conversation_page(as_user, inbox, run_id)

    await handle.send_message("How did the deploy go?", sender="alice")
    conversation = page.get_by_test_id("conversation")
    await expect(conversation).to_contain_text("retried (attempt 2): its answer starts over", timeout=WAIT_MS)
    answers = page.get_by_test_id("message-assistant").filter(has_text="The deploy")
    await expect(answers).to_have_text(f"assistant: {ANSWER}", timeout=WAIT_MS)  # one line, the new attempt's text
    await handle.wait_turn(2)
    await handle.cancel("test over")


async def test_the_run_page_reopens_its_stream_after_an_error_response(client, scripted, model, run_id, inbox, as_user):
    scripted.script(model, [{"text": "Hi! Which service?"}, {"text": "Checkout is healthy."}])
    handle = await waiting_session(client, model, run_id)
    page = await as_user("alice")
    refused: list[str] = []

    async def first_refused(route) -> None:
        if not refused:  # a proxy's 502: EventSource gives up on its own after an error response
            refused.append(route.request.url)
            await route.fulfill(status=502, body="bad gateway")
        else:
            await route.continue_()

    await page.route("**/events?*", first_refused)
    await page.goto(f"{inbox}/runs/{run_id}")
    await expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=WAIT_MS)  # reopened
    await handle.send_message("How is checkout?", sender="bob")
    live = page.get_by_test_id("live-events")
    await expect(live).to_contain_text("Checkout is healthy.", timeout=WAIT_MS)
    assert len(refused) == 1
    await handle.cancel("test over")


async def test_the_run_page_reloads_after_a_rewind_and_shows_the_new_run(
    client, scripted, model, run_id, inbox, as_user
):
    handle = await parked_for_rewind(client, BROWSER_TASK_QUEUE, scripted, model, run_id)
    await wait_pending(handle, 1)
    page = await as_user("alice")
    await page.goto(f"{inbox}/runs/{run_id}")
    await expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=WAIT_MS)

    await handle.rewind(0, REWIND_REASON)
    await expect(page.get_by_test_id("rewound-reason")).to_have_text(
        f"rewind to step 0: {REWIND_REASON}", timeout=WAIT_MS
    )
    await handle.result()
    await page.reload()
    await expect(page.locator("body")).to_contain_text(REWOUND_ANSWER, timeout=WAIT_MS)
