"""``agent status`` and ``agent watch`` on a stuck run (its workflow task keeps failing): the
attempt, the error, the fix and the hint, never Temporal's raw FAILED_PRECONDITION."""

from __future__ import annotations

import json

from agent.run_commands import STUCK_EXIT_CODE
from tests.agent.cli.test_cli import agent_cli
from tests.support.stuck_runs import HINT, WALL_CLOCK_ERROR, attempt_in, fix_for, stuck_run


async def test_status_of_a_stuck_run_names_the_attempt_error_fix_and_hint(client, worker, scripted, model, run_id):
    async with stuck_run(client, worker, scripted, model, run_id):
        shown = await agent_cli("status", run_id)
    assert shown.returncode == STUCK_EXIT_CODE == 3, shown.stderr
    assert "FAILED_PRECONDITION" not in shown.stdout + shown.stderr
    assert "Workflow Task in failed state" not in shown.stdout + shown.stderr  # the query is not asked
    report = json.loads(shown.stdout)
    assert report["status"] == "RUNNING" and "query_error" not in report
    task = report["health"]["failing_workflow_task"]
    assert task["attempt"] >= 2
    assert task["error"] == WALL_CLOCK_ERROR
    assert task["fix"] == fix_for(worker)
    assert task["hint"] == HINT
    lines = shown.stderr.splitlines()
    attempt = attempt_in(
        lines[0], rf"^agent: run {run_id} is stuck: its workflow task keeps failing \(attempt (\d+)\): "
    )
    assert attempt >= 2
    assert lines[0].endswith(WALL_CLOCK_ERROR)
    assert lines[1] == f"agent: run {run_id}: to fix it, {fix_for(worker)}"
    assert lines[2] == f"agent: run {run_id}: hint: {HINT}"


async def test_watch_reports_a_stuck_run_once_and_keeps_watching(client, worker, scripted, model, run_id):
    async with stuck_run(client, worker, scripted, model, run_id):
        watched = await agent_cli("watch", run_id, "--plain", "--timeout", "3")
    # it kept watching (the run may resume) until --timeout stopped it
    assert watched.returncode == 1
    assert f"stopped waiting for run {run_id} after 3 s (--timeout); the run goes on" in watched.stderr
    problems = [line for line in watched.stdout.splitlines() if line.startswith("problem:")]
    assert len(problems) == 3, watched.stdout  # once, not once per attempt
    attempt = attempt_in(
        problems[0], rf"^problem: run {run_id} is stuck: its workflow task keeps failing \(attempt (\d+)\): "
    )
    assert attempt >= 2 and problems[0].endswith(WALL_CLOCK_ERROR)
    assert problems[1] == f"problem: run {run_id}: to fix it, {fix_for(worker)}"
    assert problems[2] == f"problem: run {run_id}: hint: {HINT}"
    assert "did not answer" not in watched.stdout and "FAILED_PRECONDITION" not in watched.stdout + watched.stderr
