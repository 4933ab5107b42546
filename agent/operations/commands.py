"""``agent replay-check`` and ``agent rewind``: the operator's commands for runs that live long."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent.command_line import add_command, add_run_argument
from agent.operations import deploy_commands
from agent.operations.deploys import DeployError, deployment_name, version_query
from agent.operations.replay_check import DEFAULT_FILTER, ReplayCheckReport, replay_check, runs_query
from agent.operations.rewind import RewindRefused, rewind


def _print_report(report: ReplayCheckReport) -> None:
    for broken in report.broken:
        print(f"run {broken.run_id} would break (Temporal run {broken.temporal_run_id}): {broken.error}")
    speed = f"{report.seconds:.1f} s, {report.runs_per_second:.1f} runs/s"
    if not report.checked:
        print(f"replay-check: no runs match {report.query}; nothing to check")
    elif report.broken:
        print(
            f"replay-check: {len(report.broken)} of {report.checked} runs would break with the code installed here "
            f'({speed}); do not deploy it as is: see docs/operations.md, "Before a deploy"'
        )
    else:
        print(f"replay-check: all {report.checked} runs replay with the code installed here ({speed})")
    if report.truncated:
        print(
            f"replay-check: only the first {report.limit} matching runs were checked (--limit); more match: "
            "raise --limit or narrow --query",
            file=sys.stderr,
        )


#: ``agent replay-check`` notes its progress on stderr every this many runs.
PROGRESS_EVERY = 1000


async def cmd_replay_check(args: argparse.Namespace, client: Client) -> int:
    checked = 0

    def progress(result: Any, broken: Any) -> None:
        nonlocal checked
        checked += 1
        if checked % PROGRESS_EVERY == 0:
            print(f"replay-check: {checked} runs replayed so far ...", file=sys.stderr, flush=True)

    try:
        query = args.query
        if args.build is not None:  # the open runs pinned to that build (and whatever --query adds)
            build = version_query(await deployment_name(client, args.deployment), args.build)
            query = f"{build} AND ({query or DEFAULT_FILTER})"
        report = await replay_check(client, query=query, limit=args.limit, on_result=progress)
    except (ValueError, DeployError) as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        return 2
    except RPCError as exc:
        if exc.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        print(f"agent: error: Temporal cannot run the query {runs_query(query)!r}: {exc.message}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(report)
    return 1 if report.broken else 0


async def cmd_rewind(args: argparse.Namespace, client: Client) -> int:
    try:
        done = await rewind(client, args.run, args.to_step, args.reason, turn=args.turn)
    except RewindRefused as exc:
        print(f"agent: rewind refused: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(vars(done), indent=2))
        return 0
    reopened = "" if done.status_before == "RUNNING" else f" (it was {done.status_before.lower()}; it is open again)"
    print(
        f"rewound run {done.run_id} to the start of step {done.step}{reopened}: Temporal run "
        f"{done.from_temporal_run_id} was reset to event {done.reset_event_id}, the run goes on as "
        f"{done.temporal_run_id}. Step {done.step}'s model call runs again, and so does every tool call after it."
    )
    print(f"follow it with: agent watch {done.run_id}")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``replay-check``, ``rewind`` and ``deploy`` to the CLI's subparsers."""
    check = add_command(
        sub,
        "replay-check",
        "before a deploy: replay open runs against the code installed here; exit 1 naming runs that would break",
        "Fetch the histories of open runs (default: every running agent run, all pages) and replay each "
        "against the workflow and hook code installed in this environment, with temporalio's Replayer and "
        "the project's plugin (data converter, external storage, sandbox). Run it where the new code is "
        "installed, before deploying it to the workers: a run whose history the new code does not replay "
        "would be stuck on its next workflow task.\n\n"
        "exit codes:\n"
        "  0  every checked run replays (the count and the speed are printed)\n"
        "  1  some runs would break: each is named with its first mismatch (the non-determinism error)\n"
        "  2  bad arguments (a --query Temporal cannot run, a --limit under 1)",
        "examples:\n  agent replay-check\n  agent replay-check --query \"TaskQueue = 'billing'\" --json\n"
        "  agent replay-check --query \"ExecutionStatus = 'Running' AND StartTime > '2026-11-01T00:00:00Z'\" --limit 500\n"
        "  agent replay-check --build v1",
    )
    check.add_argument(
        "--query",
        metavar="Q",
        default=None,
        help=f"Temporal visibility query picking the runs, ANDed with WorkflowType = 'AgentWorkflow' "
        f'(default: "{DEFAULT_FILTER}")',
    )
    check.add_argument(
        "--build",
        metavar="BUILD_ID",
        help="only the open runs pinned to this build of the Worker Deployment (ANDed with --query): check a "
        "build's parked runs against the code installed here before `agent deploy move` or before its workers stop",
    )
    check.add_argument(
        "--deployment",
        metavar="NAME",
        help="the deployment of --build (default: $AGENT_DEPLOYMENT_NAME, else the only one)",
    )
    check.add_argument(
        "--limit", type=int, default=None, metavar="N", help="check at most N runs (default: all); a cut list says so"
    )
    check.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {query, checked, broken: [{run_id, temporal_run_id, error}], ok, seconds, "
        "runs_per_second, truncated, limit}",
    )
    check.set_defaults(handler=cmd_replay_check)

    back = add_command(
        sub,
        "rewind",
        "take a run back to the start of step K (Temporal's reset); it goes on from there",
        "Reset the run to the workflow task that scheduled step K's model call, in its current Temporal run. "
        "The run goes on from there with the conversation as it was when step K began: the model call of "
        "step K is made again and every tool call after it runs again (no later result is reused). "
        "Signals, Updates (approvals, messages) and cancel requests sent after that point are not reapplied. "
        "Steps count from 0 in each turn, as `agent status` and `agent watch` show them ([step K]). "
        "`agent watch` and the inbox's run page show the rewind and its reason.\n\n"
        "Refused (exit 1, saying why) when step K is not in the current run: it ran before a continue-as-new, "
        "or the run has not reached it; and when the run timed out for good (its execution timeout passed).",
        'examples:\n  agent rewind run-1 --to-step 2 --reason "the ticket was misread"\n'
        '  agent rewind support-42 --turn 3 --to-step 0 --reason "retry with the fixed prompt hook"',
    )
    add_run_argument(back)
    back.add_argument(
        "--to-step", type=int, required=True, metavar="K", help="the step to go back to (0: a turn's first)"
    )
    back.add_argument("--reason", required=True, help="why; kept in the run's history and shown by watch and the inbox")
    back.add_argument(
        "--turn", type=int, default=None, metavar="T", help="a session's turn (default: the latest in the current run)"
    )
    back.add_argument("--json", action="store_true", help="print what was done as JSON")
    back.set_defaults(handler=cmd_rewind)

    deploy_commands.add_commands(sub)
