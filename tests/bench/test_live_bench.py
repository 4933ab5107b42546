"""bench.live's pure helpers: matching the model's chunks to the subscriber's token events, and
reading the token texts out of a stream publish Signal. The bench itself runs for minutes; it is
not run here."""

from __future__ import annotations

import pytest

from bench.live import chunk_latencies, first_chunk_times, reply_text
from core.events import ReplyText, RunEvent


def test_each_chunk_is_received_with_the_token_event_that_completes_it():
    sent = [(0.0, "ab"), (0.1, "cd"), (0.2, "ef"), (0.3, "g")]
    received = [(0.05, "a"), (0.25, "bcde"), (0.5, "fg")]
    assert chunk_latencies(sent, received) == pytest.approx([0.25, 0.15, 0.3, 0.2])


def test_a_token_event_waited_since_its_first_chunk_left():
    sent = [(0.0, "ab"), (0.1, "cd"), (0.2, "ef"), (0.3, "g")]
    assert first_chunk_times(sent, [(0.05, "ab"), (0.25, "cdef"), (0.5, "g")]) == [0.0, 0.1, 0.3]


def test_text_that_differs_is_an_error_not_a_latency():
    with pytest.raises(ValueError, match="not the model's text"):
        chunk_latencies([(0.0, "ab")], [(0.1, "ax")])


def test_replies_differ_by_turn_and_have_the_asked_length():
    assert len(reply_text(1, 100)) == 100 and reply_text(1, 50) != reply_text(2, 50)


def event(kind: str, step: int = 0, **data) -> RunEvent:
    return RunEvent(kind=kind, turn=1, step=step, data=data)


def test_reply_text_drops_the_text_of_a_retried_attempt_and_late_tokens_of_it():
    folded = ReplyText()
    for e in [
        event("token", text="Hel", attempt=1),
        event("token", step=1, text="other step", attempt=1),
        event("model_retry", attempt=2),
        event("token", text="stale", attempt=1),  # the first attempt, still sending
        event("token", text="Hi ", attempt=2),
        event("token", text="there", attempt=2),
        event("model_reply", text="Hi there"),
    ]:
        folded.add(e)
    assert folded.text(1, 0) == "Hi there"
    assert folded.text(1, 1) == "other step"
    assert folded.text(2, 0) == ""
