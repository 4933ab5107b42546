"""The approval commands of the ``agent`` CLI: ``pending``, ``approve``, ``reject``, ``modify``.

The CLI calls :func:`add_commands` on its subparsers; each command sets ``handler`` to
``async def handler(args, client) -> int`` (the exit code), and the CLI connects from the
environment before calling it.

``agent pending`` lists waiting runs from visibility (:mod:`agent.approvals.waiting`): no run is
queried, so it answers with every worker down. A decision needs a worker (the run's validator
runs there): before sending one, the command checks that a worker polls the run's task queue
and says so at once when none does; then it waits at most ``--timeout`` seconds, saying what for.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from agent.approvals.batch import decide_all
from agent.approvals.decisions import (
    DEFAULT_TIMEOUT,
    ConfirmationError,
    ModifyParamsError,
    default_approver,
    parse_new_tool_params,
    submit_decision,
)
from agent.approvals.interactive import approve_interactively, load_ui, report_decision, when
from agent.approvals.waiting import iter_waiting_runs, list_waiting_runs
from agent.command_line import add_command, add_run_argument
from agent.progress import announce_if_slow
from agent.workers import why_no_worker
from hooks.human_in_the_loop.dataclasses import PendingSummary, ToolDecision

ARGS_WIDTH = 48

_EXAMPLES = {
    "pending": "examples:\n  agent pending\n  agent pending --json --limit 50",
    "approve": "examples:\n  agent approve run-1 call_7f3\n  agent approve run-1 call_7f3 --approver ann\n"
    "  agent approve --interactive run-1\n  agent approve run-1 --all\n  agent approve run-1 --tool delete_file",
    "reject": 'examples:\n  agent reject run-1 call_7f3 --feedback "never in production"',
    "modify": 'examples:\n  agent modify run-1 call_8a1 --params \'{"a": 2, "b": 3}\'',
}


def approver_help() -> str:
    """The ``--approver`` help: the one default, as it resolves here."""
    return f"who decides, recorded with the decision (default: $AGENT_APPROVER, else your OS user name: {default_approver()!r})"


def add_commands(subparsers: Any) -> None:
    """Add ``pending``, ``approve``, ``reject`` and ``modify`` to the CLI's subparsers."""

    def command(name: str, help_text: str, description: str) -> argparse.ArgumentParser:
        return add_command(subparsers, name, help_text, description, _EXAMPLES[name])

    pending = command(
        "pending",
        "list every run waiting for approval, with what it waits for",
        "List every pending tool call of every run waiting for a person, from Temporal visibility "
        "(no run is queried, so it works with every worker down). A sub-agent's child run "
        "(Agent.as_tool) is listed under its own id, PARENT/CALL, with a PARENT column.",
    )
    pending.add_argument("--json", action="store_true", help="print JSON instead of a table")
    pending.add_argument(
        "--limit",
        type=int,
        default=None,
        help="at most this many runs (default: every waiting run); a cut list ends with a note saying so",
    )
    pending.set_defaults(handler=cmd_pending)

    def decision_options(parser: argparse.ArgumentParser, optional: bool = False) -> None:
        add_run_argument(
            parser, optional, "the run id (workflow id)" + ("; with --interactive, optional" if optional else "")
        )
        parser.add_argument(
            "call",
            metavar="CALL",
            nargs="?" if optional else None,
            help="the tool call id (see `agent pending`)" + ("; with --interactive, optional" if optional else ""),
        )
        parser.add_argument("--approver", default=None, help=approver_help())
        parser.add_argument(
            "--timeout",
            type=float,
            default=DEFAULT_TIMEOUT.total_seconds(),
            metavar="SECONDS",
            help=f"how long to wait for the run to accept (default {DEFAULT_TIMEOUT.total_seconds():g})",
        )

    approve = command(
        "approve",
        "run a pending tool call as requested; with --interactive, decide every pending call through "
        "the run's ConfirmationUI",
        "Confirm a pending tool call: the run executes it with the arguments it asked for. The run's "
        "validator (on a worker) checks the decision before it is recorded.",
    )
    decision_options(approve, optional=True)
    approve.add_argument(
        "--interactive",
        "-i",
        action="store_true",
        help="walk the pending calls of RUN (default: of every waiting run), asking through the UI each run "
        "names (default SimpleConsoleUI): confirm, reject with a reason, or modify with the complete new "
        "arguments as JSON",
    )
    approve.add_argument(
        "--all",
        action="store_true",
        help="confirm every call RUN is waiting on, each validated by the run on its own; prints the outcome per "
        "call (exit 1 if any was refused or none waits)",
    )
    approve.add_argument(
        "--tool",
        default=None,
        metavar="NAME",
        help="confirm every waiting call of this tool in RUN (as --all, for one tool)",
    )
    approve.add_argument(
        "--ui",
        default=None,
        metavar="IMPORT_PATH",
        help="with --interactive: ask through this ConfirmationUI class instead "
        "(e.g. hooks.human_in_the_loop.user_interfaces.RichConsoleUI)",
    )
    approve.set_defaults(handler=cmd_approve)
    reject = command(
        "reject",
        "do not run a pending tool call; the model is told why",
        "Reject a pending tool call: it does not run, and the model gets a tool error with the feedback.",
    )
    decision_options(reject)
    reject.add_argument("--feedback", default=None, help="why (the model sees it)")
    reject.set_defaults(handler=cmd_reject)
    modify = command(
        "modify",
        "run a pending tool call with other arguments",
        "Run a pending tool call with other arguments, given as the complete new arguments in JSON; "
        "the run checks them against the tool's JSON schema.",
    )
    decision_options(modify)
    modify.add_argument(
        "--params", required=True, help='the complete new arguments as JSON, e.g. \'{"path": "/tmp/x"}\''
    )
    modify.add_argument("--feedback", default=None, help="a note for the model about the change")
    modify.set_defaults(handler=cmd_modify)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_pending_table(rows: list[tuple[str, PendingSummary]]) -> str:
    """A fixed-width table: RUN, CALL, TOOL, ARGUMENTS, REQUESTED, EXPIRES (UTC), and PARENT (the
    run a sub-agent's child run belongs to) when a listed run is one."""
    header: tuple[str, ...] = ("RUN", "CALL", "TOOL", "ARGUMENTS", "REQUESTED (UTC)", "EXPIRES (UTC)")
    lines: list[tuple[str, ...]] = [
        (
            run_id,
            p.tool_call_id,
            p.tool_name,
            _clip(p.arguments_preview, ARGS_WIDTH),
            when(p.requested_at),
            when(p.expires_at) + (" → confirm" if p.on_timeout == "confirm" else ""),
        )
        for run_id, p in rows
    ]
    if any(p.parent_run_id for _, p in rows):
        header += ("PARENT",)
        lines = [(*line, p.parent_run_id or "") for line, (_, p) in zip(lines, rows, strict=True)]
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *lines]
    )


