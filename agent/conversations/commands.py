"""The conversation commands of the ``agent`` CLI: ``send``, ``chat``, ``cancel``, and the
``--replies`` option of ``agent pending`` (runs waiting for a user's reply).

A message and a cancel go by Update, so the run's validator (on a worker) decides: before
sending, each command checks that a worker polls the run's task queue and says so at once when
none does; every wait has a deadline (``--timeout``) and says what it waits for when it takes
more than a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent.client import AgentRunHandle, get_run
from agent.command_line import add_command, add_run_argument
from agent.conversation import ConversationError, MessageRefusedError, NotAcceptedError, new_message_id
from agent.conversations.chat_stream import ChatStream, LiveEventsUnavailable
from agent.conversations.waiting import ReplyListingError, list_waiting_for_reply
from agent.progress import announce_if_slow, wait_within
from agent.run_commands import AgentPathError, load_agent
from agent.workers import why_no_worker
from core.messages import ChatMessage
from core.payloads import MessageReceipt
from core.settings import get_settings

#: How long a command waits for the run to accept a message or a cancel.
ACCEPT_TIMEOUT_SECONDS = 30.0
#: How long ``agent chat`` waits for a turn's answer.
TURN_TIMEOUT_SECONDS = 600.0
#: How long a session ``agent chat --agent`` starts waits for each next message.
CHAT_WAIT_FOR_USER = timedelta(days=30)

_EXAMPLES = {
    "send": 'examples:\n  agent send support-42 "and the other file?"\n'
    '  agent send support-42 "yes, go ahead" --sender ann --message-id ann-0007',
    "chat": "examples:\n  agent chat support-42\n  agent chat support-43 --agent myapp.agents:support_agent --sender ann",
    "cancel": 'examples:\n  agent cancel support-42 --reason "closed by the user"\n'
    '  agent cancel support-42 --reason "stuck on a bad deploy" --force',
}


#: What an ended run means for a message or a cancel.
ENDED = "it takes no more messages and has nothing to cancel"


def add_commands(subparsers: Any) -> None:
    """Add ``send``, ``chat`` and ``cancel``, and ``--replies`` to ``pending`` (added before)."""

    def command(name: str, help_text: str, description: str) -> argparse.ArgumentParser:
        return add_command(subparsers, name, help_text, description, _EXAMPLES[name])

    def timeout_option(parser: argparse.ArgumentParser, what: str, default: float) -> None:
        parser.add_argument(
            "--timeout",
            type=float,
            default=default,
            metavar="SECONDS",
            help=f"how long to wait for {what} (default {default:g})",
        )

    send = command(
        "send",
        "send a message into a run (a session waiting for its user starts its next turn)",
        "Send a message into a run by the send_message Update and print the receipt (message id and the "
        "turn that answers it). The run's validator refuses a message to a finished run, an empty or too "
        "long text, or a sender who is not a participant; the refusal is printed and the exit code is 1.",
    )
    add_run_argument(send)
    send.add_argument("text", metavar="TEXT", help="what to say")
    send.add_argument("--sender", default=None, help="who says it (checked against the agent's participants)")
    send.add_argument("--message-id", default=None, help="your id for the message: sending it again adds nothing")
    timeout_option(send, "the run to accept the message", ACCEPT_TIMEOUT_SECONDS)
    send.set_defaults(handler=cmd_send)

    chat = command(
        "chat",
        "talk to a run: each line you type is sent, and the turn's answer printed as it arrives",
        "Talk to a session interactively: each line typed is sent to the run, and the answer of the turn it "
        "starts is printed as it arrives (token by token when the agent streams tokens), with its tool calls "
        "and approvals, until the turn ends. With --agent and a run id that does not exist, the first "
        "line starts a session of that agent. Ctrl-D ends the chat; the run goes on waiting.",
    )
    add_run_argument(chat, help_text="the run id (workflow id) of the session")
    chat.add_argument(
        "--agent", default=None, metavar="MODULE:ATTR", help="start a session of this Agent when RUN does not exist"
    )
    chat.add_argument("--sender", default=None, help="who says it (checked against the agent's participants)")
    chat.add_argument(
        "--task-queue",
        default=get_settings().task_queue,
        help="with --agent: the task queue (default: $AGENT_TASK_QUEUE or agent)",
    )
    timeout_option(chat, "each turn's answer", TURN_TIMEOUT_SECONDS)
    chat.set_defaults(handler=cmd_chat)

    cancel = command(
        "cancel",
        "end a run cleanly as cancelled",
        "Cancel a run cleanly by the cancel_run Update: tools in flight are cancelled, open tool calls get a "
        "cancelled result, waiting confirmations close, after_run and close run, and the run completes with "
        "exit_reason cancelled. A finished run is an error.",
    )
    add_run_argument(cancel)
    cancel.add_argument("--reason", required=True, help="why (recorded with the cancelled results and confirmations)")
    cancel.add_argument(
        "--force",
        action="store_true",
        help="end the run at once by Temporal's terminate, without running its code (no cancelled tool results, "
        "no after_run): for a stuck run, whose workflow task keeps failing",
    )
    timeout_option(cancel, "the run to end", ACCEPT_TIMEOUT_SECONDS)
    cancel.set_defaults(handler=cmd_cancel)

    pending = subparsers.choices.get("pending")
    if pending is None:
        raise RuntimeError(
            "agent.conversations.commands adds --replies to `agent pending`: list it after the approval commands"
        )
    pending.add_argument(
        "--replies", action="store_true", help="list the sessions waiting for a user's reply instead of tool calls"
    )
    list_calls = pending.get_default("handler")

    async def pending_or_replies(args: argparse.Namespace, client: Client) -> int:
        return await (cmd_pending_replies if args.replies else list_calls)(args, client)

    pending.set_defaults(handler=pending_or_replies)
    pending.epilog = (pending.epilog or "") + "\n  agent pending --replies\n  agent pending --replies --json"


async def _refused(client: Client, run_id: str, what: str) -> bool:
    """Print why no worker can take ``what`` for the run now, and return True; False when one can."""
    refusal = await why_no_worker(client, run_id, what, ENDED)
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
    return refusal is not None


def receipt_line(run_id: str, receipt: MessageReceipt) -> str:
    """``sent to run R: message M, turn N``."""
    return f"sent to run {run_id}: message {receipt.message_id}, turn {receipt.turn}"


async def cmd_send(args: argparse.Namespace, client: Client) -> int:
    """``agent send RUN TEXT``: the message goes with an id (``--message-id``, else a fresh one,
    shown), so sending it again with that id adds nothing."""
    if await _refused(client, args.run, "the message"):
        return 1
    handle = get_run(client, args.run)
    message_id = args.message_id or new_message_id()
    try:
        async with announce_if_slow(
            f"waiting up to {args.timeout:g} s for run {args.run} to accept message {message_id} ..."
        ):
            receipt = await handle.send_message(
                args.text, sender=args.sender, message_id=message_id, timeout=timedelta(seconds=args.timeout)
            )
    except NotAcceptedError as err:
        print(f"error: {err}", file=sys.stderr)
        print(f"to send it again safely: agent send {args.run} ... --message-id {message_id}", file=sys.stderr)
        return 1
    except ConversationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(receipt_line(args.run, receipt))
    print(f"the answer: agent watch {args.run}")
    return 0


async def cmd_cancel(args: argparse.Namespace, client: Client) -> int:
    """``agent cancel RUN --reason TEXT``: cancel, then wait for the run to end and print how;
    ``--force``: Temporal's terminate, for a run whose code cannot run (a stuck run)."""
    if args.force:
        return await _terminate(args, client)
    if await _refused(client, args.run, "the cancel"):
        return 1
    handle = get_run(client, args.run)
    stuck = await _stuck(handle)
    if stuck is not None:  # its workflow task keeps failing: no Update reaches its code
        print(f"error: {stuck}", file=sys.stderr)
        return 1
    try:
        async with announce_if_slow(f"waiting up to {args.timeout:g} s for run {args.run} to accept the cancel ..."):
            await handle.cancel(args.reason, timeout=timedelta(seconds=args.timeout))
    except ConversationError as err:
        print(f"error: {await _stuck(handle) or err}", file=sys.stderr)
        return 1
    result = await wait_within(args.timeout, f"run {args.run} to end", handle.result(), announce=True)
    print(
        f"run {args.run} cancelled ({args.reason}): exit_reason {result.exit_reason}, turn {result.turn}, "
        f"{len(result.messages)} messages kept"
    )
    return 0


