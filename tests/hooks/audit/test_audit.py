"""The audit family: stores, records, AuditHook's two turns (driven in-process over hand-built
States), serialisation, the activity body, and one run on the real dev server with confirmations."""

from __future__ import annotations

import contextvars
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer

from agent import Agent, ChatMessage, State, ToolCall
from core.serialization import object_from_dict
from core.spec import AgentSpec
from hooks.audit import (
    FAMILY,
    AuditHook,
    AuditRecord,
    FileSystemAuditStore,
    S3AuditStore,
    WriteAuditRecordsInput,
    record_key,
    write_audit_records,
)
from hooks.audit import stores as audit_stores
from hooks.audit.hooks import LOCAL_RUN_ID, AuditLedger
from hooks.context import RunContext, set_current_run
from hooks.family import family_activities
from hooks.human_in_the_loop import CONFIRMATION_KEY, ToolExecutionDecision, arguments_sha256
from hooks.human_in_the_loop.hooks import apply_decisions, with_unique_ids
from hooks.tool_result_offloading import OFFLOADED_META_KEY
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, start, wait_pending
from workflows.agent_workflow import AgentWorkflow

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def read_records(root: Path, run_id: str, step: int) -> dict[str, dict[str, Any]]:
    """``{file name: record}`` of one step of one run in a FileSystemAuditStore."""
    directory = root / run_id / f"step-{step:06d}"
    return {path.name: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def decision_record(
    call_id: str, tool_name: str, action: str, approver: str | None, via: str = "update"
) -> dict[str, Any]:
    """A DecisionRecord as the confirmation strategy stores it (JSON form)."""
    return {
        "tool_call_id": call_id,
        "tool_name": tool_name,
        "action": action,
        "approver": approver,
        "decided_at": NOW.isoformat(),
        "arguments_sha256": "",
        "feedback": None,
        "via": via,
    }


# -- stores ------------------------------------------------------------------------------------


def test_filesystem_store_writes_one_file_per_key_under_the_encoded_run_id(tmp_path):
    store = FileSystemAuditStore(tmp_path)
    reference = store.write("run/1", "step-000000/c1.json", '{"a": 1}')

    assert Path(reference) == (tmp_path / "run%2F1" / "step-000000" / "c1.json").resolve()
    assert Path(reference).read_text() == '{"a": 1}'
    # A retried write of the same content is harmless; a later write replaces it atomically.
    assert store.write("run/1", "step-000000/c1.json", '{"a": 1}') == reference
    store.write("run/1", "step-000000/c1.json", '{"a": 2}')
    assert Path(reference).read_text() == '{"a": 2}'
    assert [p.name for p in Path(reference).parent.iterdir()] == ["c1.json"]  # no temporary files left


@pytest.mark.parametrize("key", ["", "/abs.json", "a/../b.json", "a//b.json", "a\\b.json", "./a.json"])
def test_filesystem_store_refuses_bad_keys(tmp_path, key):
    with pytest.raises(ValueError, match="key"):
        FileSystemAuditStore(tmp_path).write("run", key, "x")


@pytest.mark.parametrize("run_id", ["", ".", ".."])
def test_stores_refuse_run_ids_that_are_not_one_segment(tmp_path, run_id):
    with pytest.raises(ValueError):
        FileSystemAuditStore(tmp_path).write(run_id, "k.json", "x")
    with pytest.raises(ValueError):
        S3AuditStore("bucket").object_key(run_id, "k.json")


@pytest.mark.parametrize("root", ["", None, 3])
def test_filesystem_store_needs_a_root(root):
    with pytest.raises(ValueError, match="root"):
        FileSystemAuditStore(root)


@pytest.mark.parametrize(("bucket", "prefix"), [("", "audit"), ("a/b", "audit"), ("b", "x/../y"), ("b", 5)])
def test_s3_store_refuses_bad_constructor_input(bucket, prefix):
    with pytest.raises(ValueError):
        S3AuditStore(bucket, prefix=prefix)


def test_s3_store_puts_one_object_per_record(monkeypatch):
    puts: list[dict[str, Any]] = []

    class FakeClient:
        def put_object(self, **kwargs: Any) -> None:
            puts.append(kwargs)

    monkeypatch.setattr(audit_stores, "s3_client", FakeClient)
    store = S3AuditStore("audit-bucket", prefix="/team/audit/")

    reference = store.write("run 1", "step-000003/c1.json", "{}")

    assert reference == "s3://audit-bucket/team/audit/run%201/step-000003/c1.json"
    assert puts == [
        {
            "Bucket": "audit-bucket",
            "Key": "team/audit/run%201/step-000003/c1.json",
            "Body": b"{}",
            "ContentType": "application/json",
        }
    ]
    assert S3AuditStore("b", prefix="").object_key("r", "k.json") == "r/k.json"


def test_stores_round_trip_through_their_descriptors(tmp_path):
    fs = object_from_dict(FileSystemAuditStore(tmp_path).to_dict())
    assert isinstance(fs, FileSystemAuditStore) and fs.root == tmp_path
    s3 = object_from_dict(S3AuditStore("bkt", prefix="p/q").to_dict())
    assert isinstance(s3, S3AuditStore) and (s3.bucket, s3.prefix) == ("bkt", "p/q")
    assert S3AuditStore("bkt").to_dict()["init_parameters"] == {"bucket": "bkt", "prefix": "audit"}


# -- records and the activity ------------------------------------------------------------------


def test_record_key_pads_the_step_and_encodes_the_call_id():
    assert record_key(7, "call/1") == "step-000007/call%2F1.json"
    with pytest.raises(ValueError):
        record_key(-1, "c")


def record(run_id: str = "r1", call_id: str = "c1", step: int = 0) -> AuditRecord:
    return AuditRecord(
        run_id=run_id,
        step=step,
        tool_name="add",
        tool_call_id=call_id,
        arguments_sha256=arguments_sha256({"a": 1}),
        result_chars=1,
        recorded_at=NOW,
    )


async def test_activity_body_writes_each_record_as_json(tmp_path):
    request = WriteAuditRecordsInput(
        store=FileSystemAuditStore(tmp_path).to_dict(), run_id="r1", records=[record(), record(call_id="c2", step=1)]
    )
    references = await write_audit_records(request)

    assert [Path(r).relative_to(tmp_path.resolve()).as_posix() for r in references] == [
        "r1/step-000000/c1.json",
        "r1/step-000001/c2.json",
    ]
    assert AuditRecord.model_validate_json(Path(references[0]).read_text()) == record()


async def test_activity_refuses_what_retrying_cannot_fix(tmp_path):
    store = FileSystemAuditStore(tmp_path).to_dict()
    with pytest.raises(ApplicationError) as refused:
        await write_audit_records(WriteAuditRecordsInput(store=store, run_id="..", records=[record(run_id="..")]))
    assert refused.value.non_retryable
    with pytest.raises(ApplicationError, match="cannot be written under run"):
        await write_audit_records(WriteAuditRecordsInput(store=store, run_id="r2", records=[record(run_id="r1")]))


def test_family_declares_the_activity():
    assert FAMILY.name == "audit" and list(FAMILY.activities) == [write_audit_records]
    assert write_audit_records in family_activities()


# -- AuditHook, in-process -----------------------------------------------------------------------


def confirmed_step(step: int = 2) -> tuple[State, list[ToolCall]]:
    """A step as ConfirmationHook leaves it, before the tools run: the model asked for add (id
    c-add), echo (no id) and record (id c-rec); add was confirmed by ann, echo modified by the
    timeout, record rejected by bob."""
    asked = [
        ToolCall(tool_name="add", arguments={"a": 1, "b": 2}, id="c-add"),
        ToolCall(tool_name="echo", arguments={"text": "hi"}),
        ToolCall(tool_name="record", arguments={"label": "x"}, id="c-rec"),
    ]
    state = State(data={"messages": [ChatMessage.from_user("go"), ChatMessage.from_assistant(tool_calls=asked)]})
    state.set("step_count", step)
    return state, asked


def decide(state: State) -> list[ToolCall]:
    """Apply ann's confirm, the timeout's modify and bob's reject as ConfirmationHook would."""
    messages = state.data["messages"]
    bound = messages[-1].with_updates(tool_calls=with_unique_ids(messages[-1].tool_calls, state.data["step_count"]))
    add, echo, rec = bound.tool_calls
    decisions = [
        ToolExecutionDecision(
            tool_name="add",
            execute=True,
            tool_call_id=add.id,
            final_tool_params=add.arguments,
            record=decision_record(add.id, "add", "confirm", "ann"),
        ),
        ToolExecutionDecision(
            tool_name="echo",
            execute=True,
            tool_call_id=echo.id,
            final_tool_params={"text": "bye"},
            record=decision_record(echo.id, "echo", "modify", None, via="timeout"),
        ),
        ToolExecutionDecision(
            tool_name="record",
            execute=False,
            tool_call_id=rec.id,
            record=decision_record(rec.id, "record", "reject", "bob"),
        ),
    ]
    replacement = apply_decisions(bound, decisions)
    state.set("messages", messages[:-1] + replacement, handler_override=lambda _, new: new)
    return replacement[-1].tool_calls  # the calls that run


def run_tools(state: State, running: list[ToolCall]) -> None:
    """The run loop's tool turn: add succeeds (offloaded by the tool activity), echo fails."""
    add, echo = running
    state.set(
        "messages",
        [
            ChatMessage.from_tool("ptr to 3", origin=add, meta={OFFLOADED_META_KEY: ["/store/add.txt"]}),
            ChatMessage.from_tool("echo broke", origin=echo, error=True),
        ],
    )


def test_hook_records_each_call_with_its_decision_approver_and_result(tmp_path):
    hook = AuditHook(FileSystemAuditStore(tmp_path))
    state, asked = confirmed_step(step=2)

    hook.run(state)  # before_tool, ahead of the confirmation hook: notes the calls as asked
    assert not (tmp_path / LOCAL_RUN_ID).exists()
    running = decide(state)
    run_tools(state, running)
    hook.run(state)  # after_tool

    records = read_records(tmp_path, LOCAL_RUN_ID, 2)
    assert sorted(records) == ["c-add.json", "c-rec.json", "hitl-s2-c1.json"]
    add, echo, rec = records["c-add.json"], records["hitl-s2-c1.json"], records["c-rec.json"]
    assert (add["decision"], add["approver"], add["error"], add["result_chars"], add["result_pointer"]) == (
        "confirm",
        "ann",
        False,
        len("ptr to 3"),
        "/store/add.txt",
    )
    assert add["arguments_sha256"] == arguments_sha256({"a": 1, "b": 2})
    assert (echo["decision"], echo["approver"], echo["error"], echo["result_pointer"]) == ("modify", None, True, None)
    # the timeout's decision is recorded as a timeout, a person's as theirs
    assert (echo["decision_via"], add["decision_via"], rec["decision_via"]) == ("timeout", "update", "update")
    assert echo["arguments_sha256"] == arguments_sha256({"text": "bye"})  # the arguments it ran with
    assert (rec["decision"], rec["approver"], rec["error"], rec["tool_name"]) == ("reject", "bob", True, "record")
    assert rec["result_chars"] == len("Tool execution for 'record' was rejected by the user.")
    assert {r["run_id"] for r in records.values()} == {LOCAL_RUN_ID} and {r["step"] for r in records.values()} == {2}


def test_hook_without_confirmation_records_no_decision_and_names_id_less_calls(tmp_path):
    hook = AuditHook(FileSystemAuditStore(tmp_path))
    asked = [ToolCall(tool_name="add", arguments={"a": 1, "b": 1}), ToolCall(tool_name="add", arguments={"a": 2})]
    state = State(data={"messages": [ChatMessage.from_user("go"), ChatMessage.from_assistant(tool_calls=asked)]})
    state.set("step_count", 0)

    hook.run(state)
    state.set("messages", [ChatMessage.from_tool("2", origin=asked[0]), ChatMessage.from_tool("bad", asked[1], True)])
    hook.run(state)

    records = read_records(tmp_path, LOCAL_RUN_ID, 0)
    assert sorted(records) == ["s0-c0.json", "s0-c1.json"]
    assert [(r["decision"], r["approver"], r["error"]) for r in records.values()] == [
        (None, None, False),
        (None, None, True),
    ]


def test_a_call_nothing_answered_still_gets_a_record(tmp_path):
    hook = AuditHook(FileSystemAuditStore(tmp_path))
    asked = [ToolCall(tool_name="add", arguments={}, id="a"), ToolCall(tool_name="echo", arguments={}, id="b")]
    state = State(data={"messages": [ChatMessage.from_assistant(tool_calls=asked)], "step_count": 1})

    hook.run(state)
    # A before_tool hook dropped call b without answering it; only a ran.
    state.set("messages", [ChatMessage.from_assistant(tool_calls=asked[:1])], handler_override=lambda _, new: new)
    state.set("messages", [ChatMessage.from_tool("ok", origin=asked[0])])
    hook.run(state)

    records = read_records(tmp_path, LOCAL_RUN_ID, 1)
    assert (records["a.json"]["error"], records["a.json"]["result_chars"]) == (False, 2)
    assert (records["b.json"]["error"], records["b.json"]["result_chars"], records["b.json"]["tool_name"]) == (
        True,
        0,
        "echo",
    )


def test_hook_at_after_tool_alone_records_the_last_calls_results(tmp_path):
    hook = AuditHook(FileSystemAuditStore(tmp_path))
    earlier = ToolCall(tool_name="add", arguments={}, id="old")
    current = ToolCall(tool_name="echo", arguments={"text": "x"}, id="new")
    state = State(
        data={
            "messages": [
                ChatMessage.from_assistant(tool_calls=[earlier]),
                ChatMessage.from_tool("1", origin=earlier),
                ChatMessage.from_assistant(tool_calls=[current]),
                ChatMessage.from_tool("x", origin=current),
            ],
            "step_count": 4,
        }
    )
    hook.run(state)
    assert sorted(read_records(tmp_path, LOCAL_RUN_ID, 4)) == ["new.json"]


def test_repeated_call_ids_get_distinct_records(tmp_path):
    hook = AuditHook(FileSystemAuditStore(tmp_path))
    asked = [ToolCall(tool_name="add", arguments={"a": i}, id="dup") for i in range(2)]
    state = State(data={"messages": [ChatMessage.from_assistant(tool_calls=asked)], "step_count": 0})
    hook.run(state)
    state.set("messages", [ChatMessage.from_tool(str(i), origin=c) for i, c in enumerate(asked)])
    hook.run(state)
    records = read_records(tmp_path, LOCAL_RUN_ID, 0)
    assert sorted(records) == ["dup-1.json", "dup.json"]
    assert records["dup-1.json"]["arguments_sha256"] == arguments_sha256({"a": 1})


def test_separate_instances_share_the_note_through_the_run_extension(tmp_path):
    """As on a worker: the before_tool and after_tool hooks are two objects, the phase says which
    turn it is, and the run's id names the records."""
    store = FileSystemAuditStore(tmp_path)
    spec = AgentSpec.from_dict(
        Agent(
            model="m", tools=[t.add], hooks={"before_tool": [AuditHook(store)], "after_tool": [AuditHook(store)]}
        ).to_dict()
    )
    before, after = spec.hooks["before_tool"][0], spec.hooks["after_tool"][0]
    assert before is not after
    asked = ToolCall(tool_name="add", arguments={"a": 1}, id="c1")
    state = State(data={"messages": [ChatMessage.from_assistant(tool_calls=[asked])], "step_count": 0})

    def drive() -> RunContext:
        context = RunContext(run_id="wf-1", agent=spec, state=state)
        set_current_run(context)
        context.phase = "before_tool"
        before.run(state)
        # All calls answered by a before_tool hook: the messages alone would not say which turn it is.
        state.set("messages", [ChatMessage.from_tool("no", origin=asked, error=True)])
        context.phase = "after_tool"
        after.run(state)
        return context

    # A copy of the context, so the installed run does not leak into other tests.
    context = contextvars.copy_context().run(drive)
    assert isinstance(context.slot(AuditLedger), AuditLedger)
    records = read_records(tmp_path, "wf-1", 0)
    assert list(records) == ["c1.json"] and records["c1.json"]["run_id"] == "wf-1"


def test_hook_round_trips_and_refuses_other_points_and_bad_stores(tmp_path):
    for store in (FileSystemAuditStore(tmp_path), S3AuditStore("bkt", prefix="a")):
        hook = AuditHook(store)
        rebuilt = object_from_dict(hook.to_dict())
        assert isinstance(rebuilt, AuditHook) and rebuilt.to_dict() == hook.to_dict()
        assert type(rebuilt.store) is type(store)
    assert AuditHook(FileSystemAuditStore(tmp_path)).to_dict()["type"] == "hooks.audit.hooks.AuditHook"
    with pytest.raises(ValueError, match="only supports"):
        Agent(model="m", tools=[t.add], hooks={"before_llm": [AuditHook(FileSystemAuditStore(tmp_path))]})
    with pytest.raises(ValueError, match="write"):
        AuditHook(object())


# -- on the real dev server --------------------------------------------------------------------


async def test_run_with_confirmations_writes_one_record_per_call(client, worker, scripted, model, run_id, tmp_path):
    scripted.script(
        model, [calls(call("add", id="c-add", a=1, b=2), call("echo", id="c-echo", text="hi")), {"text": "done"}]
    )
    audit = AuditHook(FileSystemAuditStore(tmp_path))
    agent = Agent(
        model=model,
        tools=[t.add, t.echo],
        hooks={"before_tool": [audit, ask_all()], "after_tool": [audit]},
    )
    handle = await start(agent, client, worker, run_id)
    pending = {p.tool_call_id: p for p in await wait_pending(handle, count=2)}
    assert set(pending) == {"c-add", "c-echo"}

    await handle.confirm("c-add", approver="ann")
    await handle.reject("c-echo", feedback="not now", approver="bob")
    result = await handle.result()

    assert result.messages[-1].text == "done"
    records = read_records(tmp_path, run_id, 0)
    assert sorted(records) == ["c-add.json", "c-echo.json"]
    add, echo = (AuditRecord.model_validate(records[name]) for name in ("c-add.json", "c-echo.json"))
    assert (add.decision, add.approver, add.error, add.result_chars, add.tool_name) == (
        "confirm",
        "ann",
        False,
        1,
        "add",
    )
    assert add.arguments_sha256 == arguments_sha256({"a": 1, "b": 2})
    assert (echo.decision, echo.approver, echo.error, echo.tool_name) == ("reject", "bob", True, "echo")
    assert {add.run_id, echo.run_id} == {run_id} and add.step == echo.step == 0
    assert add.result_pointer is None and add.recorded_at.tzinfo is not None
    # The records agree with what the confirmation hook kept in the run's result.
    confirmed = next(m for m in result.messages if m.tool_calls and m.tool_calls[0].id == "c-add")
    assert confirmed.tool_calls[0].extra[CONFIRMATION_KEY]["approver"] == add.approver
    # One write_audit_records activity for the step's two calls, and the run replays deterministically.
    history = await handle.workflow.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled.count("write_audit_records") == 1
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    await replayer.replay_workflow(history, raise_on_replay_failure=True)
