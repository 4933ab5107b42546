"""What a sub-agent call costs: a parent with 10 sub-agent calls of 5 tool steps each, against
the same 50 tool steps in one agent, side by side in one run.

    python -m bench.sub_agents [--rounds 3] [--calls 10] [--steps 5] [--result-chars 2000]

Both shapes do the same tool work (``big_text`` returning ``--result-chars`` characters, one call a
step) on one worker (``python worker.py``, its own process) against a dev server and the scripted
model on loopback. The parent calls ``research`` once a step; each call is a child run that takes
``--steps`` tool steps and answers in one more model call. The single agent takes all
``calls * steps`` tool steps in a row. Figures, each the median of ``--rounds`` rounds run
alternately (so the machine's load hits both alike):

- wall: from ``start`` to ``result``;
- worker CPU: user + system time of the worker process during the run (``/proc``);
- history bytes: the sum of the events' protobuf sizes, for the parent alone and with its children.

The per-call overhead is (sub-agents - single) / calls. The model calls are not the same in both:
each child adds one model call for its answer and the parent one for each call, so the figures
include those (the scripted model answers in about a millisecond).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent import Agent, ChatMessage
from agent.client import connect
from agent.dev.processes import start_worker
from bench.common import bench_stack
from bench.parking import cpu_seconds
from bench.workloads import big_text

QUEUE = "bench-sub-agents"


@dataclass
class Measured:
    """One run of one shape."""

    wall_s: float
    worker_cpu_s: float
    parent_history_bytes: int
    all_history_bytes: int


def tool_steps(count: int, chars: int, answer: str) -> list[dict]:
    """A script: ``count`` steps that each call ``big_text``, then a text answer."""
    return [{"tool_calls": [{"name": "big_text", "arguments": {"size": chars}}], "times": count}, {"text": answer}]


async def history_bytes(client, run_id: str) -> int:
    history = await client.get_workflow_handle(run_id).fetch_history()
    return sum(event.ByteSize() for event in history.events)


async def run_once(client, scripted, shape: str, round_no: int, args: argparse.Namespace, worker_pid: int) -> Measured:
    """Run one shape once (``sub_agents`` or ``single``) and measure it."""
    lead_model, child_model = f"lead-{shape}-{round_no}", f"child-{shape}-{round_no}"
    if shape == "sub_agents":
        child = Agent(model=child_model, tools=[big_text], max_agent_steps=args.steps + 1)
        agent = Agent(
            model=lead_model,
            tools=[child.as_tool("research", "Research one part")],
            max_agent_steps=args.calls + 1,
        )
        research = {"tool_calls": [{"name": "research", "arguments": {"input": "one part"}}], "times": args.calls}
        scripted.script(lead_model, [research, {"text": "all parts done"}])
        scripted.script(child_model, tool_steps(args.steps, args.result_chars, "part done") * args.calls)
    else:
        agent = Agent(model=lead_model, tools=[big_text], max_agent_steps=args.calls * args.steps + 1)
        scripted.script(lead_model, tool_steps(args.calls * args.steps, args.result_chars, "all parts done"))
    run_id = f"bench-{shape}-{round_no}-{os.getpid()}"
    cpu0, started = cpu_seconds(worker_pid), time.perf_counter()
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=QUEUE)
    result = await handle.result()
    wall, cpu = time.perf_counter() - started, cpu_seconds(worker_pid) - cpu0
    assert result.last_message is not None and result.last_message.text == "all parts done", result.exit_reason
    parent = await history_bytes(client, run_id)
    children = 0
    if shape == "sub_agents":
        calls = [m.tool_call_result.origin.id for m in result.messages if m.tool_call_result is not None]
        assert len(calls) == args.calls
        children = sum([await history_bytes(client, f"{run_id}/{call_id}") for call_id in calls])
    return Measured(wall, cpu, parent, parent + children)


def median(values: list[float]) -> float:
    return statistics.median(values)


async def main_async(args: argparse.Namespace) -> None:
    with bench_stack() as (stack, scripted), tempfile.TemporaryDirectory() as tmp:
        worker = start_worker(Path(tmp) / "worker.log", "bench.workloads:BENCH_TOOLS", QUEUE)
        try:
            assert worker.pid is not None
            client = await connect(stack.temporal.address, stack.temporal.namespace)
            warm_up = argparse.Namespace(**{**vars(args), "calls": 1})
            for shape in ("sub_agents", "single"):  # the worker's first runs import and compile more
                await run_once(client, scripted, shape, 0, warm_up, worker.pid)
            measured: dict[str, list[Measured]] = {"sub_agents": [], "single": []}
            for round_no in range(1, args.rounds + 1):
                for shape in ("sub_agents", "single") if round_no % 2 else ("single", "sub_agents"):
                    measured[shape].append(await run_once(client, scripted, shape, round_no, args, worker.pid))
        finally:
            worker.stop()
    steps = args.calls * args.steps
    print(
        f"sub-agents, {datetime.date.today()}: {os.cpu_count()} cores, dev server, scripted model on loopback; "
        f"{args.calls} calls x {args.steps} tool steps vs {steps} tool steps in one agent, "
        f"{args.result_chars}-char results, median of {args.rounds} rounds"
    )
    rows = {
        shape: {f: median([getattr(m, f) for m in ms]) for f in Measured.__dataclass_fields__}
        for shape, ms in measured.items()
    }
    sub, single = rows["sub_agents"], rows["single"]
    print(f"{'':28}{'sub-agents':>14}{'one agent':>14}{'ratio':>8}{'per call':>14}")
    for label, field, scale, unit in (
        ("wall", "wall_s", 1000, "ms"),
        ("worker CPU", "worker_cpu_s", 1000, "ms"),
        ("history, parent only", "parent_history_bytes", 1 / 1024, "KB"),
        ("history, parent + children", "all_history_bytes", 1 / 1024, "KB"),
    ):
        a, b = sub[field] * scale, single[field] * scale
        per_call = (a - b) / args.calls
        print(f"{label:28}{a:>11.0f} {unit}{b:>11.0f} {unit}{a / b:>8.2f}{per_call:>+11.1f} {unit}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sub_agents", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both shapes (the median is printed)")
    parser.add_argument("--calls", type=int, default=10, help="sub-agent calls of the parent")
    parser.add_argument("--steps", type=int, default=5, help="tool steps of each sub-agent call")
    parser.add_argument("--result-chars", type=int, default=2000, help="characters of each tool result")
    args = parser.parse_args()
    if min(args.rounds, args.calls, args.steps, args.result_chars) < 1:
        parser.error("--rounds, --calls, --steps and --result-chars must be at least 1")
    asyncio.run(main_async(args))
    os._exit(0)  # temporalio's native runtime can abort at interpreter shutdown; leave at once


if __name__ == "__main__":
    main()
