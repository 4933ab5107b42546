"""``agent deploy status|promote|move``: the operator's side of Worker Versioning (agent/operations/deploys.py)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from agent.command_line import add_command, add_run_argument
from agent.operations.deploys import (
    DEFAULT_PROBE_TIMEOUT,
    DeployError,
    DeploymentStatus,
    MoveRefused,
    deployment_status,
    move,
    promote,
)

_DEPLOYMENT_HELP = "the Worker Deployment (default: $AGENT_DEPLOYMENT_NAME, else the namespace's only one)"


def _print_status(status: DeploymentStatus) -> None:
    ramp = f" ({status.ramp_percentage:g}% of new runs)" if status.ramping_build_id else ""
    print(
        f"deployment {status.deployment}: current {status.current_build_id or '(none)'}"
        f"{f', ramping {status.ramping_build_id}{ramp}' if status.ramping_build_id else ''}"
    )
    header = ("BUILD", "ROLE", "TEMPORAL", "OPEN RUNS", "APPROVAL", "USER", "DRAINED")
    rows = [
        (
            v.build_id,
            v.role,
            v.temporal_status,
            str(v.open_runs),
            str(v.waiting_for_approval),
            str(v.waiting_for_user),
            "yes" if v.drained else "no",
        )
        for v in status.versions
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    if not status.current_build_id:
        print("no current version: new runs cannot start; `agent deploy promote BUILD_ID` makes one current")


async def cmd_status(args: argparse.Namespace, client: Client) -> int:
    try:
        status = await deployment_status(client, args.deployment)
    except DeployError as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(status.to_json(), indent=2))
    else:
        _print_status(status)
    return 0


async def cmd_promote(args: argparse.Namespace, client: Client) -> int:
    try:
        print(await promote(client, args.build_id, args.deployment, args.ramp))
    except DeployError as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        return 1
    return 0


async def cmd_move(args: argparse.Namespace, client: Client) -> int:
    try:
        moved = await move(
            client, args.run, args.to, args.deployment, probe_timeout=timedelta(seconds=args.probe_timeout)
        )
    except MoveRefused as exc:
        print(f"agent: move refused: {exc}", file=sys.stderr)
        return 1
    except DeployError as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(moved), indent=2))
    else:
        print(
            f"moved run {moved.run_id} from build {moved.from_build_id} to build {moved.to_build_id} of deployment "
            f"{moved.deployment}: a worker of build {moved.to_build_id} replayed its {moved.events} events first. "
            f"Its next workflow task runs build {moved.to_build_id}'s hooks and tools."
        )
    return 0


def add_commands(sub: Any) -> None:
    """Add ``deploy`` (``status``, ``promote``, ``move``) to the CLI's subparsers."""
    deploy = add_command(
        sub,
        "deploy",
        "Worker Versioning: builds and the runs pinned to them, promote a build, move a parked run",
        "Runs are pinned to the build of the workers they started on (python worker.py --deployment-name NAME "
        "--build-id ID) and finish there however long they wait. These commands show each build's open runs, "
        'make a build current, and move a parked run to another build. docs/operations.md, "Deploys", has the '
        "whole procedure.",
        "examples:\n  agent deploy status\n  agent deploy promote v2\n  agent deploy promote v3 --ramp 10\n"
        "  agent deploy move run-1 --to v2",
    )
    commands = deploy.add_subparsers(dest="deploy_command", required=True)

    status = add_command(
        commands,
        "status",
        "each build: current or ramping, open runs, waiting for approval or user, drained",
        "List the deployment's versions, newest first: whether each is current or ramping, Temporal's own "
        "status (its drainage is refreshed every few minutes by default), the open agent runs pinned to it, how "
        "many wait for an approval and how many for their user (visibility), and DRAINED: neither current nor "
        "ramping and no open run left, so its workers may stop.",
        "examples:\n  agent deploy status\n  agent deploy status --deployment billing --json",
    )
    status.add_argument("--deployment", metavar="NAME", help=_DEPLOYMENT_HELP)
    status.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {deployment, current_build_id, ramping_build_id, ramp_percentage, versions: [{build_id, "
        "role, temporal_status, open_runs, waiting_for_approval, waiting_for_user, drained, ramp_percentage}]}",
    )
    status.set_defaults(handler=cmd_status)

    up = add_command(
        commands,
        "promote",
        "make a build the current version (new runs start on it), or ramp a share of new runs to it",
        "Temporal's SetWorkerDeploymentCurrentVersion (or, with --ramp, SetWorkerDeploymentRampingVersion). The "
        "deployment's first build needs it too: until a build is current, starting a run is refused. Runs "
        "already open stay on their build; sessions made with upgrade_at_turn_boundary=True move at their next "
        "turn. Refused (exit 1) when no worker of the build has polled yet.",
        "examples:\n  agent deploy promote v2\n  agent deploy promote v3 --ramp 10 --deployment billing",
    )
    up.add_argument("build_id", metavar="BUILD_ID", help="the build to promote")
    up.add_argument("--deployment", metavar="NAME", help=_DEPLOYMENT_HELP)
    up.add_argument(
        "--ramp", type=float, metavar="PERCENT", help="send this share of new runs to the build instead (0-100)"
    )
    up.set_defaults(handler=cmd_promote)

    mv = add_command(
        commands,
        "move",
        "pin an open run to another build, after that build's workers replay its history",
        "A worker of the target build replays the run's history with its own code (a replay probe pinned to that "
        "build on the run's task queue); only when that succeeds is the run pinned to the build (Temporal's "
        "versioning override). Otherwise it stays where it is and the first mismatch is printed. Meant for a run "
        "parked on an approval whose build must go away: an approved call then runs the new build's tool code.\n\n"
        "exit codes:\n  0  moved\n  1  refused (not open, no answer from the build, or its history does not "
        "replay there)\n  2  bad arguments",
        "examples:\n  agent deploy move run-1 --to v2\n  agent deploy move support-42 --to v3 --deployment billing",
    )
    add_run_argument(mv)
    mv.add_argument("--to", required=True, metavar="BUILD_ID", help="the build to move the run to")
    mv.add_argument("--deployment", metavar="NAME", help="the deployment (default: the run's own)")
    mv.add_argument(
        "--probe-timeout",
        type=float,
        default=DEFAULT_PROBE_TIMEOUT.total_seconds(),
        metavar="SECONDS",
        help=f"how long to wait for the build's workers to replay the run (default {DEFAULT_PROBE_TIMEOUT.seconds})",
    )
    mv.add_argument("--json", action="store_true", help="print what was done as JSON")
    mv.set_defaults(handler=cmd_move)
