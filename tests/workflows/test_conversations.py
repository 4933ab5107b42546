"""Conversations on the real dev server: messages into running and waiting runs (order, holding
while a confirmation waits), the validator's refusals, de-duplication, the Signal path, sessions
of several turns, the idle timeout, continue-as-new across turns, and start-or-send."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType

from agent import Agent, ChatMessage
from agent.conversation import ConversationError, MessageRefusedError, TurnTimeoutError
from bench.cancel_support import gate
from core.payloads import UserMessage
from core.wire import USER_MESSAGE_SIGNAL, WAITING_FOR_USER_MEMO_KEY
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, signals_processed, wait_pending
from tests.support.polling import eventually


def sent_roles_and_texts(request: dict) -> list[tuple[str, str | None]]:
    """What the model received: (role, content) of each message of one request."""
    return [(m["role"], m.get("content")) for m in request["messages"]]


async def gate_started(directory, name: str) -> None:
    await eventually(lambda: (directory / f"{name}.started").exists(), message=f"gate {name} never started")


@pytest.fixture
def gates(tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_DIR", str(tmp_path))
    return tmp_path


# -- delivery order -----------------------------------------------------------------------------


async def test_two_messages_during_a_tool_call_arrive_in_order_before_the_next_model_call(
    client, worker, scripted, model, run_id, gates
):
    scripted.script(model, [calls(call("gate", id="g1", label="g1")), {"text": "got both"}])
    agent = Agent(model=model, tools=[gate])
    handle = await agent.start(client, [ChatMessage.from_user("start")], run_id=run_id, task_queue=worker)
    await gate_started(gates, "g1")

    first = await handle.send_message("first", sender="ann")
    second = await handle.send_message("second", sender="bob")
    (gates / "g1.open").touch()
    result = await handle.result()

    assert first.turn == second.turn == 1 and first.message_id != second.message_id
    requests = scripted.requests(model)
    assert len(requests) == 2
    assert [r for r, _ in sent_roles_and_texts(requests[1])] == ["user", "assistant", "tool", "user", "user"]
    assert sent_roles_and_texts(requests[1])[-2:] == [("user", "first"), ("user", "second")]
    assert requests[1]["messages"][2]["content"] == "gate g1 passed"  # the result right after its call
    assert [m.text for m in result.messages[3:5]] == ["first", "second"]
    assert result.messages[3].meta == {"sender": "ann", "message_id": first.message_id}
    assert result.exit_reason == "text" and result.turn == 1


async def test_a_message_sent_while_a_confirmation_waits_is_held_until_the_steps_tools_are_done(
    client, worker, scripted, model, run_id
):
    scripted.script(model, [calls(call("add", id="a1", a=1, b=2)), {"text": "3, and noted"}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [ask_all()]})
    handle = await agent.start(client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=worker)
    (pending,) = await wait_pending(handle)

    receipt = await handle.send_message("also, hurry")
    await handle.confirm(pending.tool_call_id, approver="ann")
    result = await handle.result()

    assert receipt.turn == 1
    requests = scripted.requests(model)
    assert len(requests) == 2
    assert sent_roles_and_texts(requests[1])[1:] == [
        ("assistant", None),
        ("tool", "3"),
        ("user", "also, hurry"),
    ]
    assert [m.role.value for m in result.messages] == ["user", "assistant", "tool", "user", "assistant"]


# -- refusals, de-duplication, the Signal --------------------------------------------------------


async def test_the_validator_refuses_bad_messages_before_history(client, worker, scripted, model, run_id, gates):
    scripted.script(model, [calls(call("gate", id="g1", label="v1")), {"text": "done"}])
    agent = Agent(model=model, tools=[gate], participants=["ann", "bob"])
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    await gate_started(gates, "v1")
    before = len((await handle.workflow.fetch_history()).events)

    with pytest.raises(MessageRefusedError, match="The message text is empty"):
        await handle.send_message("   ", sender="ann")
    with pytest.raises(MessageRefusedError, match="32,001 characters; the limit is 32,000"):
        await handle.send_message("x" * 32_001, sender="ann")
    with pytest.raises(MessageRefusedError, match="Sender 'eve' may not write to this run: participants are ann, bob"):
        await handle.send_message("hi", sender="eve")
    with pytest.raises(MessageRefusedError, match="A message without a sender may not write"):
        await handle.send_message("hi")
    with pytest.raises(MessageRefusedError) as refused:  # checked first: the refusal does not echo it
        await handle.send_message("hi", sender="a" * 200_000)
    assert str(refused.value).endswith("The sender is 200,000 characters; the limit is 200.")
    with pytest.raises(MessageRefusedError, match="The message_id is 201 characters; the limit is 200"):
        await handle.send_message("hi", sender="ann", message_id="m" * 201)
    with pytest.raises(ConversationError, match="The cancel reason is 1,001 characters; the limit is 1,000"):
        await handle.cancel("r" * 1_001)
    events = (await handle.workflow.fetch_history()).events
    assert not [e for e in events[before:] if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]

    (gates / "v1.open").touch()
    await handle.result()
    with pytest.raises(MessageRefusedError, match="is not running"):
        await handle.send_message("too late", sender="ann")


async def test_a_run_without_a_session_refuses_messages_once_its_turn_is_over(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", id="a1", a=1, b=2)), {"text": "3"}])
    agent = Agent(
        model=model,
        tools=[t.add],
        hooks={"after_run": [ask_all_after_run := t.trace_after_run]},
        state_schema={"trace": {"type": list}},
    )
    assert ask_all_after_run
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await handle.result()
    assert result.exit_reason == "text"
    with pytest.raises(MessageRefusedError, match="is not running"):
        await handle.send_message("more?")


async def test_a_repeated_message_id_returns_the_first_receipt_and_adds_nothing(
    client, worker, scripted, model, run_id, gates
):
    scripted.script(model, [calls(call("gate", id="g1", label="d1")), {"text": "once"}])
    handle = await Agent(model=model, tools=[gate]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    await gate_started(gates, "d1")
    first = await handle.send_message("only once", message_id="m-1")
    again = await handle.send_message("only once (retried)", message_id="m-1")
    (gates / "d1.open").touch()
    result = await handle.result()

    assert again == first and first.message_id == "m-1"
    assert [m.text for m in result.messages if m.role.value == "user"] == ["go", "only once"]


async def test_the_signal_delivers_and_ignores_a_refused_message(client, worker, scripted, model, run_id, gates):
    scripted.script(model, [calls(call("gate", id="g1", label="s1")), {"text": "ok"}])
    handle = await Agent(model=model, tools=[gate], participants=["ann"]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    await gate_started(gates, "s1")
    await handle.workflow.signal(USER_MESSAGE_SIGNAL, UserMessage(text="from eve", sender="eve"))
    await handle.workflow.signal(USER_MESSAGE_SIGNAL, UserMessage(text="from ann", sender="ann"))
    await signals_processed(handle, 2)
    (gates / "s1.open").touch()
    result = await handle.result()

    assert [m.text for m in result.messages if m.role.value == "user"] == ["go", "from ann"]
    assert sent_roles_and_texts(scripted.requests(model)[1])[-1] == ("user", "from ann")


# -- sessions ------------------------------------------------------------------------------------


def session_agent(model: str, **kwargs) -> Agent:
    return Agent(
        model=model,
        tools=[t.add],
        hooks={"before_run": [t.trace_before_run], "after_run": [t.trace_after_run]},
        state_schema={"trace": {"type": list}},
        **kwargs,
    )


async def test_a_session_of_three_turns_carries_state_and_counts_steps_per_turn(
    client, worker, scripted, model, run_id
):
    scripted.script(
        model,
        [
            {"text": "hello"},
            calls(call("add", id="a1", a=1, b=2)),
            {"text": "3"},
            calls(call("add", id="a2", a=2, b=2)),
            calls(call("add", id="a3", a=3, b=3)),
            {"text": "4 and 6"},
        ],
    )
    handle = await session_agent(model).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker, wait_for_user=timedelta(minutes=5)
    )
    one = await handle.wait_turn(1)
    status = await eventually(handle.status, lambda s: s.waiting_for_user, message="never waited for the user")
    assert status.turn == 1 and status.phase == "waiting_for_user"
    receipt = await handle.send_message("add 1 and 2")
    assert receipt.turn == 2
    two = await handle.wait_turn(2)
    receipt = await handle.send_message("now 2+2 and 3+3")
    three = await handle.wait_turn(receipt.turn)

    assert (one.turn, one.exit_reason, one.step_count, one.last_message.text) == (1, "text", 1, "hello")
    assert (two.turn, two.exit_reason, two.step_count, two.last_message.text) == (2, "text", 2, "3")
    assert (three.turn, three.exit_reason, three.step_count, three.last_message.text) == (3, "text", 3, "4 and 6")
    await handle.cancel("done talking")
    result = await handle.result()
    assert result.exit_reason == "cancelled" and result.turn == 3
    assert result.tool_call_counts == {"add": 3}
    assert result.state["trace"] == [
        "before_run@0",
        "after_run@1",
        "before_run@0",
        "after_run@2",
        "before_run@0",
        "after_run@3",
    ]
    # The model saw the whole conversation each turn.
    last_request = scripted.requests(model)[-1]
    assert [c for _, c in sent_roles_and_texts(last_request)][:3] == ["hi", "hello", "add 1 and 2"]
    assert result.token_usage["total_tokens"] > 0


async def test_a_session_ends_idle_when_no_message_comes(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "anything else?"}])
    handle = await session_agent(model).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker, wait_for_user=timedelta(seconds=2)
    )
    waiting = await eventually(handle.status, lambda s: s.waiting_for_user, message="never waited for the user")
    description = await handle.workflow.describe()
    memo = await description.memo_value(WAITING_FOR_USER_MEMO_KEY)
    assert waiting.turn == 1 and memo["turn"] == 1 and memo["last_message"] == "anything else?"
    result = await handle.result()

    assert result.exit_reason == "idle" and result.turn == 1 and result.step_count == 1
    assert result.state["trace"] == ["before_run@0", "after_run@1"]
    assert (await handle.status()).waiting_for_user is False
    with pytest.raises(ConversationError, match="ended at turn 1 \\(exit_reason 'idle'\\) without finishing turn 2"):
        await handle.wait_turn(2)


async def test_wait_turn_times_out_with_a_clear_message(client, worker, scripted, model, run_id, gates):
    scripted.script(model, [calls(call("gate", id="g1", label="w1")), {"text": "done"}])
    handle = await Agent(model=model, tools=[gate]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    await gate_started(gates, "w1")
    with pytest.raises(
        TurnTimeoutError, match="Turn 1 of run .* did not finish within 0:00:00.500000: .*phase 'tools'"
    ):
        await handle.wait_turn(1, timeout=timedelta(milliseconds=500))
    (gates / "w1.open").touch()
    assert (await handle.wait_turn(1)).exit_reason == "text"


async def test_a_session_continues_as_new_between_turns(client, worker, scripted, model, run_id):
    turns = 12  # about 12 history events a turn: past the 100-event threshold
    scripted.script(model, [{"text": f"answer {i}"} for i in range(1, turns + 1)])
    agent = session_agent(model, continue_as_new_after_events=100)
    handle = await agent.start(
        client, [ChatMessage.from_user("q1")], run_id=run_id, task_queue=worker, wait_for_user=timedelta(minutes=5)
    )
    await handle.wait_turn(1)
    receipts = []
    for n in range(2, turns + 1):
        receipts.append(await handle.send_message(f"q{n}", message_id=f"q{n}"))
        await handle.wait_turn(n)
    assert [r.turn for r in receipts] == list(range(2, turns + 1))
    # A retried message after continue-as-new still gets its first receipt.
    assert await handle.send_message("q2 again", message_id="q2") == receipts[0]
    await handle.cancel("bye")
    result = await handle.result()

    assert result.continuations >= 1 and result.turn == turns
    assert [m.text for m in result.messages if m.role.value == "user"] == [f"q{i}" for i in range(1, turns + 1)]
    assert [m.text for m in result.messages if m.role.value == "assistant"] == [
        f"answer {i}" for i in range(1, turns + 1)
    ]
    # Each workflow run's history stays short: the session continued as new instead of growing.
    assert len((await handle.workflow.fetch_history()).events) < 150


# -- start-or-send -------------------------------------------------------------------------------


async def test_agent_send_starts_a_run_then_adds_to_it(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "welcome"}, {"text": "sure"}])
    agent = session_agent(model, participants=["ann"])
    first = await agent.send(
        client, run_id, "hello", task_queue=worker, sender="ann", wait_for_user=timedelta(minutes=5)
    )
    assert first.last_receipt.turn == 1
    assert (await first.wait_turn(1)).last_message.text == "welcome"
    second = await agent.send(client, run_id, "and more", task_queue=worker, sender="ann")
    assert second.last_receipt.turn == 2
    assert (await second.wait_turn(2)).last_message.text == "sure"
    with pytest.raises(MessageRefusedError, match="Sender 'eve'"):
        await agent.send(client, run_id, "me too", task_queue=worker, sender="eve")
    await second.cancel()
    result = await second.result()
    assert [m.text for m in result.messages] == ["hello", "welcome", "and more", "sure"]
    history = await second.workflow.fetch_history()
    starts = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED]
    assert len(starts) == 1
    assert json.loads(json.dumps(result.messages[0].meta))["sender"] == "ann"


async def test_a_message_sent_during_the_model_call_that_ends_the_turn_is_answered_in_that_turn(
    client, worker, scripted, model, run_id, gates
):
    scripted.script(model, [{"text": "first answer", "hold_until": str(gates / "reply.open")}, {"text": "second"}])
    handle = await Agent(model=model, tools=[t.add]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    await eventually(lambda: len(scripted.requests(model)) == 1, message="the model was never called")
    receipt = await handle.send_message("one more thing")
    (gates / "reply.open").touch()
    result = await handle.result()

    assert receipt.turn == 1
    assert [(m.role.value, m.text) for m in result.messages] == [
        ("user", "go"),
        ("assistant", "first answer"),
        ("user", "one more thing"),
        ("assistant", "second"),
    ]
    assert (result.exit_reason, result.step_count) == ("text", 2)
    assert sent_roles_and_texts(scripted.requests(model)[1])[-1] == ("user", "one more thing")
