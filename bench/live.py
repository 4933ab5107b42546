"""Live events, measured end to end: token latency, time to first token, and the history cost of
streaming, side by side in one run on the real dev server.

    .venv/bin/python -m bench.live [--turns 6] [--batches 50,150,300] [--pace 0.02] [--ttfb 0.3]

A session run (``wait_for_user``) with one subscriber reading ``handle.events()`` the whole time.
Each turn is one ``send_message`` and two steps: a tool call with a short text, then a reply of
``--chars`` characters the scripted model streams ``--chunk-chars`` at a time every ``--pace``
seconds, after ``--ttfb`` seconds. For each token batch interval (``AGENT_TOKEN_BATCH_MS``) it
reports:

- token latency: from the scripted model writing a chunk to the subscriber receiving the token
  event that completes it, p50/p95 (both ends in this process, one clock);
- time to first token: from ``send_message`` (turns 2 on) to the first token event at the subscriber, next to
  the model's own time to first byte;
- where the time goes: chunk sent -> its batch's Signal recorded (batch wait + Signal RPC),
  -> the workflow task that took it completed (the poll Update answered in it),
  -> the subscriber holding the event;

and the history events and bytes per step with streaming off (unwatched and watched) and on. The
worker runs in this process. The model is the project's scripted OpenAI-compatible server on
loopback (labelled as such), not a real model.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType

from agent import Agent, ChatMessage, RunEvent
from agent.client import connect
from bench.common import bench_stack, chain_events, percentile
from core.tools import tool
from worker import create_worker

PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"


@tool
def lookup(topic: str) -> str:
    """Look a topic up (returns a fixed short note)."""
    return f"notes on {topic}: nothing surprising"


def reply_text(turn: int, chars: int) -> str:
    """A reply of about ``chars`` characters, different each turn."""
    words, n = [], 0
    while sum(len(w) + 1 for w in words) < chars:
        words.append(f"t{turn}w{n:03d}")
        n += 1
    return " ".join(words)[:chars]


def chunk_latencies(sent: list[tuple[float, str]], received: list[tuple[float, str]]) -> list[float]:
    """Seconds from each chunk leaving the model to the subscriber holding all of its text.

    :param sent: ``(time, text)`` of each chunk the model wrote, in order (one reply).
    :param received: ``(time, text)`` of each token event the subscriber got, in order (the same reply).
    :raises ValueError: When the received text is not the sent text (a lost or mixed-up token).
    """
    if "".join(t for _, t in sent) != "".join(t for _, t in received):
        raise ValueError("the subscriber's text is not the model's text")
    out, got, index = [], 0, 0
    end = 0
    for sent_at, text in sent:
        end += len(text)
        while got < end:
            got += len(received[index][1])
            index += 1
        out.append(received[index - 1][0] - sent_at)
    return out


def signal_texts(event, seen: set[tuple[str, int]] | None = None) -> list[str]:
    """The token texts a stream publish Signal carried; none for a batch already in ``seen``
    (a publisher's retry, which the workflow drops as it does)."""
    payload = event.workflow_execution_signaled_event_attributes.input.payloads[0]
    body = json.loads(payload.data)
    if seen is not None:
        key = (body.get("publisher_id", ""), body.get("sequence", 0))
        if key in seen:
            return []
        seen.add(key)
    texts = []
    for item in body.get("items", []):
        inner = Payload()
        inner.ParseFromString(base64.b64decode(item["data"]))
        value = json.loads(inner.data)
        if value.get("kind") == "token":
            texts.append(value["data"]["text"])
    return texts


@dataclass
class Measured:
    latencies: list[float] = field(default_factory=list)
    to_signal: list[float] = field(default_factory=list)
    to_task: list[float] = field(default_factory=list)
    to_subscriber: list[float] = field(default_factory=list)
    first_token: list[float] = field(default_factory=list)
    events_per_step: float = 0.0
    bytes_per_step: float = 0.0
    signals_per_step: float = 0.0


def first_chunk_times(sent: list[tuple[float, str]], received: list[tuple[float, str]]) -> list[float]:
    """For each received token event, when the first chunk it completes left the model (its longest wait)."""
    out, chunk, chunk_end, start = [], 0, 0, 0
    for _, text in received:
        while chunk < len(sent) and chunk_end + len(sent[chunk][1]) <= start:
            chunk_end += len(sent[chunk][1])
            chunk += 1
        out.append(sent[chunk][0] if chunk < len(sent) else float("nan"))
        start += len(text)
    return out


def signal_times(history: list) -> list[tuple[float, float]]:
    """``(Signal recorded, next workflow task completed)`` for each token event the run's Signals carried, in order."""
    out: list[tuple[float, float]] = []
    seen: set[tuple[str, int]] = set()
    for position, event in enumerate(history):
        if (
            event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            and event.workflow_execution_signaled_event_attributes.signal_name == PUBLISH_SIGNAL
        ):
            signal_at = event.event_time.ToDatetime().timestamp()
            done = next(
                (e for e in history[position:] if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), None
            )
            done_at = done.event_time.ToDatetime().timestamp() if done is not None else signal_at
            out.extend((signal_at, done_at) for _ in signal_texts(event, seen))
    return out


async def run_session(client, queue, scripted, args, stream_tokens: bool, watched: bool, m: Measured) -> None:
    model = f"live-{uuid.uuid4().hex[:8]}"
    pacing = {"pace": args.pace, "ttfb": args.ttfb, "chunk_chars": args.chunk_chars}
    script = []
    for turn in range(1, args.turns + 1):
        script.append(
            {"text": "Checking.", "tool_calls": [{"name": "lookup", "arguments": {"topic": f"t{turn}"}}], **pacing}
        )
        script.append({"text": reply_text(turn, args.chars), **pacing})
    scripted.script(model, script)
    agent = Agent(model=model, tools=[lookup], stream_tokens=stream_tokens, system_prompt="Answer briefly.")
    run_id = f"live-{uuid.uuid4().hex[:10]}"
    sent_at: dict[int, float] = {1: time.time()}  # turn 1 starts with the run; the others by send_message
    handle = await agent.start(
        client,
        [ChatMessage.from_user("question 1")],
        run_id=run_id,
        task_queue=queue,
        wait_for_user=timedelta(minutes=5),
    )
    received: dict[tuple[int, int], list[tuple[float, str]]] = {}
    first_token_at: dict[int, float] = {}

    async def watch() -> None:
        event: RunEvent
        async for event in handle.events():
            now = time.time()
            if event.kind == "token":
                received.setdefault((event.turn, event.step or 0), []).append((now, event.data["text"]))
                first_token_at.setdefault(event.turn, now)

    watcher = asyncio.ensure_future(watch()) if watched else None
    await handle.wait_turn(1)
    for turn in range(2, args.turns + 1):
        sent_at[turn] = time.time()
        await handle.send_message(f"question {turn}", sender="bench")
        await handle.wait_turn(turn)
    await handle.cancel("bench done")
    await handle.result()
    if watcher is not None:
        await asyncio.wait_for(watcher, timeout=30)
    history = await chain_events(client, run_id)
    steps = 2 * args.turns
    m.events_per_step = len(history) / steps
    m.bytes_per_step = sum(e.ByteSize() for e in history) / steps
    m.signals_per_step = (
        sum(
            1
            for e in history
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            and e.workflow_execution_signaled_event_attributes.signal_name == PUBLISH_SIGNAL
        )
        / steps
    )
    if not (stream_tokens and watched):
        return
    sent = scripted.sent_chunks(model)
    # The model's chunks, split by reply: each reply's text is known, so cut the list in order.
    replies = [
        (turn, step, entry["text"])
        for turn in range(1, args.turns + 1)
        for step, entry in enumerate(script[2 * turn - 2 : 2 * turn])
    ]
    cursor = 0
    firsts: list[tuple[float, float]] = []
    for turn, step, text in replies:
        chunks, length = [], 0
        while length < len(text):
            chunks.append(sent[cursor])
            length += len(sent[cursor][1])
            cursor += 1
        got = received.get((turn, step), [])
        m.latencies.extend(chunk_latencies(chunks, got))
        firsts.extend(zip(first_chunk_times(chunks, got), (at for at, _ in got), strict=True))
    for (first, received_at), (signal_at, done_at) in zip(firsts, signal_times(history), strict=True):
        m.to_signal.append(signal_at - first)
        m.to_task.append(done_at - signal_at)
        m.to_subscriber.append(received_at - done_at)
    m.first_token.extend(
        first_token_at[turn] - sent_at[turn] for turn in sent_at if turn > 1 and turn in first_token_at
    )


def ms(values: list[float], q: int) -> str:
    return f"{percentile([v * 1000 for v in values], q):6.0f}" if values else "     -"


async def measure(args: argparse.Namespace) -> None:
    with bench_stack() as (stack, scripted):
        client = await connect(stack.temporal.address, stack.temporal.namespace)
        results: dict[str, Measured] = {}
        for label, batch, stream_tokens, watched in [
            ("off, unwatched", None, False, False),
            ("off, watched", None, False, True),
            *[(f"on, batch {b} ms", b, True, True) for b in args.batches],
        ]:
            if batch is not None:
                os.environ["AGENT_TOKEN_BATCH_MS"] = str(batch)
            queue = f"live-{uuid.uuid4().hex[:6]}"
            async with create_worker(client, tools=[lookup], task_queue=queue):
                m = Measured()
                await run_session(client, queue, scripted, args, stream_tokens, watched, m)
                results[label] = m
        os.environ.pop("AGENT_TOKEN_BATCH_MS", None)

    print(
        f"Live events on the Temporal dev server, {time.strftime('%Y-%m-%d')} ({os.cpu_count()} cores; "
        f"model: scripted, loopback, ttfb {args.ttfb * 1000:.0f} ms, {args.chunk_chars} chars every "
        f"{args.pace * 1000:.0f} ms, {args.chars}-char replies, {args.turns} turns x 2 steps)"
    )
    print(
        f"{'':<18}{'token p50':>10}{'p95':>7}{'first tok p50':>15}{'p95':>7}"
        f"{'->signal':>10}{'->task':>8}{'->sub':>7}{'events/step':>13}{'bytes/step':>12}{'signals/step':>14}"
    )
    base = results["off, watched"].bytes_per_step
    for label, m in results.items():
        print(
            f"{label:<18}{ms(m.latencies, 50):>10}{ms(m.latencies, 95):>7}{ms(m.first_token, 50):>15}"
            f"{ms(m.first_token, 95):>7}{ms(m.to_signal, 50):>10}{ms(m.to_task, 50):>8}{ms(m.to_subscriber, 50):>7}"
            f"{m.events_per_step:>13.1f}{m.bytes_per_step:>12.0f}{m.signals_per_step:>14.1f}"
            f"   ({m.bytes_per_step / base:.2f}x off-watched bytes)"
        )
    print(f"model's own time to first byte: {args.ttfb * 1000:.0f} ms; latency columns in ms (p50 unless marked)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6, help="turns of the session (2 steps each)")
    parser.add_argument("--batches", default="50,150,300", help="token batch intervals to compare, ms")
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between two streamed chunks")
    parser.add_argument("--ttfb", type=float, default=0.3, help="the model's time to first byte, seconds")
    parser.add_argument("--chunk-chars", type=int, default=4, help="characters a chunk")
    parser.add_argument("--chars", type=int, default=400, help="characters of each long reply")
    args = parser.parse_args()
    args.batches = [float(b) for b in args.batches.split(",") if b.strip()]
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
