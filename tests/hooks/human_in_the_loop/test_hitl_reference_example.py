"""The reference's human-in-the-loop example (Haystack's ``ConfirmationHook`` docs) on the durable
agent, on the real dev server: the same hook construction (``ConfirmationHook`` with
``BlockingConfirmationStrategy``, the policies and the console UIs) registered on ``agent.Agent``,
and the person answering through the UI the run names, by ``agent approve --interactive``.

What differs from the reference, and why (durability), is marked ``# differs:`` where it happens:

- ``Agent(model=...)`` instead of ``Agent(chat_generator=OpenAIChatGenerator())``: the model call
  is an activity on a worker (here the scripted OpenAI-compatible server the tests use), so the
  spec names the model instead of holding a client;
- the tool function lives on a worker (``create_worker(tools=[delete_file, ...])``): a run's spec
  carries tools by name and JSON schema only;
- ``agent.start(...)`` then ``handle.result()`` instead of ``agent.run(...)``: the run is a
  workflow; it waits for the person durably (no process is held) and the person answers from
  another process, ``agent approve --interactive``, which asks through the UI the run's strategy
  names. That is where the reference's prompt appears, not in the agent's process.
"""

from __future__ import annotations

import io
import re

import pytest

from agent import Agent, ChatMessage
from agent.approvals import interactive as approval_interactive
from agent.approvals.waiting import WaitingRuns, list_waiting_runs
from agent.cli import build_parser
from core.tools import tool
from hooks.human_in_the_loop import (
    CONFIRMATION_KEY,
    AlwaysAskPolicy,
    AskOncePolicy,
    BlockingConfirmationStrategy,
    ConfirmationHook,
    NeverAskPolicy,
    RichConsoleUI,
    SimpleConsoleUI,
)
from tests import tools as t
from tests.support.hitl_helpers import call, calls, wait_pending
from tests.support.polling import eventually
from worker import create_worker


@tool
def delete_file(path: str) -> str:
    """Delete the file at the given path."""
    return f"Deleted {path}."  # as in the reference: it only says so


#: differs: the reference's tool runs in the agent's process; here a worker holds it.
REFERENCE_QUEUE = "hitl-reference-example"


@pytest.fixture(scope="module")
async def reference_worker(client):
    """A worker with the reference's ``delete_file`` (and the tests' ``add``) beside the session's
    ``worker`` fixture, whose tools are fixed in ``tests/tools.py``."""
    async with create_worker(client, tools=[delete_file, t.add], task_queue=REFERENCE_QUEUE):
        yield REFERENCE_QUEUE


async def start(agent: Agent, client, queue: str, run_id: str):
    # differs: agent.run(messages=[...]) in the reference; a durable run is started, then awaited.
    return await agent.start(client, [ChatMessage.from_user("tidy up")], run_id=run_id, task_queue=queue)


async def approve_interactively(client, capsys, monkeypatch, typed: str, *argv: str) -> tuple[int, str]:
    """``agent approve --interactive ...`` through the real CLI parser, the person typing ``typed``."""
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    args = build_parser().parse_args(["approve", "--interactive", "--approver", "ann", *argv])
    code = await args.handler(args, client)
    out, err = capsys.readouterr()
    return code, out + err


def tool_results(result) -> dict[str, tuple[str, bool]]:
    return {
        m.tool_call_result.origin.id: (m.tool_call_result.result, m.tool_call_result.error)
        for m in result.messages
        if m.tool_call_result is not None
    }


async def test_first_example_never_ask_runs_unasked(client, reference_worker, scripted, model, run_id):
    hook = ConfirmationHook(
        confirmation_strategies={
            "delete_file": BlockingConfirmationStrategy(
                confirmation_policy=NeverAskPolicy(), confirmation_ui=SimpleConsoleUI()
            )
        }
    )
    agent = Agent(model=model, tools=[delete_file], hooks={"before_tool": [hook]})  # differs: model=
    scripted.script(model, [calls(call("delete_file", id="c0", path="/tmp/old.log")), {"text": "done"}])
    handle = await start(agent, client, reference_worker, run_id)
    result = await handle.result()
    assert tool_results(result) == {"c0": ("Deleted /tmp/old.log.", False)}
    assert not await handle.pending_confirmations()


