"""Per-call overhead of an MCP tool over a plain tool, on the same worker, side by side in one run.

Three agents of ``--steps`` steps each, every step one model call (the scripted model) and one
tool call of a tool that returns its text unchanged: (a) plain: ``bench.workloads.echo``, a
``@tool`` in the worker; (b) stdio: ``mcp_echo`` of ``bench/mcp_echo_server.py`` over stdio;
(c) http: the same server over streamable HTTP on 127.0.0.1. One worker serves all three (the
plain tool and both toolsets). Rounds alternate the kinds. Prints, per kind, the wall time of a
step and the tool activity's own span (started to completed, from the history), and each MCP
kind's overhead per call over plain. The run's one listing activity is left out of the per-call
figures and reported apart.

Run: python -m bench.mcp_overhead [--steps 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid

from temporalio.api.enums.v1 import EventType

from agent import Agent, ChatMessage, MCPToolset, StdioServerInfo, StreamableHttpServerInfo
from agent.client import connect
from agent.dev.processes import ROOT
from bench.common import bench_stack
from bench.workloads import echo
from worker import create_worker

KINDS = ("plain", "stdio", "http")
TEXT = "x" * 256


def tool_spans(history, tool_activity: str) -> tuple[list[float], list[float]]:
    """(spans of each ``tool_activity`` activity, spans of each ``mcp_list_tools``) in ms."""
    scheduled: dict[int, str] = {}
    started: dict[int, tuple[str, float]] = {}
    spans: dict[str, list[float]] = {tool_activity: [], "mcp_list_tools": []}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            kind = scheduled[event.activity_task_started_event_attributes.scheduled_event_id]
            started[event.event_id] = (kind, event.event_time.ToMilliseconds())
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            kind, at = started[event.activity_task_completed_event_attributes.started_event_id]
            if kind in spans:
                spans[kind].append(event.event_time.ToMilliseconds() - at)
    return spans[tool_activity], spans["mcp_list_tools"]


async def measure(client, scripted, queue: str, tools: dict, kind: str, steps: int) -> dict[str, float]:
    model = f"mcp-bench-{kind}-{uuid.uuid4().hex[:6]}"
    name = "echo" if kind == "plain" else "mcp_echo"
    call = {"tool_calls": [{"name": name, "arguments": {"text": TEXT}}], "times": steps - 1}
    scripted.script(model, [call, {"text": "done"}])
    agent = Agent(model=model, tools=[tools[kind]], max_agent_steps=steps + 1)
    started = time.perf_counter()
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=model, task_queue=queue)
    await handle.result()
    wall_ms = (time.perf_counter() - started) * 1000
    calls, listings = tool_spans(
        await handle.workflow.fetch_history(), "invoke_tool" if kind == "plain" else "mcp_call_tool"
    )
    assert len(calls) == steps - 1, (kind, len(calls))
    listing = listings[0] if listings else 0.0
    return {"step": (wall_ms - listing) / steps, "call": statistics.mean(calls), "listing": listing}


async def main(steps: int, rounds: int) -> dict[str, dict[str, float]]:
    http = subprocess.Popen(
        [sys.executable, "-m", "bench.mcp_echo_server", "http"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        line = http.stdout.readline() if http.stdout else ""
        if not line.startswith("ready "):
            raise SystemExit(f"the HTTP MCP server did not start: {line!r}")
        url = f"http://127.0.0.1:{line.split()[1]}/mcp"
        tools = {
            "plain": echo,
            "stdio": MCPToolset(
                StdioServerInfo(command=sys.executable, args=["-m", "bench.mcp_echo_server", "stdio"], cwd=str(ROOT))
            ),
            "http": MCPToolset(StreamableHttpServerInfo(url=url)),
        }
        with bench_stack() as (_, scripted):
            client = await connect()
            queue = f"mcp-bench-{uuid.uuid4().hex[:6]}"
            async with create_worker(client, tools=list(tools.values()), task_queue=queue):
                await measure(client, scripted, queue, tools, "plain", 3)  # warm the worker up
                results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
                for round_ in range(rounds):
                    order = KINDS if round_ % 2 == 0 else tuple(reversed(KINDS))
                    for kind in order:
                        results[kind].append(await measure(client, scripted, queue, tools, kind, steps))
    finally:
        http.terminate()
        http.wait(10)
    summary = {
        kind: {key: statistics.median(r[key] for r in rows) for key in ("step", "call", "listing")}
        for kind, rows in results.items()
    }
    print(f"{steps} steps a run, {rounds} rounds, medians (ms)")
    print(f"{'kind':<6} {'step wall':>10} {'tool activity':>14} {'listing':>8}")
    for kind in KINDS:
        s = summary[kind]
        print(f"{kind:<6} {s['step']:>10.1f} {s['call']:>14.1f} {s['listing']:>8.1f}")
    for kind in ("stdio", "http"):
        s, p = summary[kind], summary["plain"]
        print(
            f"{kind} over plain: +{s['step'] - p['step']:.1f} ms a step ({s['step'] / p['step']:.2f}x), "
            f"+{s['call'] - p['call']:.1f} ms a tool activity ({s['call'] / p['call']:.2f}x)"
        )
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds))
