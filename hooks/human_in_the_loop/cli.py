"""This family's ``agent`` subcommands: ``pending``, ``approve``, ``reject``, ``modify``.

The ``agent`` CLI calls :func:`add_approval_commands` on its subparsers (through this family's
declaration); each command sets ``handler`` to ``async def handler(args, client) -> int`` (the
exit code), and the CLI connects from the environment before calling it.

``agent pending`` finds waiting runs through Temporal visibility: every run that waits for a
person has the Bool search attribute ``AgentWaitingForApproval`` set (the confirmation desk
upserts it), so the listing is ``AgentWaitingForApproval = true AND ExecutionStatus = 'Running'``,
then each run's ``pending_confirmations`` query.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import datetime
from typing import Any

from temporalio.client import Client

from hooks.human_in_the_loop.client import ConfirmationError, list_waiting_runs, submit_decision
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingSummary, ToolDecision

ARGS_WIDTH = 48


def add_approval_commands(subparsers: Any) -> None:
    """Add ``pending``, ``approve``, ``reject`` and ``modify`` to the CLI's subparsers."""
    pending = subparsers.add_parser("pending", help="list every run waiting for approval, with what it waits for")
    pending.add_argument("--json", action="store_true", help="print JSON instead of a table")
    pending.add_argument(
        "--limit",
        type=int,
        default=None,
        help="at most this many runs (default: every waiting run); a cut list ends with a note saying so",
    )
    pending.set_defaults(handler=cmd_pending)

    def decision_parser(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, help=help_text)
        parser.add_argument("run", help="the run id (workflow id)")
        parser.add_argument("call", help="the tool call id (see `agent pending`)")
        parser.add_argument("--approver", default=None, help="who decides (default: the current user)")
        return parser

    decision_parser("approve", "run a pending tool call as requested").set_defaults(handler=cmd_approve)
    reject = decision_parser("reject", "do not run a pending tool call; the model is told why")
    reject.add_argument("--feedback", default=None, help="why (the model sees it)")
    reject.set_defaults(handler=cmd_reject)
    modify = decision_parser("modify", "run a pending tool call with other arguments")
    modify.add_argument(
        "--params", required=True, help='the complete new arguments as JSON, e.g. \'{"path": "/tmp/x"}\''
    )
    modify.add_argument("--feedback", default=None, help="a note for the model about the change")
    modify.set_defaults(handler=cmd_modify)


def _approver(args: argparse.Namespace) -> str | None:
    if args.approver:
        return args.approver
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment
        return None


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_pending_table(rows: list[tuple[str, PendingSummary]]) -> str:
    """A fixed-width table: RUN, CALL, TOOL, ARGUMENTS, REQUESTED, EXPIRES (UTC)."""
    header = ("RUN", "CALL", "TOOL", "ARGUMENTS", "REQUESTED (UTC)", "EXPIRES (UTC)")
    lines = [
        (
            run_id,
            p.tool_call_id,
            p.tool_name,
            _clip(p.arguments_preview, ARGS_WIDTH),
            _when(p.requested_at),
            _when(p.expires_at) + (" → confirm" if p.on_timeout == "confirm" else ""),
        )
        for run_id, p in rows
    ]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *lines]
    )


async def cmd_pending(args: argparse.Namespace, client: Client) -> int:
    """``agent pending``: every pending tool call of every waiting run."""
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    listing = await list_waiting_runs(client, limit=args.limit)
    rows = [(run.run_id, p) for run in listing.runs for p in run.pending]
    note = (
        f"Listed the first {len(listing.runs)} waiting runs (--limit {args.limit}); more are waiting."
        if listing.truncated
        else None
    )
    if getattr(args, "json", False):
        print(json.dumps([{"run_id": r, **p.model_dump(mode="json")} for r, p in rows], indent=2))
        if note:
            print(note, file=sys.stderr)
    elif not rows:
        print("No run is waiting for approval.")
    else:
        print(format_pending_table(rows))
        if note:
            print(note)
    return 0


def _report(record: DecisionRecord, run_id: str) -> int:
    who = f" by {record.approver}" if record.approver else ""
    print(f"{record.action}: {record.tool_name} call {record.tool_call_id} of run {run_id}{who}")
    print(f"  arguments sha256 {record.arguments_sha256}, at {_when(record.decided_at)}")
    return 0


async def _decide(args: argparse.Namespace, client: Client, action: str, **fields: Any) -> int:
    decision = ToolDecision(tool_call_id=args.call, action=action, approver=_approver(args), **fields)
    try:
        record = await submit_decision(client.get_workflow_handle(args.run), decision)
    except ConfirmationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return _report(record, args.run)


async def cmd_approve(args: argparse.Namespace, client: Client) -> int:
    """``agent approve RUN CALL``."""
    return await _decide(args, client, "confirm")


async def cmd_reject(args: argparse.Namespace, client: Client) -> int:
    """``agent reject RUN CALL --feedback TEXT``."""
    return await _decide(args, client, "reject", feedback=args.feedback)


async def cmd_modify(args: argparse.Namespace, client: Client) -> int:
    """``agent modify RUN CALL --params JSON``."""
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as err:
        print(f"error: --params is not valid JSON: {err}", file=sys.stderr)
        return 2
    if not isinstance(params, dict):
        print("error: --params must be a JSON object of the tool's arguments", file=sys.stderr)
        return 2
    return await _decide(args, client, "modify", new_tool_params=params, feedback=args.feedback)