async def test_override_example_rich_ui_rejects_through_agent_approve(
    client, reference_worker, scripted, model, run_id, capsys, monkeypatch
):
    hook = ConfirmationHook(
        confirmation_strategies={
            "delete_file": BlockingConfirmationStrategy(
                confirmation_policy=AlwaysAskPolicy(), confirmation_ui=RichConsoleUI()
            ),
            "*": BlockingConfirmationStrategy(confirmation_policy=NeverAskPolicy(), confirmation_ui=SimpleConsoleUI()),
        }
    )
    agent = Agent(model=model, tools=[delete_file, t.add], hooks={"before_tool": [hook]})  # differs: model=
    scripted.script(
        model,
        [calls(call("delete_file", id="c0", path="/tmp/report.txt"), call("add", id="c1", a=2, b=3)), {"text": "ok"}],
    )
    handle = await start(agent, client, reference_worker, run_id)
    (pending,) = await wait_pending(handle)  # "*" is NeverAsk: only delete_file waits
    assert pending.tool_call_id == "c0"
    assert pending.confirmation_ui == {
        "type": "hooks.human_in_the_loop.user_interfaces.RichConsoleUI",
        "init_parameters": {"console": None},
    }

    # No RUN: every waiting run (the listing is narrowed to this test's run, since other tests'
    # runs may be waiting in the same namespace; visibility may need a moment to list it).
    async def this_run_only(client, **kwargs) -> WaitingRuns:
        async def mine() -> list:
            return [run for run in (await list_waiting_runs(client, **kwargs)).runs if run.run_id == run_id]

        return WaitingRuns(await eventually(mine, message=f"{run_id} never listed as waiting"))

    monkeypatch.setattr(approval_interactive, "list_waiting_runs", this_run_only)
    code, out = await approve_interactively(client, capsys, monkeypatch, "n\nkeep the report\n")
    assert code == 0, out
    assert "/tmp/report.txt" in out and "Delete the file at the given path." in out  # rich's panel
    assert f"reject: delete_file call c0 of run {run_id} by ann" in out

    result = await handle.result()
    assert tool_results(result) == {
        "c0": ("Tool execution for 'delete_file' was rejected by the user. With user feedback: keep the report", True),
        "c1": ("5", False),
    }
    rejection = next(m for m in result.messages if m.tool_call_result and m.tool_call_result.origin.id == "c0")
    assert rejection.meta[CONFIRMATION_KEY]["approver"] == "ann"


async def test_ask_once_and_a_refused_modification_through_simple_console_ui(
    client, reference_worker, scripted, model, run_id, capsys, monkeypatch
):
    hook = ConfirmationHook(
        confirmation_strategies={
            "*": BlockingConfirmationStrategy(confirmation_policy=AskOncePolicy(), confirmation_ui=SimpleConsoleUI())
        }
    )
    agent = Agent(model=model, tools=[delete_file, t.add], hooks={"before_tool": [hook]})  # differs: model=
    scripted.script(
        model,
        [
            calls(
                call("add", id="c0", a=1, b=2),
                call("add", id="c1", a=1, b=2),  # identical to c0: asked only if c0 is not confirmed
                call("delete_file", id="c2", path="/tmp/a"),
                call("add", id="c3", a=2, b=2),
            ),
            calls(call("add", id="d0", a=1, b=2)),  # confirmed before: runs unasked
            {"text": "done"},
        ],
    )
    handle = await start(agent, client, reference_worker, run_id)
    first = await wait_pending(handle, count=2)
    assert [p.tool_call_id for p in first] == ["c0", "c2"]  # c1 and c3 wait for c0 (AskOnce: tool order)
    assert all(p.confirmation_ui["type"].endswith(".SimpleConsoleUI") for p in first)

    code, out, _ = await run(client, capsys, "approve", run_id)
    assert code == 2 and "needs RUN and CALL" in out

    typed = "".join(
        [
            "y\n",  # c0: confirm (so the identical c1 runs unasked, and c3 is asked next)
            'm\n{"path": "/tmp/b"}\n',  # c2: modify: the complete new arguments as JSON
            'm\n{"a": "two", "b": 2}\n',  # c3: a = "two" fails the schema: the run refuses, asked again
            'm\n[7]\n{"a": 7, "b": 2}\n',  # c3: not an object: asked again; then a = 7, b kept
        ]
    )
    code, out = await approve_interactively(client, capsys, monkeypatch, typed, run_id)
    assert code == 0, out
    assert out.count("== add wants to run ==") == 3 and out.count("== delete_file wants to run ==") == 1
    assert "refused:" in out and "a: 'two' is not of type 'integer'" in out and "Asking again." in out
    assert re.findall(rf"(\w+: \w+) call (\w+) of run {run_id} by ann", out) == [
        ("confirm: add", "c0"),
        ("modify: delete_file", "c2"),
        ("modify: add", "c3"),
    ]

    result = await handle.result()
    assert tool_results(result) == {
        "c0": ("3", False),
        "c1": ("3", False),
        "c2": ("Deleted /tmp/b.", False),
        "c3": ("9", False),
        "d0": ("3", False),
    }
    assert [m.text for m in result.messages if m.role.value == "user"][1:] == [
        "The parameters for tool 'delete_file' were updated by the user to:\n{'path': '/tmp/b'}",
        "The parameters for tool 'add' were updated by the user to:\n{'a': 7, 'b': 2}",
    ]
    records = {c.id: (c.extra or {}).get(CONFIRMATION_KEY) for m in result.messages for c in m.tool_calls}
    assert {i: r and (r["action"], r["approver"]) for i, r in records.items()} == {
        "c0": ("confirm", "ann"),
        "c1": None,  # not asked: AskOnce remembered c0's confirmation
        "c2": ("modify", "ann"),
        "c3": ("modify", "ann"),
        "d0": None,
    }


async def run(client, capsys, *argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    code = await args.handler(args, client)
    out, err = capsys.readouterr()
    return code, out + err, err
