"""The live transcript of ``agent watch`` and ``agent chat`` (:mod:`agent.live_view`), and the
inbox's reading of a stream so far (:mod:`agent.inbox.live`), over hand-made event sequences."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent import RunEvent
from agent.inbox.live import answer_in_progress, start_offset
from agent.inbox.pages import PageError
from agent.live_view import LiveTranscript, PlainScreen, retry_marker
from agent.watch import RichRenderer


def events(*specs: tuple) -> list[RunEvent]:
    """``(kind, turn, step, data)`` tuples as events with offsets 0, 1, ..."""
    return [
        RunEvent(offset=i, kind=kind, turn=turn, step=step, data=data)
        for i, (kind, turn, step, data) in enumerate(specs)
    ]


def token(text: str, step: int = 0, attempt: int = 1, turn: int = 1) -> tuple:
    return ("token", turn, step, {"text": text, "attempt": attempt})


def reply(text: str, step: int = 0, calls: list | None = None, turn: int = 1) -> tuple:
    return ("model_reply", turn, step, {"text": text, "tool_calls": calls or [], "usage": {}, "finish_reason": "stop"})


def shown(*specs: tuple, label: str = "assistant: ", whole: bool = True) -> str:
    out = io.StringIO()
    transcript = LiveTranscript(PlainScreen(out), "run-1", lambda _n: label, whole_answers=whole)
    for event in events(*specs):
        transcript.show(event)
    transcript.screen.end_partial()
    return out.getvalue()


def test_tokens_build_one_answer_line_that_the_reply_ends():
    assert shown(token("Hel"), token("lo, "), token("world"), reply("Hello, world")) == "assistant: Hello, world\n"


def test_an_answer_that_was_not_streamed_is_printed_whole_from_the_reply():
    long = "word " * 40
    assert shown(reply(long)) == f"assistant: {long}\n"
    watched = shown(reply(long), label="  model call 1 answered: ", whole=False)
    assert watched.endswith("...\n") and len(watched) < len(long)


def test_a_retry_ends_the_broken_line_and_restarts_the_answer_after_a_marker():
    out = shown(
        token("The ans"),
        ("model_retry", 1, 0, {"attempt": 2}),
        token("late batch of attempt one", attempt=1),
        token("The answer", attempt=2),
        token(" is 4", attempt=2),
        reply("The answer is 4"),
    )
    assert out.splitlines() == ["assistant: The ans", retry_marker(2), "assistant: The answer is 4"]


def test_tokens_of_a_newer_attempt_without_the_marker_still_restart():
    out = shown(token("half"), token("whole", attempt=2), reply("whole"))
    assert out.splitlines() == ["assistant: half", retry_marker(2), "assistant: whole"]


def test_tool_calls_approvals_and_decisions_are_one_line_each_below_the_answer():
    call = {"tool_call_id": "c1", "tool_name": "add", "arguments": {"a": 1, "b": 2}}
    out = shown(
        reply("", calls=[{"id": "c1", "tool_name": "add", "arguments": {"a": 1, "b": 2}}]),
        ("approval_requested", 1, 0, call),
        ("decision", 1, 0, {"tool_call_id": "c1", "action": "confirm", "approver": "ann", "feedback": None}),
        ("tool_started", 1, 0, call),
        ("tool_finished", 1, 0, {"tool_call_id": "c1", "tool_name": "add", "error": False, "result_preview": "3"}),
        token("It is ", step=1),
        token("3", step=1),
        reply("It is 3", step=1),
    )
    assert out.splitlines() == [
        "  model call 1 asked for: add",
        "  waiting for approval of add(a=1, b=2) (c1): agent approve run-1 c1 (or: agent reject / agent modify)",
        "  decided: c1 confirm by ann",
        "  tool add(a=1, b=2) [step 0] -> 3",
        "assistant: It is 3",
    ]


def test_a_line_printed_mid_answer_goes_below_it_and_the_answer_goes_on_labelled_again():
    out = io.StringIO()
    screen = PlainScreen(out)
    transcript = LiveTranscript(screen, "run-1", lambda _n: "assistant: ")
    first, second, end = events(token("one "), token("two"), reply("one two"))
    transcript.show(first)
    screen.line("problem: something")
    transcript.show(second)
    transcript.show(end)
    assert out.getvalue().splitlines() == ["assistant: one ", "problem: something", "assistant: two"]


def test_the_answer_in_progress_is_the_latest_attempt_of_the_last_unanswered_call():
    assert answer_in_progress(events(token("a"), token("b"))) == ("1:0", "ab")
    assert answer_in_progress(events(token("a"), reply("a"))) == ("", "")
    assert answer_in_progress(events(token("a"), reply("a"), token("c", step=1))) == ("1:1", "c")
    retried = events(
        token("broken"), ("model_retry", 1, 0, {"attempt": 2}), token("fre", attempt=2), token("sh", attempt=2)
    )
    assert answer_in_progress(retried) == ("1:0", "fresh")
    assert answer_in_progress(events(token("old"), token("new", attempt=2))) == ("1:0", "new")


def test_a_subscription_starts_after_last_event_id_else_at_from():
    assert start_offset(None, None) == 0
    assert start_offset(None, "7") == 7
    assert start_offset("7", "3") == 8  # a reconnecting EventSource: the id it saw last wins
    for bad in (("x", None), (None, "-1"), (None, "1.5")):
        with pytest.raises(PageError) as err:
            start_offset(*bad)
        assert err.value.status == 400


def test_on_a_terminal_whole_lines_scroll_up_and_the_line_being_written_sits_on_the_progress_line():
    out = io.StringIO()
    renderer = RichRenderer(Console(file=out, force_terminal=True, width=200))
    transcript = LiveTranscript(renderer, "run-1", lambda n: f"  model call {n} answered: ")
    with renderer:
        transcript.show(events(token("first line\nsecond"))[0])
        assert renderer.partial_open and "second" in renderer.progress.tasks[0].description
        renderer.line("problem: something")  # printed above; the answer's line goes on
        assert renderer.partial_open
        transcript.show(events(reply("first line\nsecond"))[0])
        assert not renderer.partial_open
    printed = out.getvalue()
    assert "  model call 1 answered: first line" in printed and "second" in printed
    assert printed.index("problem: something") < printed.rindex("second")


def test_a_rewind_mid_answer_ends_its_line_and_counts_the_calls_again_from_the_rewound_step():
    out = io.StringIO()
    transcript = LiveTranscript(PlainScreen(out), "run-1", lambda n: f"  model call {n} answered: ")
    rewound = ("run_rewound", 1, 1, {"reason": "rewind to step 1: misread", "previous_temporal_run_id": "t-1"})
    for event in events(
        reply("", step=0, calls=[{"id": "a1", "tool_name": "add", "arguments": {}}]),
        token("OLD-", step=1),
        rewound,
        token("NEW ", step=1),
        token("answer", step=1),
        reply("NEW answer", step=1),
    ):
        transcript.show(event)
    assert out.getvalue().splitlines() == [
        "  model call 1 asked for: add",
        "  model call 2 answered: OLD-",  # the discarded attempt's text stays, cut where it was
        "  run rewound (reset from Temporal run t-1): rewind to step 1: misread",
        "  model call 2 answered: NEW answer",  # step 1's call is call 2 again
    ]
