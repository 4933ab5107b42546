"""The cancel drill: runs cancelled in each phase of the run loop, at random moments, by
``handle.cancel(reason)`` and by Temporal's own cancel; every run must end cleanly.

Phases: ``model`` (a model call in flight: the scripted model holds its reply), ``tool`` (a tool
activity running: :func:`bench.cancel_support.gate`), ``approval`` (a confirmation waiting),
``user`` (a session waiting for the next message), ``hook_activity`` (a ``before_llm`` hook awaiting
its own model call activity). Each run is driven into its phase (a condition, never a sleep), then
cancelled after a random extra 0-300 ms (seeded, printed), by a random one of the two ways.

For every run it checks: ``result()`` is ``exit_reason="cancelled"``; every tool call has a result;
``after_run`` ran; the hooks' ``close`` ran (:class:`bench.cancel_support.CloseProbe` marks the
memo); no confirmation is left pending (query and the ``AgentWaitingForApproval`` attribute);
nothing waits for the user; a tool cancelled mid-call saw the cancel (its heartbeat delivered it);
the cancel's reason is in the cancelled tool results. A run failing any check counts as "ended
without cleanup".

Shared by ``tests/workflows/test_cancel.py`` (2 runs a phase) and ``python -m bench.cancel_drill``
(20 a phase, its own dev stack and worker); it imports nothing from ``tests``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from agent import Agent, ChatMessage
from agent.client import AgentRunHandle
from agent.dev.scripted_model import ScriptedModelServer
from bench.cancel_support import (
    AFTER_RUN_SCHEMA,
    CLOSED_MEMO_KEY,
    CloseProbe,
    HookModelCall,
    count_after_run,
    gate,
)
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from hooks.human_in_the_loop.wire import WAITING_FOR_APPROVAL
from workflows.agent_workflow import DEFAULT_CANCEL_REASON

PHASES = ("model", "tool", "approval", "user", "hook_activity")
HOW = ("handle.cancel", "temporal cancel")
#: Longest a run may take to reach its phase, and to end after the cancel.
PHASE_TIMEOUT_SECONDS = 60.0


@dataclass
class Outcome:
    """One cancelled run: where, how, and what failed (empty: it ended cleanly)."""

    phase: str
    how: str
    delay: float
    problems: list[str] = field(default_factory=list)


@dataclass
class DrillReport:
    seed: int
    outcomes: list[Outcome]

    @property
    def without_cleanup(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problems]

    def counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        """``(phase, how) -> (runs, runs without cleanup)``."""
        runs = Counter((o.phase, o.how) for o in self.outcomes)
        bad = Counter((o.phase, o.how) for o in self.without_cleanup)
        return {key: (runs[key], bad[key]) for key in sorted(runs)}

    def lines(self) -> list[str]:
        out = [
            f"cancel drill, seed {self.seed}: {len(self.outcomes)} runs, {len(self.without_cleanup)} without cleanup"
        ]
        out += [
            f"  {phase:<14} {how:<16} runs {n:>3}  without cleanup {b}"
            for (phase, how), (n, b) in self.counts().items()
        ]
        out += [
            f"  FAILED {o.phase}/{o.how} after +{o.delay:.3f}s: {'; '.join(o.problems)}" for o in self.without_cleanup
        ]
        return out


def _agent(model: str, phase: str, hook_model: str) -> Agent:
    hooks: dict = {"before_run": [CloseProbe()], "after_run": [count_after_run]}
    if phase == "approval":
        hooks["before_tool"] = [ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy())})]
    if phase == "hook_activity":
        hooks["before_llm"] = [HookModelCall(hook_model)]
    return Agent(model=model, tools=[gate], hooks=hooks, state_schema=dict(AFTER_RUN_SCHEMA))


async def _until(probe, what: str) -> None:
    give_up_at = time.monotonic() + PHASE_TIMEOUT_SECONDS
    while not await probe():
        if time.monotonic() > give_up_at:
            raise TimeoutError(f"the run never reached {what}")
        await asyncio.sleep(0.02)


async def cancel_one(
    client: Client, task_queue: str, scripted: ScriptedModelServer, gates: Path, phase: str, how: str, delay: float
) -> Outcome:
    """Drive one run into ``phase``, wait ``delay`` s more, cancel it ``how``, and check its end."""
    outcome = Outcome(phase, how, delay)
    name = uuid.uuid4().hex[:10]
    model, hook_model, label = f"cd-{name}", f"cd-hook-{name}", f"cd-{name}"
    hold = str(gates / f"{label}.open")
    call = {"tool_calls": [{"name": "gate", "id": f"c-{name}", "arguments": {"label": label}}]}
    script = {
        "model": [{"text": "never", "hold_until": hold}],
        "tool": [call, {"text": "never"}],
        "approval": [call, {"text": "never"}],
        "user": [{"text": "anything else?"}],
        "hook_activity": [{"text": "never"}],
    }[phase]
    scripted.script(model, script)
    scripted.script(hook_model, [{"text": "summary", "hold_until": hold}])
    agent = _agent(model, phase, hook_model)
    handle: AgentRunHandle = await agent.start(
        client,
        [ChatMessage.from_user("go")],
        run_id=f"cancel-drill-{phase}-{name}",
        task_queue=task_queue,
        wait_for_user=timedelta(minutes=10) if phase == "user" else None,
    )
    reached = {
        "model": lambda: _async(len(scripted.requests(model)) >= 1),
        "tool": lambda: _async((gates / f"{label}.started").exists()),
        "approval": lambda: _pending(handle),
        "user": lambda: _waiting_for_user(handle),
        "hook_activity": lambda: _async(len(scripted.requests(hook_model)) >= 1),
    }[phase]
    try:
        await _until(reached, phase)
        await asyncio.sleep(delay)  # the random moment inside the phase (what the drill varies)
        reason = f"drill {name}"
        if how == "handle.cancel":
            await handle.cancel(reason)
        else:
            await handle.workflow.cancel()
            reason = DEFAULT_CANCEL_REASON
        result = await asyncio.wait_for(handle.result(), PHASE_TIMEOUT_SECONDS)
    except Exception as err:  # a run that did not end cleanly is counted, with why
        causes, cause = [], err
        while cause is not None:
            causes.append(f"{type(cause).__name__}: {cause}")
            cause = getattr(cause, "cause", None) or cause.__cause__
        outcome.problems.append(" <- ".join(causes))
        return outcome
    finally:
        Path(hold).touch()  # let held model replies and gates go
    problems = outcome.problems
    if result.exit_reason != "cancelled":
        problems.append(f"exit_reason {result.exit_reason!r}")
    answered = {m.tool_call_result.origin.id for m in result.messages if m.tool_call_result is not None}
    called = [c.id for m in result.messages for c in m.tool_calls]
    if missing := [c for c in called if c not in answered]:
        problems.append(f"tool calls without a result: {missing}")
    if phase in ("tool", "approval") and not any(
        reason in (m.tool_call_result.result or "") for m in result.messages if m.tool_call_result is not None
    ):
        problems.append(f"no tool result names the reason {reason!r}")
    if phase == "tool" and not (gates / f"{label}.cancelled").exists():
        problems.append("the running tool never saw the cancel")
    if not result.state.get("after_run"):
        problems.append("after_run did not run")
    description = await handle.workflow.describe()
    if not await description.memo_value(CLOSED_MEMO_KEY, default=False):
        problems.append("close did not run")
    if description.typed_search_attributes.get(WAITING_FOR_APPROVAL):
        problems.append("still marked waiting for approval")
    if await handle.pending_confirmations():
        problems.append("confirmations still pending")
    if (await handle.status()).waiting_for_user:
        problems.append("still waiting for the user")
    return outcome


async def _async(value: bool) -> bool:
    return value


async def _pending(handle: AgentRunHandle) -> bool:
    return bool(await handle.pending_confirmations())


async def _waiting_for_user(handle: AgentRunHandle) -> bool:
    return (await handle.status()).waiting_for_user


async def drill(
    client: Client,
    task_queue: str,
    scripted: ScriptedModelServer,
    gates: Path,
    per_phase: int,
    seed: int,
    concurrency: int = 5,
) -> DrillReport:
    """Cancel ``per_phase`` runs in each phase (ways and moments drawn from ``seed``).

    ``gates`` must be the worker's ``GATE_DIR``.
    """
    rng = random.Random(seed)
    plan = [(phase, rng.choice(HOW), rng.uniform(0.0, 0.3)) for phase in PHASES for _ in range(per_phase)]
    bound = asyncio.Semaphore(concurrency)

    async def bounded(phase: str, how: str, delay: float) -> Outcome:
        async with bound:
            return await cancel_one(client, task_queue, scripted, gates, phase, how, delay)

    return DrillReport(seed, list(await asyncio.gather(*(bounded(*entry) for entry in plan))))


@asynccontextmanager
async def drill_worker(task_queue: str) -> AsyncIterator[tuple[Client, ScriptedModelServer, Path]]:
    """A dev stack, the scripted model and a worker serving :func:`gate` on ``task_queue``, for the
    command-line drills; yields ``(client, scripted model, gate directory)``."""
    from agent.client import connect
    from agent.dev.stack import DevStack
    from worker import create_worker

    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as scripted:
        os.environ.update(OPENAI_BASE_URL=scripted.base_url, OPENAI_API_KEY="scripted-model", GATE_DIR=tmp)
        with DevStack(Path(tmp) / "stack", with_ui=False, persist_s3=False) as dev:
            dev.apply_env()
            client = await connect(dev.temporal.address, dev.temporal.namespace)
            async with create_worker(client, tools=[gate], task_queue=task_queue):
                yield client, scripted, Path(tmp)


async def _main(per_phase: int, seed: int) -> int:
    async with drill_worker("cancel-drill") as (client, scripted, gates):
        started = time.monotonic()
        report = await drill(client, "cancel-drill", scripted, gates, per_phase, seed)
        elapsed = time.monotonic() - started
    for line in report.lines():
        print(line)
    print(f"  {elapsed:.1f} s")
    return 1 if report.without_cleanup else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-phase", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    raise SystemExit(asyncio.run(_main(args.per_phase, seed)))


if __name__ == "__main__":
    main()
