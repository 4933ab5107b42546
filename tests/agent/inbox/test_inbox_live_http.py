"""The inbox's live stream over plain HTTP (httpx against the app, the session's dev server and a
real worker): a run's events as Server-Sent Events with the offset as the id, resumed after
``Last-Event-ID`` or from ``?from=``, closed with an ``end`` event; a bad offset is a 400."""

from __future__ import annotations

import asyncio
import json

from agent import Agent, ChatMessage
from agent.inbox import IdentityConfig, create_app
from agent.live import local_watchers
from tests.agent.inbox.support import BROWSER_TASK_QUEUE, IDENTITY_HEADER, fetch_logs
from tests.agent.inbox.test_inbox_http import http
from tests.support.hitl_helpers import call, calls, wait_pending
from tests.support.live import ANSWER, REWIND_REASON, REWOUND_ANSWER, parked_for_rewind, slowly
from tests.support.polling import eventually


def messages(body: str) -> list[dict[str, str]]:
    """The SSE messages of ``body``: each a dict of its fields (``id``, ``event``, ``data``)."""
    parsed = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if fields:
            parsed.append(fields)
    return parsed


async def test_a_runs_events_stream_with_offsets_as_ids_and_resume_after_the_last_id(
    client, scripted, model, run_id, browser_worker
):
    scripted.script(model, [calls(call("fetch_logs", id="a1", service="api", lines=2)), {"text": "5"}])
    handle = await Agent(model=model, tools=[fetch_logs]).start(
        client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=BROWSER_TASK_QUEUE
    )
    await handle.result()
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    url = f"/runs/{run_id}/events"
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        whole = await browser.get(url)
        resumed = await browser.get(url, headers={"Last-Event-ID": "3"})
        from_param = await browser.get(url + "?from=5")
        bad = await browser.get(url, headers={"Last-Event-ID": "three"})
    async with http(app) as anonymous:
        refused = await anonymous.get(url)

    assert whole.status_code == 200 and whole.headers["content-type"].startswith("text/event-stream")
    *events, end = messages(whole.text)
    assert [int(m["id"]) for m in events] == list(range(len(events)))
    kinds = [json.loads(m["data"])["kind"] for m in events]
    assert kinds[0] == "turn_started" and kinds[-1] == "run_ended" and "tool_finished" in kinds
    assert json.loads(events[-1]["data"])["data"] == {"exit_reason": "text"}
    assert end["event"] == "end"
    assert [m.get("id") for m in messages(resumed.text)[:-1]] == [m["id"] for m in events[4:]]
    assert [m.get("id") for m in messages(from_param.text)[:-1]] == [m["id"] for m in events[5:]]
    assert bad.status_code == 400 and "event offsets" in bad.text
    assert refused.status_code == 401


async def test_a_run_without_a_stream_says_so_in_one_event(client):
    app = create_app(client)  # read-only: anyone may look
    async with http(app) as browser:
        unknown = await browser.get("/runs/no-such-run-live/events")
    [only] = messages(unknown.text)
    assert only["event"] == "unavailable" and "live updates are unavailable" in only["data"]


async def test_a_stream_opened_before_a_rewind_goes_on_with_the_new_run(
    client, scripted, model, run_id, browser_worker
):
    handle = await parked_for_rewind(client, BROWSER_TASK_QUEUE, scripted, model, run_id)
    await wait_pending(handle, 1)
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        streaming = asyncio.create_task(browser.get(f"/runs/{run_id}/events"))
        await eventually(lambda: local_watchers(client, run_id) == 1)  # the stream reads before the rewind
        done = await handle.rewind(0, REWIND_REASON)
        body = (await asyncio.wait_for(streaming, 60)).text

    *events, end = messages(body)
    assert end["event"] == "end"
    parsed = [json.loads(m["data"]) for m in events]
    kinds = [e["kind"] for e in parsed]
    marker = parsed[kinds.index("run_rewound")]
    assert marker["data"]["temporal_run_id"] == done.temporal_run_id
    # its id is the offset before the new run's first event: a reconnect resumes in the new run
    assert int(events[kinds.index("run_rewound")]["id"]) == marker["data"]["from_offset"] - 1
    after = parsed[kinds.index("run_rewound") + 1 :]
    assert [e["offset"] for e in after][0] == marker["data"]["from_offset"]
    assert after[-1]["kind"] == "run_ended"
    assert [e["data"]["text"] for e in after if e["kind"] == "model_reply"] == [REWOUND_ANSWER]


async def test_fifty_streams_of_one_run_all_reach_its_end(client, scripted, model, run_id, browser_worker):
    scripted.script(model, [calls(call("fetch_logs", id="l1", service="checkout", lines=3)), slowly(ANSWER, pace=0.02)])
    app = create_app(client, identity=IdentityConfig(header=IDENTITY_HEADER))
    async with http(app, headers={IDENTITY_HEADER: "alice"}) as browser:
        handle = await Agent(model=model, tools=[fetch_logs], stream_tokens=True).start(
            client, [ChatMessage.from_user("logs?")], run_id=run_id, task_queue=BROWSER_TASK_QUEUE
        )
        streams = [asyncio.create_task(browser.get(f"/runs/{run_id}/events")) for _ in range(50)]
        await eventually(lambda: local_watchers(client, run_id) == 50)  # one feed, read by all 50
        bodies = [response.text for response in await asyncio.wait_for(asyncio.gather(*streams), 60)]
    fresh = [event.model_dump() async for event in handle.events()]

    for body in bodies:
        *events, end = messages(body)
        assert end["event"] == "end", body[-300:]
        assert [json.loads(m["data"]) for m in events] == fresh  # every event, none missed, none twice
    assert fresh[-1]["kind"] == "run_ended" and any(e["kind"] == "token" for e in fresh)
