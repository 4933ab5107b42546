"""The conversation pages' rules over plain HTTP (httpx against the app, the session's dev server
and a real worker): CSRF on the message box, the sender from the identity never from the form,
the validator's refusal shown inline, a read-only inbox, an unknown run."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent import Agent, ChatMessage
from agent.inbox import IdentityConfig, create_app
from tests.agent.inbox.support import BROWSER_TASK_QUEUE, IDENTITY_HEADER
from tests.agent.inbox.test_inbox_http import csrf_of, http
from tests.support.polling import eventually


@pytest.fixture
async def session(client, scripted, model, run_id, browser_worker):
    scripted.script(model, [{"text": "Hi, how can I help?"}, {"text": "Noted, alice."}])
    handle = await Agent(model=model).start(
        client,
        [ChatMessage.from_user("hello")],
        run_id=run_id,
        task_queue=BROWSER_TASK_QUEUE,
        wait_for_user=timedelta(minutes=5),
    )
    await eventually(handle.status, lambda s: s.waiting_for_user, message="the session never waited")
    yield handle
    await handle.cancel("test over")
    await handle.result()


async def test_the_message_box_needs_csrf_and_sends_as_the_identity(client, session):
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    url = f"/runs/{session.run_id}/conversation"
    async with http(app) as anonymous:
        assert (await anonymous.get(url)).status_code == 401
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        page = await browser.get(url)
        assert page.status_code == 200 and "Hi, how can I help?" in page.text and "Message as alice" in page.text
        missing = await browser.post(f"{url}/send", data={"text": "no token"})
        assert missing.status_code == 403 and "security token" in missing.text
        token = csrf_of(page.text)
        empty = await browser.post(f"{url}/send", data={"text": "   ", "csrf_token": token})
        assert empty.status_code == 409 and "The message text is empty." in empty.text
        sent = await browser.post(f"{url}/send", data={"text": "remember me", "sender": "mallory", "csrf_token": token})
    assert sent.status_code == 303 and sent.headers["location"] == f"{url}?sent=2"
    turn = await session.wait_turn(2)
    assert turn.last_message.text == "Noted, alice."
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        shown = (await browser.get(url)).text
    assert "<strong>alice</strong>: remember me" in shown and "mallory" not in shown


async def test_a_read_only_inbox_shows_the_conversation_without_a_box_and_refuses_a_post(client, session):
    app = create_app(client)  # no identity source: read-only
    url = f"/runs/{session.run_id}/conversation"
    async with http(app) as browser:
        page = await browser.get(url)
        assert page.status_code == 200 and "Hi, how can I help?" in page.text and "message-form" not in page.text
        token = browser.cookies["inbox_csrf"]
        refused = await browser.post(f"{url}/send", data={"text": "hi", "csrf_token": token})
        missing = await browser.get("/runs/no-such-run/conversation")
    assert refused.status_code == 403 and missing.status_code == 404
    assert (await session.status()).turn == 1  # nothing was sent
