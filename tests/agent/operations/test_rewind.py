"""``agent rewind``: Temporal's reset to the start of a step, on the real dev server with the
scripted model. The run goes on from the step with the conversation as it was; tool calls after
it run again (their old results are not reused); steps out of the current run are refused."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from agent import Agent, ChatMessage, get_run
from agent.inbox import IdentityConfig, create_app
from agent.operations.replay_check import replayer
from agent.operations.rewind import RewindRefused, RunSteps, StepStart, read_steps, rewind, rewind_point
from agent.run_history import is_reset_event, read_history
from agent.watch import PlainRenderer, RunWatcher
from tests import tools as t
from tests.agent.cli.test_cli import agent_cli
from tests.support.hitl_helpers import ask_all, wait_pending

CONTINUE_EVERY = 100  # events: the smallest threshold an Agent accepts (a continue every ~8 steps)


def record_step(label: str) -> dict:
    return {"tool_calls": [{"name": "record", "arguments": {"label": label}}]}


def labels(path: Path) -> list[str]:
    return [json.loads(line)["label"] for line in path.read_text().splitlines()] if path.exists() else []


async def test_rewind_a_completed_run_reruns_the_step_and_the_tools_after_it(
    client, worker, scripted, model, run_id, tmp_path, monkeypatch
):
    effects = tmp_path / "effects.jsonl"
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(effects))  # the worker runs in this process
    scripted.script(
        model,
        [
            record_step("a"),
            record_step("b"),
            {"text": "first answer"},
            record_step("b-again"),
            {"text": "second answer"},
        ],
    )
    agent = Agent(model=model, tools=[t.record])
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    first = await handle.result()
    assert first.last_message.text.endswith("first answer") and labels(effects) == ["a", "b"]
    before = await read_steps(client, run_id)
    assert [s.step for s in before.steps] == [0, 1, 2]

    done = await rewind(client, run_id, 1, "the second step misread the ticket")
    assert (done.step, done.status_before) == (1, "COMPLETED")
    assert done.temporal_run_id != done.from_temporal_run_id

    second = await get_run(client, run_id).result()
    assert second.last_message.text.endswith("second answer")
    # step 0's tool result was kept, step 1's call ran again (a new call), nothing else ran twice
    assert labels(effects) == ["a", "b", "b-again"]
    results = [m.tool_call_result.result for m in second.messages if m.tool_call_result is not None]
    assert results == ["recorded a", "recorded b-again"]
    assert second.step_count == 3

    # the new run's history says it was rewound, and why
    items = [item async for item in read_history(handle.workflow, client.data_converter)]
    rewound = [item for item in items if item.kind == "run_rewound"]
    assert len(rewound) == 1
    assert rewound[0].message == "rewind to step 1: the second step misread the ticket"
    assert rewound[0].base_run_id == done.from_temporal_run_id
    health = await handle.health()  # the reset's task failure is not a stuck run
    assert health.status == "COMPLETED" and health.failing_workflow_task is None

    # the inbox's run page says so too
    app = create_app(client, identity=IdentityConfig(header="X-Forwarded-User"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inbox.test") as inbox:
        page = await inbox.get(f"/runs/{run_id}", headers={"X-Forwarded-User": "ann"})
    assert page.status_code == 200
    assert 'data-testid="rewound"' in page.text
    assert "rewind to step 1: the second step misread the ticket" in page.text


async def test_rewind_a_parked_run_asks_again_and_reapplies_no_decision(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "one"}}]},
            {"tool_calls": [{"name": "echo", "arguments": {"text": "two"}}]},
            {"tool_calls": [{"name": "echo", "arguments": {"text": "two, again"}}]},
            {"text": "done"},
        ],
    )
    agent = Agent(model=model, tools=[t.echo], hooks={"before_tool": [ask_all()]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    [first] = await wait_pending(handle)
    await handle.confirm(first.tool_call_id, approver="ann")
    [second] = await wait_pending(handle, exclude={first.tool_call_id})
    assert second.tool_params == {"text": "two"}

    # a watcher following the run through the rewind shows it, and what came after
    out = io.StringIO()
    watcher = RunWatcher(handle, PlainRenderer(out), interval=0.05)
    await watcher._read_history()

    await handle.rewind(1, "ask about step 1 again")  # the handle's method: the same rewind
    [again] = await wait_pending(handle, exclude={first.tool_call_id, second.tool_call_id})
    assert again.tool_params == {"text": "two, again"}  # step 1's model call was made anew
    await handle.confirm(again.tool_call_id, approver="ann")
    result = await handle.result()
    assert [m.tool_call_result.result for m in result.messages if m.tool_call_result] == ["one", "two, again"]

    await watcher._read_history()
    lines = out.getvalue().splitlines()
    rewound = [line for line in lines if line.startswith("  run rewound")]
    assert len(rewound) == 1 and rewound[0].endswith("): rewind to step 1: ask about step 1 again"), lines
    after = lines[lines.index(rewound[0]) :]
    assert any("two, again" in line for line in after)
    assert sum("-> one" in line for line in lines) == 1  # the copied steps are not shown twice
    # after the rewind the model calls are counted from the reset point: step 1's call is call 2 again
    assert [line for line in after if "model call" in line] == [
        "  model call 2 asked for: echo",
        "  model call 3 answered: done",
    ], lines


async def test_rewind_refuses_steps_out_of_the_current_run(client, worker, scripted, model, run_id):
    steps = 12
    scripted.script(model, [*(record_step(f"s{i}") for i in range(steps)), {"text": "done"}])
    agent = Agent(model=model, tools=[t.record], continue_as_new_after_events=CONTINUE_EVERY)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await handle.result()
    assert result.continuations >= 1
    current = await read_steps(client, run_id)
    first, last = current.steps[0].step, current.steps[-1].step
    assert first > 0 and last == steps

    with pytest.raises(
        RewindRefused, match=rf"step 0 of run {run_id} is out of reach: it ran before the run continued as new"
    ):
        await rewind(client, run_id, 0, "too far back")
    with pytest.raises(
        RewindRefused,
        match=rf"has not reached step 99 \(its last step is {last}\); it can rewind to steps {first} to {last}",
    ):
        await rewind(client, run_id, 99, "too far ahead")
    with pytest.raises(ValueError, match="--reason is required"):
        await rewind(client, run_id, first, "  ")

    # the CLI says the same, exit 1; a step in reach is rewound
    refused = await agent_cli("rewind", run_id, "--to-step", "0", "--reason", "too far back")
    assert refused.returncode == 1 and "rewind refused" in refused.stderr and "continued as new" in refused.stderr
    scripted.script(model, [{"text": "redone"}])
    done = await agent_cli("rewind", run_id, "--to-step", str(last), "--reason", "redo the answer")
    assert done.returncode == 0, done.stderr
    assert f"rewound run {run_id} to the start of step {last} (it was completed; it is open again)" in done.stdout
    assert (await get_run(client, run_id).result()).last_message.text.endswith("redone")


async def test_rewind_refuses_a_run_without_steps_and_an_unknown_run(client, scripted, model, run_id):
    agent = Agent(model=model, tools=[t.echo])
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue="no-worker-polls-this")
    with pytest.raises(RewindRefused, match="has made no model call in its current run"):
        await rewind(client, run_id, 0, "nothing yet")
    missing = await agent_cli("rewind", "no-such-run-xyz", "--to-step", "0", "--reason", "x")
    assert missing.returncode == 1 and "no such run" in missing.stderr
    await client.get_workflow_handle(run_id).terminate("test over")


# -- which steps are in reach, without a server ------------------------------------------------


def session_steps(**kwargs) -> RunSteps:
    """A session's current run: continued as new in turn 2 at step 3; turn 2 steps 3-4, turn 3 steps 0-1."""
    steps = [StepStart(3, 2, 40, None), StepStart(4, 2, 52, None), StepStart(0, 3, 70, None), StepStart(1, 3, 81, None)]
    defaults = dict(
        run_id="s-1",
        temporal_run_id="r2",
        status="RUNNING",
        steps=steps,
        continuation=1,
        continued_at=(2, 3),
        session=True,
    )
    return RunSteps(**{**defaults, **kwargs})


