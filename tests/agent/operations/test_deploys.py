"""Deploys on the dev server (DESIGN.md "Deploys"): builds v1 and v2 of one app as two
``python worker.py`` processes of one Worker Deployment, each with its own code on its
``PYTHONPATH`` (tests/support/deploy_builds/). v2's hook is incompatible with v1's histories.

One scenario, in the order an operator lives it: no current version (a start is refused), v1
promoted, runs parked on v1, v2 started and promoted, then each run ends where it should.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.service import RPCError

from agent import Agent, ChatMessage, get_run
from agent.dev.processes import ChildProcess, start_worker
from agent.operations.deploys import MoveRefused, deployment_status, move, promote
from agent.routing import NoCurrentVersionError, check_task_queue_routes_new_runs
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests.support.hitl_helpers import call, calls, wait_pending
from tests.support.polling import eventually

BUILDS = Path(__file__).resolve().parents[2] / "support" / "deploy_builds"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def deploy_app(monkeypatch):
    """Build v1's module, imported here to build the agents (the client only needs the import path)."""
    monkeypatch.syspath_prepend(str(BUILDS / "v1"))
    sys.modules.pop("deploy_app", None)
    import deploy_app  # noqa: PLC0415 - the module of the build on the path, imported once the path is set

    yield deploy_app
    sys.modules.pop("deploy_app", None)


def build_worker(tmp_path: Path, deployment: str, build: str, queue: str) -> ChildProcess:
    env = {
        "AGENT_DEPLOYMENT_NAME": deployment,
        "AGENT_BUILD_ID": build,
        "PYTHONPATH": os.pathsep.join([str(BUILDS / build), str(ROOT)]),
    }
    return start_worker(tmp_path / f"worker-{build}.log", "deploy_app:TOOLS", queue, env=env)


async def pinned_build(client, run_id: str) -> str | None:
    """The build the run's current Temporal run is pinned to (None before its first workflow task)."""
    info = (await client.get_workflow_handle(run_id).describe()).raw_description.workflow_execution_info
    version = info.versioning_info.deployment_version
    return version.build_id or None


def tool_results(messages) -> list[str]:
    return [m.tool_call_result.result for m in messages if m.tool_call_result is not None]