async def cmd_pending(args: argparse.Namespace, client: Client) -> int:
    """``agent pending``: every pending tool call of every waiting run."""
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        return await _print_pending_json(client, args.limit)
    listing = await list_waiting_runs(client, limit=args.limit)
    rows = [(run.run_id, p) for run in listing.runs for p in run.pending]
    if not rows:
        print("No run is waiting for approval.")
    else:
        print(format_pending_table(rows))
        if listing.truncated:
            print(_truncated_note(len(listing.runs), args.limit))
    return 0


def _truncated_note(listed: int, limit: int | None) -> str:
    return f"Listed the first {listed} waiting runs (--limit {limit}); more are waiting."


async def _print_pending_json(client: Client, limit: int | None) -> int:
    """``agent pending --json``: a JSON array, one object a pending call, printed as visibility
    pages arrive (the first rows show before the last page is read); a cut list ends with a
    note on stderr."""
    listed, truncated, first = 0, False, True
    listing = iter_waiting_runs(client)
    sys.stdout.write("[")
    try:
        async for run in listing:
            if limit is not None and listed >= limit:
                truncated = True
                break
            listed += 1
            for p in run.pending:
                item = json.dumps({"run_id": run.run_id, **p.model_dump(mode="json")})
                sys.stdout.write(("\n  " if first else ",\n  ") + item)
                first = False
    finally:
        await listing.aclose()
    # Closed only on success: a listing that failed half-way leaves invalid JSON, not a short list.
    sys.stdout.write("]\n" if first else "\n]\n")
    sys.stdout.flush()
    if truncated:
        print(_truncated_note(listed, limit), file=sys.stderr)
    return 0


