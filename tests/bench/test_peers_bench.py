"""bench.peers' pure helpers: the scripted task, run classification, argument parsing, the README table.

The bench itself needs the [bench] extra and minutes of runs; it is not run here.
"""

from __future__ import annotations

import pytest

from bench.peer_common import PeerResult, best_peer_lines, classify, markdown_table, median_results, script, size_label
from bench.peers import parse_cases, parse_systems


def test_script_calls_the_tool_once_a_step_then_answers():
    replies = script(3, 2048)
    assert replies == [
        {"tool_calls": [{"name": "big_text", "arguments": {"size": 2048}}], "times": 3},
        {"text": "done"},
    ]


@pytest.mark.parametrize("steps, size", [(0, 10), (5, 0)])
def test_script_rejects_empty_tasks(steps, size):
    with pytest.raises(ValueError, match="at least 1"):
        script(steps, size)


def _verdict(**overrides):
    values = {
        "completed": False,
        "failure": None,
        "elapsed_s": 5.0,
        "idle_s": 1.0,
        "deadline_s": 120.0,
        "stall_s": 20.0,
    }
    return classify(**(values | overrides))


def test_classify_keeps_waiting_while_the_history_grows_within_the_deadline():
    assert _verdict() is None


def test_classify_finished_and_failed_win_over_the_clocks():
    assert _verdict(completed=True, idle_s=99, elapsed_s=999) == ("finished", None)
    assert _verdict(failure="boom", idle_s=99) == ("failed", "boom")


def test_classify_a_run_without_new_events_is_stalled():
    outcome, error = _verdict(idle_s=21.0)
    assert outcome == "stalled" and "no new history event for 21 s" in error


def test_classify_a_run_past_its_deadline_is_stalled_even_while_progressing():
    outcome, error = _verdict(elapsed_s=121.0, idle_s=0.5)
    assert outcome == "stalled" and "120 s deadline" in error


def test_parse_cases_and_systems():
    assert parse_cases("20x2048, 40X51200") == [(20, 2048), (40, 51200)]
    assert parse_systems("ours,floor") == ["floor", "ours"]  # table order
    assert parse_systems("ours,bare") == ["bare", "ours"]  # the bare floor first


@pytest.mark.parametrize("text", ["20", "20x", "x2048", "0x2048", "20x-1", "", " , "])
def test_parse_cases_rejects_malformed_entries(text):
    with pytest.raises(ValueError, match="STEPSxBYTES"):
        parse_cases(text)


def test_parse_systems_names_the_unknown_one():
    with pytest.raises(ValueError, match="langgraph"):
        parse_systems("ours,langgraph")


def test_size_label():
    assert size_label(2048) == "2 KiB"
    assert size_label(51200) == "50 KiB"
    assert size_label(2000) == "2,000 B"


def _result(system, work_ms, **kw):
    base = dict(
        system=system,
        steps=40,
        result_bytes=51200,
        outcome="finished",
        steps_done=40,
        wall_ms=100.0,
        work_ms=work_ms,
        cpu_ms=20.0,
        history_bytes=10240.0,
    )
    return PeerResult(**(base | kw))


def test_table_rows_by_case_then_system_with_ratio_to_that_cases_bare_floor():
    stalled = _result(
        "pydantic-ai",
        120.0,
        outcome="stalled",
        steps_done=39,
        wall_ms=None,
        cpu_ms=None,
        error="workflow task failing: [TMPRL1103] payload | too big",
    )
    other_case = _result("bare", 10.0, steps=20, result_bytes=2048)
    table = markdown_table([stalled, _result("ours", 30.0), other_case, _result("bare", 60.0, wall_ms=50.0)])
    lines = table.splitlines()
    assert lines[0].startswith("| steps × result | system | finished | wall ms/step | wall range | wall / bare |")
    body = lines[2:]
    assert [line.split(" | ")[1] for line in body] == ["bare", "ours", "pydantic-ai", "bare"]
    assert "| 0.50× |" in body[1]  # ours 30 ms over this case's bare floor, 60 ms (not the other case's 10)
    assert "| 100.0 | – | 2.00× |" in body[1]  # wall 100 ms over the bare floor's 50 (one round: no range)
    assert "| 2.00× |" in body[2]
    assert "stalled at step 39/40: workflow task failing: [TMPRL1103] payload / too big" in body[2]  # pipe escaped
    assert "| – | – | – | 120.0 | 2.00× | – | 10.0 |" in body[2]  # no wall or CPU for an unfinished run
    assert body[3].startswith("| 20 × 2 KiB | bare | finished |")


def test_table_without_a_floor_has_no_ratio():
    table = markdown_table([_result("ours", 30.0)])
    assert "| 100.0 | – | – | 30.0 | – | 20.0 |" in table.splitlines()[2]


def test_table_cuts_long_errors():
    row = markdown_table([_result("ours", None, outcome="failed", error="x" * 500)], error_chars=40).splitlines()[2]
    status = row.split(" | ")[2]
    assert len(status) == 40 and status.endswith("…")


def test_medians_over_rounds_keep_a_failed_round_visible():
    rounds = [
        _result("ours", 30.0, wall_ms=60.0, cpu_ms=10.0),
        _result("ours", 50.0, wall_ms=90.0, cpu_ms=30.0),
        _result("ours", None, outcome="failed", wall_ms=None, error="worker process exited -6: abort"),
        _result("ours", 40.0, wall_ms=70.0, cpu_ms=20.0),
        _result("bare", 20.0, wall_ms=50.0),
    ]
    ours, bare = median_results(rounds)
    assert (ours.wall_ms, ours.work_ms, ours.cpu_ms) == (70.0, 40.0, 20.0)
    assert (ours.rounds, ours.rounds_finished, ours.wall_range) == (4, 3, (60.0, 90.0))
    assert ours.status == "finished 3/4 rounds; failed at step 40/40: worker process exited -6: abort"
    assert (bare.rounds, bare.wall_range, bare.status) == (1, None, "finished")
    row = markdown_table([ours, bare]).splitlines()[3]
    assert "| 70.0 | 60.0–90.0 | 1.40× |" in row


def test_medians_of_a_system_that_never_finished_is_its_last_failure():
    (only,) = median_results([_result("ours", None, outcome="stalled", wall_ms=None, error=f"e{i}") for i in range(2)])
    assert (only.outcome, only.rounds, only.rounds_finished, only.error) == ("stalled", 2, 0, "e1")


def test_best_peer_line_names_the_fastest_peer_and_the_floor():
    results = [
        _result("bare", 20.0, wall_ms=50.0),
        _result("ours", 20.0, wall_ms=40.0),
        _result("pydantic-ai", 20.0, wall_ms=100.0),
        _result("openai-agents", 20.0, wall_ms=80.0),
        _result("ours", 20.0, steps=20, wall_ms=40.0),
        _result("pydantic-ai", None, steps=20, outcome="failed", wall_ms=None),
    ]
    assert best_peer_lines(results) == [
        "40 × 50 KiB: ours 40.0 ms/step = 0.50× openai-agents (80.0), 0.80× bare (50.0)",
        "20 × 50 KiB: no comparison (ours or every peer did not finish)",
    ]
