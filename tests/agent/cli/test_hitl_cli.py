"""``agent pending / approve / reject / modify`` against the dev server (visibility included)."""

from __future__ import annotations

import argparse
import io

from agent.approvals.commands import add_commands
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending
from tests.support.polling import eventually


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="agent")
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


async def run_cli(client, capsys, *argv: str) -> tuple[int, str, str]:
    args = parse(*argv)
    code = await args.handler(args, client)
    out, err = capsys.readouterr()
    return code, out, err


async def pending_table_until(client, capsys, needle: str) -> str:
    """Visibility is eventually consistent: list until the run shows up."""

    async def listed() -> str:
        code, out, _ = await run_cli(client, capsys, "pending")
        assert code == 0
        return out

    return await eventually(listed, lambda out: needle in out, message=f"{needle} never listed by `agent pending`")


async def test_pending_lists_waiting_runs_and_approve_reject_modify(client, worker, scripted, model, run_id, capsys):
    scripted.script(
        model, [calls(call("add", a=1, b=2), call("add", a=3, b=4), call("echo", text="hi")), {"text": "ok"}]
    )
    handle = await start(hitl_agent(model), client, worker, run_id)
    first, second, third = await wait_pending(handle, count=3)

    table = await pending_table_until(client, capsys, run_id)
    header, *rows = table.splitlines()
    assert header.split()[:4] == ["RUN", "CALL", "TOOL", "ARGUMENTS"]
    ours = [row for row in rows if row.startswith(run_id)]
    expected = [
        (first.tool_call_id, "add", '{"a": 1, "b": 2}'),
        (second.tool_call_id, "add", '{"a": 3, "b": 4}'),
        (third.tool_call_id, "echo", '{"text": "hi"}'),
    ]
    assert len(ours) == 3
    for row, cells in zip(ours, expected, strict=True):
        assert row.split(None, 3)[1:3] == list(cells[:2]) and cells[2] in row

    code, out, _ = await run_cli(client, capsys, "approve", run_id, first.tool_call_id, "--approver", "ann")
    assert code == 0 and out.startswith(f"confirm: add call {first.tool_call_id} of run {run_id} by ann")
    code, out, _ = await run_cli(
        client, capsys, "modify", run_id, second.tool_call_id, "--params", '{"a": 30, "b": 40}'
    )
    assert code == 0 and out.startswith("modify: add")
    code, out, _ = await run_cli(client, capsys, "reject", run_id, third.tool_call_id, "--feedback", "no echo today")
    assert code == 0 and out.startswith("reject: echo")

    result = await handle.result()
    assert [m.tool_call_result.result for m in result.messages if m.tool_call_result][-2:] == ["3", "70"]
    assert "no echo today" in [m for m in result.messages if m.tool_call_result][0].tool_call_result.result

    async def listed() -> str:
        return (await run_cli(client, capsys, "pending"))[1]

    # the run no longer waits, so it leaves the listing
    await eventually(listed, lambda out: run_id not in out, message=f"{run_id} is still listed by `agent pending`")


async def test_cli_errors_are_clear(client, worker, scripted, model, run_id, capsys):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "ok"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)

    code, _, err = await run_cli(client, capsys, "approve", "no-such-run", "call_1")
    assert code == 1 and "No run 'no-such-run'" in err
    code, _, err = await run_cli(client, capsys, "approve", run_id, "call_999")
    assert code == 1 and "No pending confirmation for tool call 'call_999'" in err
    code, _, err = await run_cli(client, capsys, "modify", run_id, pending.tool_call_id, "--params", "{not json")
    assert code == 2 and "not valid JSON" in err
    code, _, err = await run_cli(
        client, capsys, "modify", run_id, pending.tool_call_id, "--params", '{"a": "x", "b": 1}'
    )
    assert code == 1 and "do not match its JSON schema" in err and "'x' is not of type 'integer'" in err

    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]
    code, _, _ = await run_cli(client, capsys, "approve", run_id, pending.tool_call_id)
    assert code == 0
    assert (await handle.result()).messages[-2].tool_call_result.result == "3"


async def test_interactive_modify_takes_the_complete_arguments_as_json(
    client, worker, scripted, model, run_id, capsys, monkeypatch
):
    """The person types the new arguments as one JSON object; a string argument gets the string,
    not the JSON text (typed field by field, it used to)."""
    scripted.script(model, [calls(call("echo", text="draft")), {"text": "ok"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    monkeypatch.setattr("sys.stdin", io.StringIO('m\n"just text"\n{"text": "final"}\n'))
    code, out, err = await run_cli(client, capsys, "approve", "--interactive", run_id, "--approver", "ann")
    assert code == 0, out + err
    assert "the new arguments must be a JSON object of the tool's arguments" in out  # asked again
    assert f"modify: echo call {pending.tool_call_id} of run {run_id} by ann" in out
    result = await handle.result()
    assert result.messages[-2].tool_call_result.result == "final"


async def test_approve_all_and_by_tool_validate_each_call_and_list_each_outcome(
    client, worker, scripted, model, run_id, capsys
):
    scripted.script(
        model, [calls(call("add", a=1, b=2), call("echo", text="hi"), call("add", a=3, b=4)), {"text": "ok"}]
    )
    hook = ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy())}, approvers={"echo": ["ops"]})
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    first, echo, second = await wait_pending(handle, count=3)

    code, _, err = await run_cli(client, capsys, "approve", run_id, first.tool_call_id, "--all")
    assert code == 2 and "--all and --tool take RUN only" in err
    code, out, _ = await run_cli(client, capsys, "approve", run_id, "--all", "--approver", "ann")
    lines = out.splitlines()
    assert code == 1  # one call was refused: each decision stood on its own
    assert lines[0] == f"{first.tool_call_id} add: confirm by ann"
    assert lines[1].startswith(f"{echo.tool_call_id} echo: refused: ") and "allowed approvers are ops" in lines[1]
    assert lines[2] == f"{second.tool_call_id} add: confirm by ann"
    assert lines[3] == f"2 of 3 approved in run {run_id}"
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [echo.tool_call_id]

    code, _, err = await run_cli(client, capsys, "approve", run_id, "--tool", "add")
    assert code == 1 and f"run {run_id} has no waiting call of add" in err
    code, out, _ = await run_cli(client, capsys, "approve", run_id, "--tool", "echo", "--approver", "ops")
    assert code == 0 and out.splitlines() == [
        f"{echo.tool_call_id} echo: confirm by ops",
        f"1 of 1 approved in run {run_id}",
    ]
    result = await handle.result()
    assert [m.tool_call_result.result for m in result.messages if m.tool_call_result] == ["3", "hi", "7"]