async def _decide(args: argparse.Namespace, client: Client, action: str, **fields: Any) -> int:
    timeout = timedelta(seconds=args.timeout)
    refusal = await why_no_worker(client, args.run, "the decision")
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    decision = ToolDecision(
        tool_call_id=args.call, action=action, approver=args.approver or default_approver(), **fields
    )
    waiting = f"waiting up to {args.timeout:g} s for run {args.run} to accept the {action} of call {args.call} ..."
    try:
        async with announce_if_slow(waiting):
            record = await submit_decision(client.get_workflow_handle(args.run), decision, timeout=timeout)
    except ConfirmationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    report_decision(record, args.run)
    return 0


async def cmd_approve(args: argparse.Namespace, client: Client) -> int:
    """``agent approve RUN CALL``, ``agent approve RUN --all`` / ``--tool NAME``, or ``agent approve --interactive [RUN [CALL]]``."""
    if args.all or args.tool:
        return await _approve_batch(args, client)
    if getattr(args, "interactive", False):
        ui = None
        if args.ui:
            try:
                ui = load_ui(args.ui)
            except (ValueError, TypeError) as err:
                print(f"error: --ui {args.ui}: {err}", file=sys.stderr)
                return 2
        return await approve_interactively(
            client,
            run_id=args.run,
            call_id=args.call,
            approver=args.approver or default_approver(),
            ui=ui,
            timeout=timedelta(seconds=args.timeout),
        )
    if not args.run or not args.call:
        print(
            "error: agent approve needs RUN and CALL (see `agent pending`), --all or --tool NAME to approve a run's "
            "waiting calls at once, or --interactive to walk the pending calls through the run's confirmation UI",
            file=sys.stderr,
        )
        return 2
    if args.ui:
        print("error: --ui only applies with --interactive", file=sys.stderr)
        return 2
    return await _decide(args, client, "confirm")


async def _approve_batch(args: argparse.Namespace, client: Client) -> int:
    """``agent approve RUN --all`` / ``--tool NAME``: one decision per waiting call, one line per outcome."""
    if not args.run or args.call or args.interactive or args.ui:
        print("error: --all and --tool take RUN only (no CALL, --interactive or --ui)", file=sys.stderr)
        return 2
    refusal = await why_no_worker(client, args.run, "the decisions")
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    which = f"the waiting {args.tool} calls" if args.tool else "every waiting call"
    try:
        async with announce_if_slow(f"approving {which} of run {args.run} ..."):
            outcomes = await decide_all(
                client.get_workflow_handle(args.run),
                approver=args.approver or default_approver(),
                tool=args.tool,
                timeout=timedelta(seconds=args.timeout),
            )
    except ConfirmationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not outcomes:
        print(f"error: run {args.run} has no waiting call{f' of {args.tool}' if args.tool else ''}", file=sys.stderr)
        return 1
    for outcome in outcomes:
        print(outcome.line())
    accepted = sum(outcome.accepted for outcome in outcomes)
    print(f"{accepted} of {len(outcomes)} approved in run {args.run}")
    return 0 if accepted == len(outcomes) else 1


async def cmd_reject(args: argparse.Namespace, client: Client) -> int:
    """``agent reject RUN CALL --feedback TEXT``."""
    return await _decide(args, client, "reject", feedback=args.feedback)


async def cmd_modify(args: argparse.Namespace, client: Client) -> int:
    """``agent modify RUN CALL --params JSON``."""
    try:
        params = parse_new_tool_params(args.params)
    except ModifyParamsError as err:
        print(f"error: --params: {err}", file=sys.stderr)
        return 2
    return await _decide(args, client, "modify", new_tool_params=params, feedback=args.feedback)
