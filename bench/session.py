"""A session of many turns (default 1,000): does history per turn stay flat, and what does a turn cost?

One session (``wait_for_user``) on its own dev stack, scripted model and an in-process worker; each
turn is ``send_message`` then the model's text answer. It prints:

- history bytes per turn (the JSON of the current workflow run's history, growth over the last 10
  turns, divided by 10) at turns 10, 100 and 1,000, with the run's event count and how many times
  the session continued as new (so "flat" is visible: the per-turn growth does not rise with the
  turn number, and the run's history is cut at each continue-as-new);
- the process's peak RSS (worker, client and scripted model share this process);
- turn latency, from the ``send_message`` call to the model request reaching the scripted model,
  p50/p95, next to a bare Update round trip (a ``send_message`` the validator refuses: one
  workflow task, nothing written to history) measured the same way.

``python -m bench.session [--turns 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from agent import Agent, ChatMessage
from agent.conversation import MessageRefusedError
from agent.dev.scripted_model import ScriptedModelServer

#: Turn at which the history is measured -> the earlier turn the growth is counted from.
MEASURED_AT = {10: 1, 100: 90, 1_000: 990}


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _history_bytes(handle) -> tuple[int, int]:
    history = await handle.workflow.fetch_history()
    return len(history.to_json().encode()), len(history.events)


async def run_session(client, task_queue: str, scripted: ScriptedModelServer, turns: int) -> list[str]:
    model = f"session-bench-{os.getpid()}"
    scripted.script(model, [{"text": f"answer {n}"} for n in range(1, turns + 1)])
    arrivals: list[float] = []
    original_next = scripted._script.next

    def timed_next(name, body):  # when each model request arrives (the bench's own clock)
        if name == model:
            arrivals.append(time.perf_counter())
        return original_next(name, body)

    scripted._script.next = timed_next
    agent = Agent(model=model, system_prompt="You are brief.")
    handle = await agent.start(
        client,
        [ChatMessage.from_user("turn 1")],
        run_id=f"session-bench-{os.getpid()}",
        task_queue=task_queue,
        wait_for_user=timedelta(hours=1),
    )
    await handle.wait_turn(1)
    latencies: list[float] = []
    bare: list[float] = []
    wanted = set(MEASURED_AT) | set(MEASURED_AT.values())
    sizes: dict[int, tuple[int, int, int]] = {1: (*await _history_bytes(handle), 0)}
    for turn in range(2, turns + 1):
        started = time.perf_counter()
        try:
            await handle.send_message("")
        except MessageRefusedError:
            bare.append(time.perf_counter() - started)
        seen = len(arrivals)
        started = time.perf_counter()
        receipt = await handle.send_message(f"turn {turn}")
        await handle.wait_turn(receipt.turn, timeout=timedelta(minutes=2))
        if len(arrivals) > seen:
            latencies.append(arrivals[seen] - started)
        if turn in wanted:
            sizes[turn] = (*await _history_bytes(handle), (await handle.status()).continuations)
    status = await handle.status()
    await handle.cancel("bench done")
    result = await handle.result()
    lines = [f"session of {turns} turns: {result.turn} turns, {status.continuations} continue-as-new"]
    for turn, since in MEASURED_AT.items():
        if turn in sizes and since in sizes:
            (size, events, cans), (earlier, _, cans_before) = sizes[turn], sizes[since]
            window = f"turns {since}-{turn}"
            if cans != cans_before:
                growth = f"a continue-as-new in {window}: run history cut"
            else:
                growth = f"{(size - earlier) / (turn - since):,.0f} history bytes/turn over {window}"
            lines.append(
                f"  turn {turn:>5}: {growth}; this run's history {size:,} bytes, {events} events, "
                f"{cans} continue-as-new so far"
            )
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines.append(f"  peak RSS of the process (worker + client + scripted model): {rss_mib:,.0f} MiB")
    lines.append(
        f"  send_message -> model call start: p50 {_percentile(latencies, 0.5) * 1000:.1f} ms, "
        f"p95 {_percentile(latencies, 0.95) * 1000:.1f} ms ({len(latencies)} turns)"
    )
    lines.append(
        f"  bare Update round trip (refused send_message): p50 {_percentile(bare, 0.5) * 1000:.1f} ms, "
        f"p95 {_percentile(bare, 0.95) * 1000:.1f} ms, mean {statistics.mean(bare) * 1000:.1f} ms"
    )
    return lines


async def _main(turns: int) -> None:
    from agent.client import connect
    from agent.dev.stack import DevStack
    from worker import create_worker

    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as scripted:
        os.environ.update(OPENAI_BASE_URL=scripted.base_url, OPENAI_API_KEY="scripted-model")
        with DevStack(Path(tmp) / "stack", with_ui=False, persist_s3=False) as dev:
            dev.apply_env()
            client = await connect(dev.temporal.address, dev.temporal.namespace)
            async with create_worker(client, tools=[], task_queue="session-bench"):
                started = time.monotonic()
                lines = await run_session(client, "session-bench", scripted, turns)
    for line in lines:
        print(line)
    print(f"  {time.monotonic() - started:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1_000)
    args = parser.parse_args()
    asyncio.run(_main(args.turns))


if __name__ == "__main__":
    main()