def agent_cli(*args: str, build: str | None = None) -> subprocess.CompletedProcess:
    """``agent ARGS`` in a process of its own; with ``build``, that build's code installed (on its path)."""
    env = dict(os.environ)
    if build is not None:
        env.update(PYTHONPATH=os.pathsep.join([str(BUILDS / build), str(ROOT)]), AGENT_TRUSTED_MODULES="deploy_app")
    command = [sys.executable, "-m", "agent.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def deploy_cli(*args: str) -> str:
    done = agent_cli("deploy", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_runs_finish_on_their_build_sessions_move_at_a_turn_and_v1_drains(
    client, scripted, model, tmp_path, deploy_app
):
    suffix = uuid.uuid4().hex[:8]
    deployment, queue = f"deploy-{suffix}", f"deploy-{suffix}"
    confirm = ConfirmationHook({"ship": DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(days=3))})
    marker = {"before_llm": [deploy_app.before_llm_marker]}
    approving, approving_b = (
        Agent(model=f"{model}-{name}", tools=[deploy_app.ship], hooks={**marker, "before_tool": [confirm]})
        for name in ("a", "b")
    )
    plain_approving = Agent(model=f"{model}-d", tools=[deploy_app.ship], hooks={"before_tool": [confirm]})
    mover = Agent(model=f"{model}-s1", tools=[deploy_app.ship], hooks=marker, upgrade_at_turn_boundary=True)
    stayer = Agent(model=f"{model}-s2", tools=[deploy_app.ship], hooks=marker)
    researcher = Agent(model=f"{model}-c", tools=[deploy_app.ship], hooks=marker)
    ask_research = ConfirmationHook({"research": DurableConfirmationStrategy(AlwaysAskPolicy())})
    lead = Agent(
        model=f"{model}-l",
        tools=[researcher.as_tool("research", "Ship one thing")],
        hooks={"before_tool": [ask_research]},
    )
    scripted.script(f"{model}-l", [calls(call("research", id="r1", input="ship c")), {"text": "lead done"}])
    for name in ("a", "d", "s1", "s2", "b", "c"):
        ship_twice = [calls(call("ship", id=f"{name}1", item=f"{name}-first")), {"text": f"{name} turn 1 done"}]
        ship_twice += [calls(call("ship", id=f"{name}2", item=f"{name}-second")), {"text": f"{name} turn 2 done"}]
        scripted.script(f"{model}-{name}", ship_twice)

    v1 = build_worker(tmp_path, deployment, "v1", queue)
    v2 = None
    try:
        # No current version: a start is refused at once instead of a run no worker picks up.
        async def refused() -> NoCurrentVersionError | None:
            try:
                await check_task_queue_routes_new_runs(client, queue)
            except NoCurrentVersionError as err:
                return err
            return None

        await eventually(refused, timeout=20)  # once the server lists the v1 worker among the queue's pollers
        with pytest.raises(NoCurrentVersionError, match="no current version.*agent deploy promote v1"):
            await approving.start(client, [ChatMessage.from_user("go")], run_id=f"never-{suffix}", task_queue=queue)
        await eventually(lambda: promote(client, "v1", deployment), timeout=30, ignoring=(RuntimeError, RPCError))

        run_a = await approving.start(client, [ChatMessage.from_user("ship a")], run_id=f"a-{suffix}", task_queue=queue)
        run_d = await plain_approving.start(
            client, [ChatMessage.from_user("ship d")], run_id=f"d-{suffix}", task_queue=queue
        )
        wait = timedelta(hours=1)
        s1 = await mover.start(
            client, [ChatMessage.from_user("hi")], run_id=f"s1-{suffix}", task_queue=queue, wait_for_user=wait
        )
        s2 = await stayer.start(
            client, [ChatMessage.from_user("hi")], run_id=f"s2-{suffix}", task_queue=queue, wait_for_user=wait
        )
        (pending_a,) = await wait_pending(run_a)
        (pending_d,) = await wait_pending(run_d)
        run_l = await lead.start(client, [ChatMessage.from_user("go")], run_id=f"l-{suffix}", task_queue=queue)
        (pending_l,) = await wait_pending(run_l)
        for session in (s1, s2):
            first = await session.wait_turn(1, timeout=timedelta(seconds=60))
            assert first.last_message.text.endswith("turn 1 done")
        for run in (run_a, run_d, run_l, s1, s2):
            assert await pinned_build(client, run.run_id) == "v1"

        v2 = build_worker(tmp_path, deployment, "v2", queue)
        v2_ready_at = time.monotonic()  # retried while the server registers v2's first poll
        await eventually(lambda: promote(client, "v2", deployment), timeout=30, ignoring=(RuntimeError, RPCError))
        promoted_at = time.monotonic()
        run_b = await approving_b.start(
            client, [ChatMessage.from_user("ship b")], run_id=f"b-{suffix}", task_queue=queue
        )
        await eventually(lambda: pinned_build(client, run_b.run_id), until=lambda b: b == "v2", timeout=30)
        landed = time.monotonic()
        print(f"v2 worker ready -> promote accepted: {promoted_at - v2_ready_at:.2f} s")
        print(f"promote accepted -> first run's first task on v2: {landed - promoted_at:.2f} s")
        print("agent deploy status, v1 draining:\n" + deploy_cli("status", "--deployment", deployment))

        def v1_of(status):
            return next(v for v in status.versions if v.build_id == "v1")

        before = await eventually(
            lambda: deployment_status(client, deployment),
            until=lambda s: (v1_of(s).open_runs, v1_of(s).waiting_for_approval, v1_of(s).waiting_for_user) == (5, 3, 2),
            timeout=20,
        )
        assert (before.current_build_id, v1_of(before).role, v1_of(before).drained) == ("v2", "-", False)

        # replay-check --build v1 where v2's code is installed names the runs whose hooks changed.
        on_v2 = agent_cli("replay-check", "--build", "v1", "--deployment", deployment, build="v2")
        assert on_v2.returncode == 1, on_v2.stdout + on_v2.stderr
        broken = {line.split()[1] for line in on_v2.stdout.splitlines() if line.startswith("run ")}
        assert broken == {run_a.run_id, s1.run_id, s2.run_id}  # the runs whose agent has the changed hook
        on_v1 = agent_cli("replay-check", "--build", "v1", "--deployment", deployment, build="v1")
        assert on_v1.returncode == 0 and "all 5 runs replay" in on_v1.stdout, on_v1.stdout + on_v1.stderr

        # v2's hook awaits a timer v1's never did: run a's history does not replay there, so it stays.
        with pytest.raises(MoveRefused, match="non-determinism") as refused:
            await move(client, run_a.run_id, "v2")
        print(f"move refused: {refused.value}")
        assert await pinned_build(client, run_a.run_id) == "v1"
        # Run d has no such hook: v2's workers replay it, and it moves.
        moved = await move(client, run_d.run_id, "v2")
        assert (moved.from_build_id, moved.to_build_id) == ("v1", "v2")

        # The approval finishes run a on v1, with v1's tool code and no non-determinism.
        await run_a.confirm(pending_a.tool_call_id, approver="ann")
        result_a = await asyncio.wait_for(run_a.result(), timeout=60)
        assert tool_results(result_a.messages) == ["v1 shipped a-first"]
        assert await pinned_build(client, run_a.run_id) == "v1"
        # A sub-agent started after the promote still starts on its parent's build.
        await run_l.confirm(pending_l.tool_call_id, approver="ann")
        result_l = await asyncio.wait_for(run_l.result(), timeout=60)
        assert tool_results(result_l.messages) == ["c turn 1 done"]
        child = f"{run_l.run_id}/r1"
        assert await pinned_build(client, child) == "v1"
        child_result = await asyncio.wait_for(get_run(client, child).result(), timeout=30)
        assert (child_result.exit_reason, child_result.tool_call_counts) == ("text", {"ship": 1})
        # The moved run's approved call runs v2's tool.
        await run_d.confirm(pending_d.tool_call_id, approver="ann")
        assert tool_results((await asyncio.wait_for(run_d.result(), timeout=60)).messages) == ["v2 shipped d-first"]

        (pending_b,) = await wait_pending(run_b)
        await run_b.confirm(pending_b.tool_call_id, approver="ann")
        assert tool_results((await asyncio.wait_for(run_b.result(), timeout=60)).messages) == ["v2 shipped b-first"]

        # At the next turn the session that moves continues as new on v2; the other stays on v1.
        for session, build in ((s1, "v2"), (s2, "v1")):
            receipt = await session.send_message("again")
            turn = await session.wait_turn(receipt.turn, timeout=timedelta(seconds=60))
            assert turn.last_message.text.endswith("turn 2 done")
            assert await pinned_build(client, session.run_id) == build
        for session, builds in ((s1, ("v1", "v2")), (s2, ("v1", "v1"))):
            await session.cancel("the test is over")
            ended = await asyncio.wait_for(session.result(), timeout=60)
            name = session.run_id.split("-")[0]
            assert tool_results(ended.messages) == [
                f"{b} shipped {name}-{n}" for b, n in zip(builds, ("first", "second"), strict=True)
            ]

        after = await eventually(lambda: deployment_status(client, deployment), until=lambda s: v1_of(s).drained)
        assert v1_of(after).open_runs == 0
        # Temporal's own drainage status follows (refreshed every 2 s on the dev stack).
        await eventually(
            lambda: deployment_status(client, deployment),
            until=lambda s: v1_of(s).temporal_status == "drained",
            timeout=60,
            interval=1,
        )
        print("agent deploy status, v1 drained:\n" + deploy_cli("status", "--deployment", deployment))
        as_json = json.loads(deploy_cli("status", "--deployment", deployment, "--json"))
        assert {v["build_id"]: v["drained"] for v in as_json["versions"]} == {"v2": False, "v1": True}
    finally:
        for process in (v1, v2):
            if process is not None:
                process.stop(timeout=15)
