"""This family's ``agent`` subcommands: ``pending``, ``approve``, ``reject``, ``modify``.

The ``agent`` CLI calls :func:`add_approval_commands` on its subparsers (through this family's
declaration); each command sets ``handler`` to ``async def handler(args, client) -> int`` (the
exit code), and the CLI connects from the environment before calling it.

``agent pending`` finds waiting runs through Temporal visibility: every run that waits for a
person has the Bool search attribute ``AgentWaitingForApproval`` set (the confirmation registry
upserts it), so the listing is ``AgentWaitingForApproval = true AND ExecutionStatus = 'Running'``,
and each run's pending calls come from its memo (one visibility listing, no per-run query).

``agent approve --interactive [RUN [CALL]]`` walks the pending calls of RUN (or of every waiting
run) through the ``ConfirmationUI`` each request names (``BlockingConfirmationStrategy``'s UI;
``SimpleConsoleUI`` when it names none): the person confirms, rejects with a reason, or modifies
the arguments, and each answer goes to the run by the validated Update. An answer the run refuses
(new arguments that fail the tool's JSON schema, for one) is shown with the run's reason and the
call is asked again.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import datetime
from typing import Any

from temporalio.client import Client, WorkflowHandle

from core.serialization import import_object, object_from_dict
from hooks.human_in_the_loop.client import (
    ConfirmationError,
    DecisionRefusedError,
    iter_waiting_runs,
    list_waiting_runs,
    query_pending,
    submit_decision,
)
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, PendingSummary, ToolDecision
from hooks.human_in_the_loop.protocol import ConfirmationUI
from hooks.human_in_the_loop.registry import approver_refusal
from hooks.human_in_the_loop.strategies import as_ui_result
from hooks.human_in_the_loop.user_interfaces import SimpleConsoleUI

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

    approve = subparsers.add_parser(
        "approve",
        help="run a pending tool call as requested; with --interactive, decide every pending call through "
        "the run's ConfirmationUI",
    )
    approve.add_argument("run", nargs="?", help="the run id (workflow id); with --interactive, optional")
    approve.add_argument("call", nargs="?", help="the tool call id (see `agent pending`); with --interactive, optional")
    approve.add_argument("--approver", default=None, help="who decides (default: the current user)")
    approve.add_argument(
        "--interactive",
        "-i",
        action="store_true",
        help="walk the pending calls of RUN (default: of every waiting run), asking through the UI each run "
        "names (default SimpleConsoleUI): confirm, reject with a reason, or modify the arguments",
    )
    approve.add_argument(
        "--ui",
        default=None,
        metavar="IMPORT_PATH",
        help="with --interactive: ask through this ConfirmationUI class instead "
        "(e.g. hooks.human_in_the_loop.user_interfaces.RichConsoleUI)",
    )
    approve.set_defaults(handler=cmd_approve)
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
    """``agent approve RUN CALL``, or ``agent approve --interactive [RUN [CALL]]``."""
    if getattr(args, "interactive", False):
        ui = None
        if args.ui:
            try:
                ui = import_object(args.ui)()
            except (ValueError, TypeError) as err:
                print(f"error: --ui {args.ui}: {err}", file=sys.stderr)
                return 2
        return await approve_interactively(client, run_id=args.run, call_id=args.call, approver=_approver(args), ui=ui)
    if not args.run or not args.call:
        print(
            "error: agent approve needs RUN and CALL (see `agent pending`), or --interactive to walk the pending "
            "calls through the run's confirmation UI",
            file=sys.stderr,
        )
        return 2
    if args.ui:
        print("error: --ui only applies with --interactive", file=sys.stderr)
        return 2
    return await _decide(args, client, "confirm")


# -- agent approve --interactive ---------------------------------------------------------------


def confirmation_ui_for(request: PendingConfirmation) -> ConfirmationUI:
    """The UI ``request`` names (rebuilt from its import path), or :class:`SimpleConsoleUI` when it
    names none or this process cannot import it (a note says so)."""
    if request.confirmation_ui:
        try:
            return object_from_dict(dict(request.confirmation_ui))
        except (ValueError, TypeError, ImportError) as err:
            print(f"note: cannot load the run's confirmation UI ({err}); asking with SimpleConsoleUI instead.")
    return SimpleConsoleUI()


async def approve_interactively(
    client: Client,
    run_id: str | None = None,
    call_id: str | None = None,
    approver: str | None = None,
    ui: ConfirmationUI | None = None,
) -> int:
    """Ask a person about every pending call of ``run_id`` (default: of every waiting run) and send
    each answer by the validated Update (what ``agent approve --interactive`` runs).

    Each call is asked through ``ui`` if given, else the UI its request names
    (:func:`confirmation_ui_for`). An answer the run refuses (new arguments failing the tool's JSON
    schema, a reason over the size limit, an unknown action) is printed with the run's reason and
    the call is asked again; a call decided meanwhile by someone else is skipped. Calls a run
    publishes while the walk goes on (a second call of a tool under ``AskOncePolicy`` is asked after
    the first is decided) are walked too.

    :param client: A client with the project's data converter.
    :param run_id: The run to walk; None for every run that waits for approval (``list_waiting_runs``).
    :param call_id: Only this call of ``run_id``.
    :param approver: Recorded as who decided.
    :param ui: Ask through this UI instead of the ones the runs name.
    :returns: 0 when every call was decided (or none waited), 1 when a run or call could not be
        decided (unknown run, unknown call, or a call whose ``approvers`` do not include
        ``approver``: it is not asked, since the run would refuse every answer).
    :raises EOFError: When the UI's input ends before an answer.
    """
    if run_id is None:
        if call_id is not None:
            print("error: a CALL needs its RUN", file=sys.stderr)
            return 2
        run_ids = [run.run_id for run in (await list_waiting_runs(client)).runs]
    else:
        run_ids = [run_id]
    decided = 0
    failed = False
    for current in run_ids:
        handle = client.get_workflow_handle(current)
        seen: set[str] = set()
        while True:
            try:
                pending = [p for p in await query_pending(handle) if p.tool_call_id not in seen]
            except ConfirmationError as err:
                print(f"error: {err}", file=sys.stderr)
                failed = True
                break
            if call_id is not None:
                if not seen and not any(p.tool_call_id == call_id for p in pending):
                    waiting = ", ".join(p.tool_call_id for p in pending) or "none"
                    print(
                        f"error: run {current} has no pending call '{call_id}' (pending: {waiting})",
                        file=sys.stderr,
                    )
                    failed = True
                pending = [p for p in pending if p.tool_call_id == call_id]
            if not pending:
                break
            for request in pending:
                seen.add(request.tool_call_id)
                refusal = approver_refusal(request, approver)
                if refusal is not None:  # the run would refuse every answer: do not ask
                    print(f"error: run {current}: {refusal}", file=sys.stderr)
                    failed = True
                    continue
                if await _ask_until_accepted(handle, request, approver, ui or confirmation_ui_for(request)):
                    decided += 1
    if decided == 0 and not failed:
        print("No pending call to decide.")
    return 1 if failed else 0


async def _ask_until_accepted(
    handle: WorkflowHandle, request: PendingConfirmation, approver: str | None, ui: ConfirmationUI
) -> bool:
    """Ask about one call until the run accepts an answer; False when it can no longer be decided."""
    outcome = "confirmed" if request.on_timeout == "confirm" else "rejected"
    expires = f"; unanswered, it is {outcome} at {_when(request.expires_at)}" if request.expires_at else ""
    print(f"\nRun {handle.id}, call {request.tool_call_id} (waiting since {_when(request.requested_at)}{expires})")
    while True:
        # The UI prompts synchronously (as Haystack's do): Ctrl-C interrupts it at once.
        try:
            raw = ui.get_user_confirmation(request.tool_name, request.tool_description, dict(request.tool_params))
        except ImportError as err:  # e.g. RichConsoleUI where rich is not installed
            print(f"note: {err}; asking with SimpleConsoleUI instead.")
            ui = SimpleConsoleUI()
            continue
        answer = as_ui_result(raw)
        decision = ToolDecision(
            tool_call_id=request.tool_call_id,
            action=answer.action,
            feedback=answer.feedback,
            new_tool_params=answer.new_tool_params if answer.action == "modify" else None,
            approver=approver,
            arguments_sha256=request.arguments_sha256 or None,
        )
        try:
            record = await submit_decision(handle, decision)
        except DecisionRefusedError as err:
            if not await _still_pending(handle, request.tool_call_id):
                print(f"skipped: {err}")
                return False
            print(f"refused: {err}\nAsking again.")
            continue
        except ConfirmationError as err:
            print(f"skipped: {err}")
            return False
        _report(record, handle.id)
        return True


async def _still_pending(handle: WorkflowHandle, call_id: str) -> bool:
    try:
        return any(p.tool_call_id == call_id for p in await query_pending(handle))
    except ConfirmationError:
        return False


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
