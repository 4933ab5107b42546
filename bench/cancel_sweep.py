"""The cancel sweep: cancels aimed across the model-reply boundary, where an accepted cancel and
the reply can reach the run in the same workflow task; not one may be lost.

Each run's model answers with a call of :func:`bench.cancel_support.gate` (its gate already open,
so the tool returns at once), then with text held until the cancel has been sent (so a run cannot
end before its cancel, and a lost cancel shows at once as a run that answered). The sweep releases
the first reply (a ``hold_until`` file) and cancels ``offset`` seconds later, ``offset`` drawn
(seeded, printed) from :data:`OFFSETS`: before the reply, with it, and after it. Half the runs are
cancelled by ``handle.cancel(reason)``, half by Temporal's own cancel. A second mode starts runs by
``Agent.send`` (update-with-start) and cancels at once, without waiting for anything.

For every run whose cancel was accepted it checks, from its result and history: ``exit_reason`` is
``"cancelled"``, every tool call has a result, and no ``invoke_tool`` activity was scheduled after
the cancel reached the run (the ``cancel_run`` Update's acceptance, or the cancel request event).
A run failing any of these counts as "lost". A cancel refused because the run had ended is
counted apart.

Used by ``tests/workflows/test_cancel_sweep.py`` and ``python -m bench.cancel_sweep``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError

from agent import Agent, ChatMessage
from agent.client import AgentRunHandle
from agent.conversation import ConversationError
from agent.dev.scripted_model import ScriptedModelServer
from bench.cancel_support import gate
from core.wire import CANCEL_RUN_UPDATE, INVOKE_TOOL_ACTIVITY

#: Seconds after the first reply's release at which the cancel is sent (uniform; negative: before).
OFFSETS = (-0.05, 0.25)
HOW = ("handle.cancel", "temporal cancel")
#: Longest one run may take to end after its cancel.
END_TIMEOUT_SECONDS = 60.0


@dataclass
class SweepOutcome:
    """One cancelled run: how, when (None for the ``Agent.send`` mode), and what went wrong."""

    how: str
    offset: float | None
    accepted: bool = True
    problems: list[str] = field(default_factory=list)


@dataclass
class SweepReport:
    seed: int
    outcomes: list[SweepOutcome]
    seconds: float = 0.0

    @property
    def lost(self) -> list[SweepOutcome]:
        return [o for o in self.outcomes if o.accepted and o.problems]

    @property
    def refused(self) -> list[SweepOutcome]:
        return [o for o in self.outcomes if not o.accepted]

    def lines(self) -> list[str]:
        accepted = Counter(o.how for o in self.outcomes if o.accepted)
        lost = Counter(o.how for o in self.lost)
        out = [
            f"cancel sweep, seed {self.seed}: {len(self.outcomes)} cancels, "
            f"{len(self.outcomes) - len(self.refused)} accepted, {len(self.lost)} lost, "
            f"{len(self.refused)} refused (run already ended), {self.seconds:.1f} s"
        ]
        out += [f"  {how:<26} accepted {accepted[how]:>4}  lost {lost[how]}" for how in sorted(accepted)]
        out += [
            f"  LOST {o.how} at {'send' if o.offset is None else f'{o.offset:+.3f}s'}: {'; '.join(o.problems)}"
            for o in self.lost
        ]
        return out


def _script(label: str, release: Path, second: Path) -> list[dict]:
    call = {"name": "gate", "id": f"c-{label}", "arguments": {"label": label}}
    return [{"tool_calls": [call], "hold_until": str(release)}, {"text": "answered", "hold_until": str(second)}]


async def _check(handle: AgentRunHandle, how: str, outcome: SweepOutcome) -> None:
    """Fill ``outcome.problems`` from the ended run's result and history."""
    try:
        result = await asyncio.wait_for(handle.result(), END_TIMEOUT_SECONDS)
    except Exception as err:  # a run that did not end is a lost cancel, with why
        outcome.problems.append(f"{type(err).__name__}: {err}")
        return
    if result.exit_reason != "cancelled":
        outcome.problems.append(f"exit_reason {result.exit_reason!r}")
    answered = {m.tool_call_result.origin.id for m in result.messages if m.tool_call_result is not None}
    if missing := [c.id for m in result.messages for c in m.tool_calls if c.id not in answered]:
        outcome.problems.append(f"tool calls without a result: {missing}")
    cancel_at, scheduled_after = None, []
    async for event in handle.workflow.fetch_history_events():
        if cancel_at is None and (
            (
                event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
                and event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
                == CANCEL_RUN_UPDATE
            )
            or event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED
        ):
            cancel_at = event.event_id
        if (
            cancel_at is not None
            and event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name == INVOKE_TOOL_ACTIVITY
        ):
            scheduled_after.append(event.event_id)
    if cancel_at is None:
        outcome.problems.append(f"no accepted cancel in the history ({how})")
    if scheduled_after:
        outcome.problems.append(f"tool scheduled after the cancel (event {cancel_at}): events {scheduled_after}")


