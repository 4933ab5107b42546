"""``agent approve --interactive [RUN [CALL]]``: a person answers each pending call through a
``ConfirmationUI``.

Each call is asked through the UI its request names (``BlockingConfirmationStrategy``'s UI;
``SimpleConsoleUI`` when it names none): the person confirms, rejects with a reason, or modifies
the arguments, and each answer goes to the run by the validated Update. An answer the run refuses
(new arguments that fail the tool's JSON schema, for one) is shown with the run's reason and the
call is asked again.

Modify takes the complete new arguments as one JSON object (read by
:func:`agent.approvals.decisions.parse_new_tool_params`, as ``agent modify --params`` and the
inbox read them): the project's console UIs are asked through subclasses whose edit step reads
JSON, while the classes in ``hooks.human_in_the_loop`` keep Haystack's field-by-field edit for
local runs.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from typing import Any

from temporalio.client import Client, WorkflowHandle

from agent.approvals.decisions import (
    DEFAULT_TIMEOUT,
    ConfirmationError,
    DecisionRefusedError,
    ModifyParamsError,
    parse_new_tool_params,
    query_pending,
    submit_decision,
)
from agent.approvals.waiting import list_waiting_runs
from agent.progress import announce_if_slow
from agent.workers import why_no_worker
from core.serialization import import_object, object_from_dict
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.protocol import ConfirmationUI
from hooks.human_in_the_loop.registry import approver_refusal
from hooks.human_in_the_loop.templates import as_ui_result
from hooks.human_in_the_loop.user_interfaces import RichConsoleUI, SimpleConsoleUI

#: The prompt of the modify step.
ARGUMENTS_PROMPT = "New arguments as one JSON object (Enter keeps them)"


def _as_json(params: dict[str, Any]) -> str:
    return json.dumps(params, ensure_ascii=False)


class JsonArgumentsConsoleUI(SimpleConsoleUI):
    """:class:`SimpleConsoleUI` whose modify step reads the complete new arguments as JSON."""

    @staticmethod
    def _edit(tool_params: dict[str, Any]) -> dict[str, Any]:
        current = _as_json(tool_params)
        while True:
            typed = input(f"{ARGUMENTS_PROMPT}\n  [{current}]: ").strip() or current
            try:
                return parse_new_tool_params(typed)
            except ModifyParamsError as err:
                print(f"  {err}; try again.")


class JsonArgumentsRichConsoleUI(RichConsoleUI):
    """:class:`RichConsoleUI` whose modify step reads the complete new arguments as JSON."""

    def _edit(self, tool_params: dict[str, Any], prompt: Any) -> dict[str, Any]:
        console = self._terminal()
        while True:
            typed = prompt.ask(ARGUMENTS_PROMPT, default=_as_json(tool_params), console=console)
            try:
                return parse_new_tool_params(typed)
            except ModifyParamsError as err:
                console.print(f"[red]{err}; try again.[/red]", markup=True, highlight=False)


def json_arguments_ui(ui: ConfirmationUI) -> ConfirmationUI:
    """``ui``, with the JSON modify step when it is one of the project's console UIs."""
    if type(ui) is SimpleConsoleUI:
        return JsonArgumentsConsoleUI()
    if type(ui) is RichConsoleUI:
        return JsonArgumentsRichConsoleUI(console=ui.console)
    return ui


def load_ui(import_path: str) -> ConfirmationUI:
    """The UI class ``--ui`` names, built with no arguments.

    :raises ValueError: When the path does not import.
    :raises TypeError: When the class needs arguments.
    """
    return json_arguments_ui(import_object(import_path)())


def confirmation_ui_for(request: PendingConfirmation) -> ConfirmationUI:
    """The UI ``request`` names (rebuilt from its import path), or :class:`SimpleConsoleUI` when it
    names none or this process cannot import it (a note says so); with the JSON modify step."""
    if request.confirmation_ui:
        try:
            ui = object_from_dict(dict(request.confirmation_ui))
            if not callable(getattr(ui, "get_user_confirmation", None)):
                raise TypeError(f"{type(ui).__name__} has no get_user_confirmation()")
            return json_arguments_ui(ui)
        except (ValueError, TypeError, ImportError) as err:
            print(f"note: cannot load the run's confirmation UI ({err}); asking with SimpleConsoleUI instead.")
    return JsonArgumentsConsoleUI()


