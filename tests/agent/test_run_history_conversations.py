"""The history decoder on committed conversation histories (no server): the messages people sent,
with who sent them and the turn each went to, and a session's turn boundaries."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from agent.run_history import HistoryDecoder, HistoryItem
from core.converter import agent_data_converter

HISTORIES = Path(__file__).resolve().parents[1] / "histories"

pytestmark = pytest.mark.unit


async def decoded(name: str) -> list[HistoryItem]:
    history = WorkflowHistory.from_json("run", (HISTORIES / f"conversation_{name}.json").read_text())
    decoder = HistoryDecoder(agent_data_converter())
    return [item for event in history.events for item in await decoder.decode_all(event)]


async def test_messages_by_update_and_by_signal_with_sender_and_turn():
    items = await decoded("message_delivery")
    messages = [
        (i.via, i.user_message.text, i.user_message.sender, i.turn, i.receipt.message_id if i.receipt else None)
        for i in items
        if i.kind == "message_received"
    ]
    # The repeated id "m1" was answered with the first receipt and is in history once as an Update;
    # the Signal has no receipt; the last message got an id from the run.
    assert messages[:2] == [("update", "first", "ann", 1, "m1"), ("update", "first again", "ann", 1, "m1")]
    assert ("signal", "second", "bob", None, None) in messages
    [third] = [m for m in messages if m[1] == "third"]
    assert third[0] == "update" and third[2] is None and third[3] == 1 and third[4]
    assert [i.turn for i in items if i.kind == "turn_started"] == [1]  # one turn, no session
    assert not [i for i in items if i.kind == "turn_ended"]


async def test_a_sessions_turns_start_and_end_in_order():
    items = await decoded("session_idle")
    bounds = [(i.kind, i.turn) for i in items if i.kind in ("turn_started", "turn_ended", "message_received")]
    assert bounds == [
        ("turn_started", 1),
        ("turn_ended", 1),
        ("message_received", 2),
        ("turn_started", 2),
        ("turn_ended", 2),
    ]
    [ended] = [i for i in items if i.kind == "turn_ended" and i.turn == 1]
    assert ended.preview == "hello"
    assert items[-1].kind == "run_ended" and items[-1].ending == "completed"


async def test_a_continued_session_ends_its_turn_at_the_continue_and_counts_on():
    first, last = await decoded("session_continue_as_new_first"), await decoded("session_continue_as_new_last")
    bounds_first = [(i.kind, i.turn) for i in first if i.kind in ("turn_started", "turn_ended")]
    bounds_last = [(i.kind, i.turn) for i in last if i.kind in ("turn_started", "turn_ended")]
    # Turns 1-7 in the first run (it continues as new right after turn 7 ends), 8-12 in the last.
    assert bounds_first == [(kind, n) for n in range(1, 8) for kind in ("turn_started", "turn_ended")]
    assert bounds_last == [(kind, n) for n in range(8, 13) for kind in ("turn_started", "turn_ended")]
    assert first[-1].kind == "run_ended" and first[-1].ending == "continued as new"
