"""``agent.run_problems``: the hint for workflow code is given for sandbox restrictions and
non-determinism only, and a failing task reads the same in every view."""

from __future__ import annotations

from agent.run_problems import WORKFLOW_CODE_HINT, failing_task_lines, failing_workflow_task, health_lines
from core.payloads import RunHealth
from tests.support.stuck_runs import WALL_CLOCK_ERROR


def test_the_sandbox_refusing_the_clock_gets_the_hint_by_its_type_and_by_its_text():
    assert failing_workflow_task(2, WALL_CLOCK_ERROR, "q", ["RestrictedWorkflowAccessError"]).hint == WORKFLOW_CODE_HINT
    assert failing_workflow_task(2, WALL_CLOCK_ERROR, "q").hint == WORKFLOW_CODE_HINT


def test_non_determinism_gets_the_hint_by_the_task_failure_cause_and_by_its_text():
    cause = "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"
    assert failing_workflow_task(3, "activity type mismatch", "q", [cause]).hint == WORKFLOW_CODE_HINT
    text = "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'a' does not match 'b'"
    assert failing_workflow_task(3, text, "q").hint == WORKFLOW_CODE_HINT


def test_an_unrelated_error_gets_the_fix_but_no_hint():
    task = failing_workflow_task(
        4,
        "KeyError: 'tools'",
        "support-agents",
        ["WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE", "KeyError"],
    )
    assert task.hint is None
    assert task.fix == "deploy fixed code to the workers of task queue support-agents; the run then resumes by itself"
    assert failing_task_lines("run-1", task) == [
        "run run-1 is stuck: its workflow task keeps failing (attempt 4): KeyError: 'tools'",
        "run run-1: to fix it, deploy fixed code to the workers of task queue support-agents; the run then "
        "resumes by itself",
    ]


def test_a_failure_missing_from_the_history_is_said_so():
    assert failing_workflow_task(2, None, "q").error == "no failure message in the history"


def test_health_lines_put_the_failing_task_with_its_fix():
    task = failing_workflow_task(2, WALL_CLOCK_ERROR, "q")
    health = RunHealth(status="RUNNING", workflow_task_attempts=2, failing_workflow_task=task)
    assert health_lines("run-1", health) == failing_task_lines("run-1", task)
    assert health_lines("run-1", health)[-1] == f"run run-1: hint: {WORKFLOW_CODE_HINT}"