def test_the_latest_turn_is_the_default_and_a_step_maps_to_its_workflow_task():
    assert rewind_point(session_steps(), 1).reset_event_id == 81
    assert rewind_point(session_steps(), 4, turn=2).reset_event_id == 52


@pytest.mark.parametrize(
    ("step", "turn", "refusal"),
    [
        (
            2,
            2,
            r"step 2 of turn 2 of run s-1 is out of reach: it ran before the run continued as new \(it continued "
            r"as new \(continuation 1\) at step 3 of turn 2\).*it can rewind to steps 3 to 4",
        ),
        (
            0,
            1,
            r"turn 1 of run s-1 is in an earlier Temporal run: it continued as new \(continuation 1\) at step 3 of "
            r"turn 2, and Temporal's reset reaches only the current run \(turns 2 to 3\)",
        ),
        (5, None, r"has not reached step 5 of turn 3 \(its last step is 1\); it can rewind to steps 0 to 1"),
        (0, 9, r"run s-1 has no turn 9 in its current run \(turns 2 to 3\)"),
        (-1, None, r"--to-step must be 0 or more"),
    ],
)
def test_steps_out_of_the_current_run_are_refused_saying_which_are_in_reach(step, turn, refusal):
    with pytest.raises(RewindRefused, match=refusal):
        rewind_point(session_steps(), step, turn)


def test_a_run_past_its_execution_timeout_is_refused():
    with pytest.raises(RewindRefused, match="its execution timeout has passed; a reset run keeps that timeout"):
        rewind_point(session_steps(status="TIMED_OUT", expired=True), 0)


# -- a rewound run's history replays (a worker replays it after an eviction) --------------------

REWOUND_HISTORY = Path(__file__).resolve().parents[2] / "histories" / "path_rewound.json"


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
async def test_record_rewound_history(client, worker, scripted, model, run_id):
    scripted.script(model, [record_step("a"), {"text": "first"}, record_step("a-again"), {"text": "second"}])
    handle = await Agent(model=model, tools=[t.record]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    await handle.result()
    await handle.rewind(0, "record a rewound history")
    await handle.result()
    REWOUND_HISTORY.write_text((await handle.workflow.fetch_history()).to_json())


async def test_replay_rewound_history():
    history = WorkflowHistory.from_json("path-rewound", REWOUND_HISTORY.read_text())
    assert any(is_reset_event(event) for event in history.events)
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None