async def _cancel(handle: AgentRunHandle, how: str, outcome: SweepOutcome) -> None:
    try:
        if how.startswith("handle.cancel"):
            await handle.cancel("swept")
        else:
            await handle.workflow.cancel()
    except (ConversationError, RPCError):  # refused: the run had already ended
        outcome.accepted = False


async def sweep_one(
    client: Client, task_queue: str, scripted: ScriptedModelServer, gates: Path, how: str, offset: float
) -> SweepOutcome:
    """Start a run, release its first reply, cancel ``offset`` s later (``how``), and check its end.

    ``gates`` must be the worker's ``GATE_DIR``.
    """
    outcome = SweepOutcome(how, offset)
    label = f"cs-{uuid.uuid4().hex[:10]}"
    (gates / f"{label}.open").touch()
    release, second = gates / f"{label}.release", gates / f"{label}.second"
    scripted.script(label, _script(label, release, second))
    handle = await Agent(model=label, tools=[gate]).start(
        client, [ChatMessage.from_user("go")], run_id=f"cancel-sweep-{label}", task_queue=task_queue
    )
    try:
        while not scripted.requests(label):  # the model call is in flight
            await asyncio.sleep(0.01)
        loop = asyncio.get_running_loop()
        released_at = loop.time()
        if offset >= 0:
            release.touch()
            await asyncio.sleep(max(0.0, released_at + offset - loop.time()))
            await _cancel(handle, how, outcome)
        else:
            await _cancel(handle, how, outcome)
            release.touch()
        second.touch()  # a lost cancel then shows at once as a run that answered
        if outcome.accepted:
            await _check(handle, how, outcome)
    finally:
        release.touch()
        second.touch()
    return outcome


async def send_then_cancel(client: Client, task_queue: str, scripted: ScriptedModelServer, gates: Path) -> SweepOutcome:
    """``Agent.send`` starts a run with a message, then ``handle.cancel`` at once; check its end."""
    outcome = SweepOutcome("Agent.send + handle.cancel", None)
    label = f"cs-{uuid.uuid4().hex[:10]}"
    (gates / f"{label}.open").touch()
    second = gates / f"{label}.second"
    scripted.script(label, _script(label, gates / f"{label}.open", second))
    try:
        handle = await Agent(model=label, tools=[gate]).send(
            client, f"cancel-sweep-{label}", "go", task_queue=task_queue
        )
        await _cancel(handle, "handle.cancel", outcome)
        second.touch()
        if outcome.accepted:
            await _check(handle, "handle.cancel", outcome)
    finally:
        second.touch()
    return outcome


async def sweep(
    client: Client,
    task_queue: str,
    scripted: ScriptedModelServer,
    gates: Path,
    runs: int,
    sends: int,
    seed: int,
    concurrency: int = 10,
) -> SweepReport:
    """``runs`` cancels at seeded offsets around the reply (both ways), and ``sends`` send-then-cancel runs."""
    rng = random.Random(seed)
    plan = [(HOW[i % 2], rng.uniform(*OFFSETS)) for i in range(runs)]
    bound = asyncio.Semaphore(concurrency)
    started = time.monotonic()

    async def bounded(coro_factory) -> SweepOutcome:
        async with bound:
            return await coro_factory()

    jobs = [
        lambda how=how, offset=offset: sweep_one(client, task_queue, scripted, gates, how, offset)
        for how, offset in plan
    ]
    jobs += [lambda: send_then_cancel(client, task_queue, scripted, gates)] * sends
    outcomes = list(await asyncio.gather(*(bounded(job) for job in jobs)))
    return SweepReport(seed, outcomes, time.monotonic() - started)


async def _main(runs: int, sends: int, seed: int) -> int:
    from bench.cancel_drill import drill_worker

    async with drill_worker("cancel-sweep") as (client, scripted, gates):
        report = await sweep(client, "cancel-sweep", scripted, gates, runs, sends, seed)
    print("\n".join(report.lines()))
    return 1 if report.lost else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="cancels aimed around the reply")
    parser.add_argument("--sends", type=int, default=100, help="Agent.send runs cancelled at once")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    raise SystemExit(asyncio.run(_main(args.runs, args.sends, seed)))


if __name__ == "__main__":
    main()