async def _stuck(handle: AgentRunHandle) -> str | None:
    """For a stuck run (its workflow task keeps failing, so no Update reaches its code): what is
    failing and the two ways on; None for any other run."""
    try:
        health = await handle.health()
    except RPCError:
        return None
    task = health.failing_workflow_task
    if task is None:
        return None
    run = handle.run_id
    return (
        f"run {run} cannot take the cancel: it is stuck, its workflow task keeps failing (attempt {task.attempt}): "
        f"{task.error}. A cancel runs the run's own code (cancelled results, after_run), which fails now. "
        f"Either fix it ({task.fix}) and cancel again, or end it at once without its code: "
        f'agent cancel {run} --force --reason "..." (Temporal\'s terminate).'
    )


async def _terminate(args: argparse.Namespace, client: Client) -> int:
    """``agent cancel RUN --force``: Temporal's terminate, recorded with the reason."""
    try:
        await client.get_workflow_handle(args.run).terminate(reason=args.reason)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            print(f"error: No running run '{args.run}' in namespace '{client.namespace}'.", file=sys.stderr)
            return 1
        raise
    print(
        f"run {args.run} terminated ({args.reason}): Temporal ended it without running its code (no cancelled "
        "tool results, no after_run); its history keeps everything up to now"
    )
    return 0