def when(moment: datetime | None) -> str:
    """``2026-12-02 12:50:37Z``, or ``-`` for None."""
    return moment.strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def report_decision(record: DecisionRecord, run_id: str) -> None:
    """Two lines on a decision the run recorded: what, on which call, by whom, hash and time."""
    who = f" by {record.approver}" if record.approver else ""
    print(f"{record.action}: {record.tool_name} call {record.tool_call_id} of run {run_id}{who}")
    print(f"  arguments sha256 {record.arguments_sha256}, at {when(record.decided_at)}")


async def approve_interactively(
    client: Client,
    run_id: str | None = None,
    call_id: str | None = None,
    approver: str | None = None,
    ui: ConfirmationUI | None = None,
    timeout: timedelta = DEFAULT_TIMEOUT,
) -> int:
    """Ask a person about every pending call of ``run_id`` (default: of every waiting run) and send
    each answer by the validated Update.

    Calls a run publishes while the walk goes on (a second call of a tool under ``AskOncePolicy``
    is asked after the first is decided) are walked too; a call decided meanwhile by someone else
    is skipped.

    :param client: A client with the project's data converter.
    :param run_id: The run to walk; None for every run that waits for approval (``list_waiting_runs``).
    :param call_id: Only this call of ``run_id``.
    :param approver: Recorded as who decided.
    :param ui: Ask through this UI instead of the ones the runs name.
    :param timeout: How long to wait for a run to answer each query and decision.
    :returns: 0 when every call was decided (or none waited), 1 when a run or call could not be
        decided (unknown run, no worker, unknown call, or a call whose ``approvers`` do not include
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
        refusal = await why_no_worker(client, current, "the decisions")
        if refusal is not None:
            print(f"error: {refusal}", file=sys.stderr)
            failed = True
            continue
        handle = client.get_workflow_handle(current)
        seen: set[str] = set()
        while True:
            try:
                pending = [p for p in await query_pending(handle, timeout) if p.tool_call_id not in seen]
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
                chosen = json_arguments_ui(ui) if ui is not None else confirmation_ui_for(request)
                if await _ask_until_accepted(handle, request, approver, chosen, timeout):
                    decided += 1
    if decided == 0 and not failed:
        print("No pending call to decide.")
    return 1 if failed else 0


async def _ask_until_accepted(
    handle: WorkflowHandle, request: PendingConfirmation, approver: str | None, ui: ConfirmationUI, timeout: timedelta
) -> bool:
    """Ask about one call until the run accepts an answer; False when it can no longer be decided."""
    outcome = "confirmed" if request.on_timeout == "confirm" else "rejected"
    expires = f"; unanswered, it is {outcome} at {when(request.expires_at)}" if request.expires_at else ""
    print(f"\nRun {handle.id}, call {request.tool_call_id} (waiting since {when(request.requested_at)}{expires})")
    while True:
        # The UI prompts synchronously (as Haystack's do): Ctrl-C interrupts it at once.
        try:
            raw = ui.get_user_confirmation(request.tool_name, request.tool_description, dict(request.tool_params))
        except ImportError as err:  # e.g. RichConsoleUI where rich is not installed
            print(f"note: {err}; asking with SimpleConsoleUI instead.")
            ui = JsonArgumentsConsoleUI()
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
        waiting = f"waiting up to {timeout.total_seconds():g} s for run {handle.id} to accept the {answer.action} ..."
        try:
            async with announce_if_slow(waiting, out=sys.stdout):
                record = await submit_decision(handle, decision, timeout)
        except DecisionRefusedError as err:
            if not await _still_pending(handle, request.tool_call_id, timeout):
                print(f"skipped: {err}")
                return False
            print(f"refused: {err}\nAsking again.")
            continue
        except ConfirmationError as err:
            print(f"skipped: {err}")
            return False
        report_decision(record, handle.id)
        return True


async def _still_pending(handle: WorkflowHandle, call_id: str, timeout: timedelta) -> bool:
    try:
        return any(p.tool_call_id == call_id for p in await query_pending(handle, timeout))
    except ConfirmationError:
        return False
