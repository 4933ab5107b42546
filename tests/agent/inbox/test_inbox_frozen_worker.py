"""A frozen worker (SIGSTOP by PID) must not make the inbox or the client API outwait their own
deadline, nor a person's retry deliver a message twice: each wait holds its one deadline and says
what became of the request, and each message carries an id a retry repeats."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest

from agent.conversation import NotAcceptedError
from agent.inbox import IdentityConfig, InboxSettings, create_app
from tests.agent.inbox.support import IDENTITY_HEADER
from tests.agent.inbox.test_inbox_http import csrf_of, http
from tests.agent.inbox.test_inbox_links import LINK_SECRET, link, parked
from tests.support.frozen_worker import bound, worker_to_freeze
from tests.support.sessions import answered_session

pytestmark = pytest.mark.slow

#: The inbox's (and the API call's) deadline in these tests.
DEADLINE = 3.0


def user_texts(scripted, model: str) -> list[str]:
    """The user messages of the last request the model received."""
    last = scripted.requests(model)[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "user"]


def message_id_of(html: str) -> str:
    match = re.search(r'name="message_id" value="([^"]+)"', html)
    assert match, "the message form has no message id"
    return match.group(1)


async def test_a_frozen_worker_keeps_the_pages_deadline_and_a_retry_adds_the_message_once(
    client, scripted, model, run_id, tmp_path
):
    scripted.script(model, [{"text": "Hi."}, {"text": "Done once."}, {"text": "And again."}])
    async with worker_to_freeze(tmp_path, f"frozen-{run_id}") as worker:
        handle = await answered_session(client, model, run_id, worker.task_queue)
        app = create_app(
            client,
            identity=IdentityConfig(header=IDENTITY_HEADER),
            settings=InboxSettings(decision_timeout=timedelta(seconds=DEADLINE)),
        )
        url = f"/runs/{run_id}/conversation"
        async with http(app, headers={IDENTITY_HEADER: "ann"}, timeout=120) as browser:
            page = await browser.get(url)
            form = {
                "text": "please do it once",
                "csrf_token": csrf_of(page.text),
                "message_id": message_id_of(page.text),
            }
            worker.freeze()
            tries = []
            for _ in range(2):  # the person sends, sees the error, and sends the same form again
                began = time.monotonic()
                answer = await browser.post(f"{url}/send", data=form)
                tries.append((time.monotonic() - began, answer))
            print(f"inbox send, worker frozen, deadline {DEADLINE:g} s: " + ", ".join(f"{t:.1f} s" for t, _ in tries))
            for took, answer in tries:
                assert answer.status_code == 504, answer.text
                assert took <= bound(DEADLINE), f"the send took {took:.1f} s against a {DEADLINE:g} s deadline"
                assert f"did not accept the message within {DEADLINE:g} s: no worker took it" in answer.text
                assert "It is in no history yet" in answer.text and "Sending this form again is safe." in answer.text
                assert message_id_of(answer.text) == form["message_id"]  # the retry repeats the id

            # The client API: one deadline, then a retry with the receipt's id.
            began = time.monotonic()
            with pytest.raises(NotAcceptedError, match=r"the same message id \((msg-[0-9a-f]+)\)") as raised:
                await handle.send_message("and this too", sender="ann", timeout=timedelta(seconds=DEADLINE))
            took = time.monotonic() - began
            print(f"handle.send_message, worker frozen, deadline {DEADLINE:g} s: {took:.1f} s: {raised.value}")
            assert took <= bound(DEADLINE), f"send_message took {took:.1f} s against a {DEADLINE:g} s deadline"
            api_id = re.search(r"\((msg-[0-9a-f]+)\)", str(raised.value)).group(1)
            with pytest.raises(NotAcceptedError):
                await handle.send_message(
                    "and this too", sender="ann", message_id=api_id, timeout=timedelta(seconds=DEADLINE)
                )

            worker.thaw()
            # What the person is told to do: send again with the same ids once the worker is back.
            # Held Updates usually arrived already; either way each message is added once.
            again = await browser.post(f"{url}/send", data=form)
            assert again.status_code == 303, again.text
            await handle.send_message("and this too", sender="ann", message_id=api_id)
            await handle.wait_turn(2, timeout=timedelta(seconds=90))
        assert user_texts(scripted, model) == ["hi", "please do it once", "and this too"]
        await handle.cancel("test over")
        await handle.result()


async def test_a_frozen_worker_keeps_the_link_posts_deadline(client, scripted, model, run_id, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_APPROVAL_LINK_SECRET", LINK_SECRET)
    async with worker_to_freeze(tmp_path, f"frozen-{run_id}") as worker:
        handle, pending = await parked(client, worker.task_queue, scripted, model, run_id)
        app = create_app(client, settings=InboxSettings(decision_timeout=timedelta(seconds=DEADLINE)))
        url = link(pending, run_id, "confirm", "bob")
        async with http(app, timeout=120) as browser:
            page = await browser.get(url)
            worker.freeze()
            began = time.monotonic()
            used = await browser.post(url, data={"csrf_token": csrf_of(page.text)})
            took = time.monotonic() - began
        assert used.status_code == 504, used.text
        assert took <= bound(DEADLINE), f"the link POST took {took:.1f} s against a {DEADLINE:g} s deadline"
        print(f"link POST, worker frozen, deadline {DEADLINE:g} s: {took:.1f} s")
        assert f"did not accept or refuse the decision within {DEADLINE:g} s" in used.text
        assert 'data-testid="unanswered"' in used.text  # the run was not asked again
        worker.thaw()
        result = await handle.workflow.result(rpc_timeout=timedelta(seconds=120))
    record = next(m for m in result.messages if m.tool_calls).tool_calls[0].extra["confirmation"]
    assert record["approver"] == "bob"
