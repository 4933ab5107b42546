"""Approval latency: from a person's Update to the approved tool starting, next to the bare Update
round trip and a validator rejection, measured side by side in one run on the real dev server.

    .venv/bin/python -m bench.approval_latency [--runs 30]

Each run asks for one ``stamp`` call (``AlwaysAskPolicy``); once it is pending the bench sends the
``submit_tool_decision`` Update and times (a) the Update's return (accepted: validator + handler +
history write), (b) the tool function starting in its activity on the worker (the workflow task
that wakes the strategy, rewrites messages and schedules the activity, plus the activity
dispatch), and (c) a refused Update (validator only, nothing written). The worker runs in this
process, so both ends read the same clock. The model is the project's scripted
OpenAI-compatible server on loopback (labelled as such), not a real model.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from agent import Agent, ChatMessage, tool
from agent.approvals.decisions import DecisionRefusedError
from agent.client import connect
from agent.dev.scripted_model import ScriptedModelServer
from agent.dev.stack import TemporalDevServer
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy, ToolDecision

STARTED: dict[str, float] = {}


@tool
async def stamp(label: str) -> str:
    """Note when this call started."""
    STARTED.setdefault(label, time.perf_counter())
    return label


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def line(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{name:<42} p50 {percentile(ms, 50):7.1f} ms   p95 {percentile(ms, 95):7.1f} ms   (n={len(ms)})"


async def measure(runs: int) -> None:
    from worker import create_worker

    scripted = ScriptedModelServer().start()
    os.environ["OPENAI_BASE_URL"] = scripted.base_url
    os.environ["OPENAI_API_KEY"] = "scripted-model"
    with tempfile.TemporaryDirectory() as tmp, TemporalDevServer(Path(tmp) / "t.db", with_ui=False) as server:
        client = await connect(server.address, server.namespace)
        queue = f"bench-{uuid.uuid4().hex[:6]}"
        hook = ConfirmationHook({"stamp": DurableConfirmationStrategy(AlwaysAskPolicy())})
        update_rtt, to_tool, refused = [], [], []
        async with create_worker(client, tools=[stamp], task_queue=queue):
            for i in range(runs + 2):  # the first two warm up
                model, label = f"bench-{i}", f"call-{i}"
                scripted.script(
                    model, [{"tool_calls": [{"name": "stamp", "arguments": {"label": label}}]}, {"text": "ok"}]
                )
                agent = Agent(model=model, tools=[stamp], hooks={"before_tool": [hook]})
                handle = await agent.start(
                    client, [ChatMessage.from_user("go")], run_id=f"{queue}-{i}", task_queue=queue
                )
                while not (pending := await handle.pending_confirmations()):
                    await asyncio.sleep(0.005)
                call_id = pending[0].tool_call_id

                t0 = time.perf_counter()
                try:
                    await handle.decide(ToolDecision(tool_call_id="no-such-call", action="confirm"))
                except DecisionRefusedError:
                    pass
                t1 = time.perf_counter()
                await handle.confirm(call_id, approver="bench")
                t2 = time.perf_counter()
                await handle.result()
                if i >= 2:
                    refused.append(t1 - t0)
                    update_rtt.append(t2 - t1)
                    to_tool.append(STARTED[label] - t1)
        scripted.stop()

    print(f"Approval latency on the Temporal dev server ({runs} runs, 2 cores; model: scripted, loopback)")
    print(line("Update refused by validator (round trip)", refused))
    print(line("Update accepted (bare round trip)", update_rtt))
    print(line("Update sent -> tool activity started", to_tool))
    ratio = statistics.median(to_tool) / statistics.median(update_rtt)
    print(f"ratio (p50): tool start / Update round trip = {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(measure(parser.parse_args().runs))


if __name__ == "__main__":
    main()
