"""examples/researcher.py end to end, as a user runs it: a worker serving ``examples.researcher:lead``
(the researcher's tools included), ``agent run --agent``, the child's call in ``agent pending`` with
the lead as PARENT, ``agent approve`` on the child run, ``agent result`` of the lead. On the
scripted model's default replies (no script: the example's model names are not scripted here)."""

from __future__ import annotations

import pytest

from runtime.tool_loading import load_tools
from tests.agent.cli.test_cli import agent_cli
from tests.support.polling import eventually
from worker import create_worker

pytestmark = pytest.mark.usefixtures("scripted")


async def test_the_researcher_example_runs_with_agent_run(client, run_id):
    queue = f"researcher-{run_id}"
    tools = load_tools(["examples.researcher:lead"])  # what `python worker.py --tools ...` serves
    assert sorted(t.name for t in tools) == ["publish_report", "search_notes"]
    async with create_worker(client, tools=tools, task_queue=queue):
        ran = await agent_cli(
            "run", "--agent", "examples.researcher:lead", "--run-id", run_id, "--task-queue", queue, "Q3 numbers"
        )
        assert ran.returncode == 0, ran.stderr

        async def pending_table() -> str:
            listed = await agent_cli("pending")
            assert listed.returncode == 0, listed.stderr
            return listed.stdout

        table = await eventually(
            pending_table, lambda out: f"{run_id}/" in out, timeout=60, message="the child's call never listed"
        )
        header, *rows = table.splitlines()
        assert header.split()[-1] == "PARENT"
        (row,) = [r for r in rows if r.startswith(f"{run_id}/")]
        child_id, call_id, tool_name = row.split()[:3]
        assert tool_name == "publish_report" and row.split()[-1] == run_id

        approved = await agent_cli("approve", child_id, call_id, "--approver", "ann")
        assert approved.returncode == 0, approved.stderr
        result = await agent_cli("result", run_id)
    assert result.returncode == 0, result.stderr
    # The lead's answer quotes the researcher's, which quotes its tools' results.
    assert "Published the report" in result.stdout and "revenue up 4%" in result.stdout
