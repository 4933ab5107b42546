"""Time to first token through the AG-UI endpoint, beside ``handle.events()``, in the same turns.

    .venv/bin/python -m bench.agui_latency [--turns 20] [--ttfb 0.3]

A session on the real dev server (worker in this process, the scripted model on loopback,
streaming tokens). Each turn is one AG-UI POST (``POST /ag-ui/bench``, the inbox app served by
uvicorn in this process, read by httpx as an SSE client) that delivers the user's message; a
``handle.events()`` subscriber on the same run, subscribed before the POST, watches the same turn.
Both clocks start when the POST is sent:

- AG-UI: the first ``TEXT_MESSAGE_CONTENT`` frame at the HTTP client;
- events: the first ``token`` event at the subscriber;
- ``RUN_STARTED``: the first frame (the message delivered, the stream opened).

It also prints the event trace of one approved turn (an interrupt, then a resume) as the client saw it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from datetime import timedelta
from typing import Any

import httpx

from agent import Agent
from agent.client import AgentRunHandle, connect
from agent.inbox import IdentityConfig, InboxServer, create_app
from agent.inbox.agui import AguiAgent
from agent.inbox.agui_runs import stream_offset
from bench.common import bench_stack, percentile
from core.tools import tool
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from worker import create_worker


@tool
def restart_service(service: str) -> str:
    """Restart a service."""
    return f"restarted {service}"


async def post(http: httpx.AsyncClient, url: str, body: dict[str, Any], t0: float) -> tuple[list[dict], dict]:
    """POST a RunAgentInput; returns the events and the times of the first frame and first content."""
    events: list[dict] = []
    times: dict[str, float] = {}
    async with http.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as answer:
        answer.raise_for_status()
        async for line in answer.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            events.append(event)
            times.setdefault("first_frame", time.perf_counter() - t0)
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                times.setdefault("first_content", time.perf_counter() - t0)
    return events, times


async def first_token(handle: AgentRunHandle, start: int, t0: list[float], seen: asyncio.Future) -> None:
    async for event in handle.events(from_offset=start):
        if event.kind == "token":
            seen.set_result(time.perf_counter() - t0[0])
            return


def ms(values: list[float], q: int) -> str:
    return f"{percentile(values, q) * 1000:.0f}"


async def measure(args: argparse.Namespace) -> None:
    with bench_stack() as (stack, scripted):
        client = await connect(stack.temporal.address, stack.temporal.namespace)
        model = f"agui-{uuid.uuid4().hex[:6]}"
        strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=1))
        agent = Agent(
            model=model,
            tools=[restart_service],
            system_prompt="You run services.",
            hooks={"before_tool": [ConfirmationHook({"restart_service": strategy})]},
            stream_tokens=True,
        )
        queue = f"agui-{uuid.uuid4().hex[:6]}"
        reply = {"text": "Sure, here is the answer you asked for, streamed.", "ttfb": args.ttfb, "pace": 0.02}
        scripted.script(model, [reply] * (args.turns + 1))
        served = {"bench": AguiAgent(name="bench", agent=agent, task_queue=queue)}
        app = create_app(client, identity=IdentityConfig(insecure_dev_identity="bench"), agents=served)
        thread = f"agui-bench-{uuid.uuid4().hex[:8]}"
        through_agui, through_events, started = [], [], []
        async with create_worker(client, tools=[restart_service], task_queue=queue), InboxServer(app, port=0) as inbox:
            url = f"{inbox.url}/ag-ui/bench"
            handle = AgentRunHandle(client, thread)
            async with httpx.AsyncClient(timeout=None) as http:
                for turn in range(args.turns + 1):
                    body = {
                        "threadId": thread,
                        "runId": f"r{turn}",
                        "messages": [{"id": f"m{turn}", "role": "user", "content": f"question {turn}"}],
                    }
                    t0 = [0.0]
                    seen: asyncio.Future = asyncio.get_running_loop().create_future()
                    watcher = None
                    if turn > 0:  # the session exists: subscribe first, from its next event
                        start = await stream_offset(client, thread)
                        watcher = asyncio.create_task(first_token(handle, start, t0, seen))
                        await asyncio.sleep(0.2)  # the subscriber is polling
                    t0[0] = time.perf_counter()
                    _, times = await post(http, url, body, t0[0])
                    if watcher is not None:
                        through_events.append(await seen)
                        through_agui.append(times["first_content"])
                        started.append(times["first_frame"])
                trace = await approved_turn(http, url, scripted, model)
    print(
        f"AG-UI first token beside handle.events(), {time.strftime('%Y-%m-%d')} ({os.cpu_count()} cores; "
        f"model: scripted, loopback, ttfb {args.ttfb * 1000:.0f} ms; {args.turns} turns of one session)"
    )
    print(f"{'':<34}{'p50':>7}{'p95':>7}  (ms from the POST)")
    print(f"{'handle.events(): first token':<34}{ms(through_events, 50):>7}{ms(through_events, 95):>7}")
    print(f"{'AG-UI: first TEXT_MESSAGE_CONTENT':<34}{ms(through_agui, 50):>7}{ms(through_agui, 95):>7}")
    print(f"{'AG-UI: RUN_STARTED':<34}{ms(started, 50):>7}{ms(started, 95):>7}")
    gaps = [a - e for a, e in zip(through_agui, through_events, strict=True)]
    print(f"{'AG-UI minus events, same turn':<34}{ms(gaps, 50):>7}{ms(gaps, 95):>7}")
    print("\nOne approved turn as the client saw it:")
    for line in trace:
        print("  " + line)


async def approved_turn(http: httpx.AsyncClient, url: str, scripted, model: str) -> list[str]:
    """The events of a turn that asks to restart a service, then of its approval (one line each)."""
    scripted.script(
        model,
        [
            {"tool_calls": [{"id": "call_r1", "name": "restart_service", "arguments": {"service": "web"}}]},
            {"text": "Restarted web."},
        ],
    )
    thread = f"agui-trace-{uuid.uuid4().hex[:8]}"
    user = {"id": "m1", "role": "user", "content": "restart web"}
    asked, _ = await post(http, url, {"threadId": thread, "runId": "r1", "messages": [user]}, time.perf_counter())
    interrupt = asked[-1]["outcome"]["interrupts"][0]
    resume = [
        {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"action": "approve", "argumentsSha256": interrupt["metadata"]["argumentsSha256"]},
        }
    ]
    body = {"threadId": thread, "runId": "r2", "messages": [user], "resume": resume}
    resumed, _ = await post(http, url, body, time.perf_counter())
    lines = [f"POST 1 (messages: {user['content']!r})"]
    lines += [_line(e) for e in asked]
    lines += [f"POST 2 (resume: {json.dumps(resume[0]['payload'])[:80]}...)"]
    lines += [_line(e) for e in resumed]
    return lines


def _line(event: dict) -> str:
    shown = {k: v for k, v in event.items() if k != "type"}
    return f"{event['type']:<22} {json.dumps(shown)[:160]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="measured turns (after a first one)")
    parser.add_argument("--ttfb", type=float, default=0.3, help="the model's time to first byte, seconds")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