async def cmd_pending_replies(args: argparse.Namespace, client: Client) -> int:
    """``agent pending --replies``: the sessions waiting for a user's reply."""
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        runs, truncated = await list_waiting_for_reply(client, limit=args.limit)
    except ReplyListingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([run.as_json() for run in runs], indent=2))
    elif not runs:
        print("No run is waiting for a reply.")
    else:
        header = ("RUN", "TURN", "WAITING SINCE (UTC)", "LAST MESSAGE", "REPLY WITH")
        rows = [
            (r.run_id, str(r.turn or ""), r.since[:19].replace("T", " "), _clip(r.last_message, 48), r.reply_command())
            for r in runs
        ]
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    if truncated:
        print(f"Listed the first {len(runs)} waiting runs (--limit {args.limit}); more are waiting.", file=sys.stderr)
    return 0


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


async def _read_line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def cmd_chat(args: argparse.Namespace, client: Client) -> int:
    """``agent chat RUN``: a line typed is a message; its turn's answer is printed; EOF ends the chat."""
    agent = None
    if args.agent:
        try:
            agent = load_agent(args.agent)
        except AgentPathError as err:
            print(f"agent: error: {err}", file=sys.stderr)
            return 2
    status = await _status(client, args.run)
    exists = status == "RUNNING"
    if status is not None and not exists:
        # --agent would start a new run under the same id, and the finished one would read as this chat.
        print(
            f"error: run '{args.run}' has ended ({status.lower()}): it takes no more messages. "
            f"`agent result {args.run}` shows how it ended; to talk to "
            + (
                f"{args.agent} again, give a new run id."
                if agent
                else "the agent again, start a new run id with --agent."
            ),
            file=sys.stderr,
        )
        return 1
    if not exists and agent is None:
        print(
            f"error: No running run '{args.run}' in namespace '{client.namespace}' (give --agent to start one).",
            file=sys.stderr,
        )
        return 1
    print(
        f"chat with run {args.run}"
        + ("" if exists else f" (the first line starts it on task queue {args.task_queue})")
        + ": type a message and press Enter; Ctrl-D ends the chat (the run goes on)",
        flush=True,
    )
    handle: AgentRunHandle | None = get_run(client, args.run) if exists else None
    stream: ChatStream | None = None
    while True:
        line = await _read_line()
        if not line:
            print(f"chat ended; run {args.run} goes on (agent cancel {args.run} --reason ... ends it)")
            return 0
        text = line.rstrip("\n")
        if not text.strip():
            continue
        try:
            if handle is None:
                handle = await agent.send(  # type: ignore[union-attr]
                    client,
                    args.run,
                    text,
                    task_queue=args.task_queue,
                    sender=args.sender,
                    wait_for_user=CHAT_WAIT_FOR_USER,
                )
                receipt = handle.last_receipt
            else:
                if await _refused(client, args.run, "the message"):
                    return 1
                receipt = await wait_within(
                    ACCEPT_TIMEOUT_SECONDS,
                    f"run {args.run} to accept the message",
                    handle.send_message(text, sender=args.sender),
                    announce=True,
                )
            assert receipt is not None
            print(f"[{receipt_line(args.run, receipt)}]", flush=True)
            stream = stream or ChatStream(handle)
            exit_reason = await _answer(args, handle, stream, receipt.turn)
        except MessageRefusedError as err:
            print(f"refused: {err}", file=sys.stderr, flush=True)
            continue
        except ConversationError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(f"[turn {receipt.turn} ended: exit_reason {exit_reason}]", flush=True)


async def _answer(args: argparse.Namespace, handle: AgentRunHandle, stream: ChatStream, turn: int) -> str:
    """Print turn ``turn``'s answer as it streams and return its exit reason; a run whose live
    events cannot be read is waited for and its answer printed when the turn ends."""
    what = f"turn {turn} of run {args.run} to answer"
    try:
        return await wait_within(args.timeout, what, stream.follow_turn(turn), announce=False)
    except LiveEventsUnavailable as err:
        if err.printed:
            print(f"[the run's live events stopped ({err}); waiting for the turn to end]", flush=True)
        result = await wait_within(
            args.timeout, what, handle.wait_turn(turn, timeout=timedelta(seconds=args.timeout)), announce=True
        )
        if not err.printed:
            print(f"assistant: {_answer_text(result.last_message)}", flush=True)
        return str(result.exit_reason)


def _answer_text(message: ChatMessage | None) -> str:
    if message is None:
        return "(no message)"
    if message.text:
        return message.text
    return f"({message.role.value} message without text)"


async def _status(client: Client, run_id: str) -> str | None:
    """Temporal's status name of run ``run_id`` (``RUNNING``, ``COMPLETED``, ...), None when there is none."""
    try:
        description = await client.get_workflow_handle(run_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    return description.status.name if description.status else "UNKNOWN"
