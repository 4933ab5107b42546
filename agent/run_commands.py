"""The run commands of the ``agent`` CLI: ``run``, ``status``, ``runs``, ``watch``, ``result``.

Each says what it waits for. ``status`` describes a run from the server (``describe()`` and the
history), so it answers at once with every worker down, and exits 1 for a run that failed, was
cancelled, terminated or timed out, naming the innermost cause, and 3 (:data:`STUCK_EXIT_CODE`)
for a stuck run, whose workflow task keeps failing: attempt, error, the fix and, for
non-determinism, a hint (:mod:`agent.run_problems`). ``run --wait`` follows the run
(its step, the calls waiting for approval and how to approve them) and, on failure, prints the
whole reason. Each command sets ``handler`` to ``async def handler(args, client) -> int``.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from agent.agent import Agent
from agent.client import get_run
from agent.command_line import add_command, add_run_argument
from agent.dev.demo import demo_agent
from agent.progress import wait_within
from agent.run_endings import cut_calls, ending_line, message_text
from agent.run_problems import health_lines
from agent.watch import watch
from agent.workers import run_service, workers_of
from core.messages import ChatMessage
from core.payloads import RunStatus
from core.settings import get_settings
from core.wire import RUN_STATUS_QUERY, WORKFLOW_TYPE
from hooks.human_in_the_loop.dataclasses import PendingSummary
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY, WAITING_FOR_APPROVAL
from runtime.tool_loading import ToolSpecError, resolve_spec

#: Run states that are not a success: ``agent status`` exits 1 for them.
UNSUCCESSFUL = ("FAILED", "CANCELED", "TERMINATED", "TIMED_OUT")
#: ``agent status``'s exit code for a stuck run: open, but its workflow task keeps failing.
STUCK_EXIT_CODE = 3
#: How long ``agent status`` waits for the run's own status query (a worker answers it).
STATUS_QUERY_SECONDS = 3


class AgentPathError(Exception):
    """``--agent`` does not name an ``Agent`` (a usage error: exit 2)."""


def load_agent(path: str) -> Agent:
    """The ``Agent`` that ``module:attr`` names: an ``Agent`` instance, or a zero-argument callable
    returning one. The module is found as ``--tools`` finds one (``runtime.tool_loading.resolve_spec``:
    the current directory is importable, as with ``python -m``).

    :raises AgentPathError: For a malformed path, a missing module or attribute, an import that
        fails, or something that is not an ``Agent``.
    """
    _, sep, attr = path.partition(":")
    # resolve_spec also takes the dotted form ``module.attr``; --agent has always asked for the colon.
    if not sep or not attr or path.startswith(":"):
        raise AgentPathError(f"--agent {path!r}: expected module:attribute, e.g. myapp.agents:support_agent")
    try:
        target: object = resolve_spec(path, "--agent")
    except ToolSpecError as exc:
        raise AgentPathError(str(exc)) from exc
    if isinstance(target, Agent):
        return target
    if callable(target) and not isinstance(target, type):
        try:
            built = target()
        except TypeError as exc:
            raise AgentPathError(f"--agent {path!r}: calling {attr}() failed: {exc}") from exc
        except Exception as exc:
            raise AgentPathError(f"--agent {path!r}: {attr}() raised {type(exc).__name__}: {exc}") from exc
        if isinstance(built, Agent):
            return built
        raise AgentPathError(f"--agent {path!r}: {attr}() returned a {type(built).__name__}, not an agent.Agent")
    raise AgentPathError(
        f"--agent {path!r}: {attr} is a {type(target).__name__}; expected an agent.Agent or a "
        "zero-argument function returning one"
    )


async def cmd_run(args: argparse.Namespace, client: Client) -> int:
    run_id = args.run_id or f"run-{uuid.uuid4().hex[:12]}"
    if args.agent:
        if args.model is not None:
            print("agent: error: --model applies to the demo agent; your agent names its own model", file=sys.stderr)
            return 2
        try:
            agent = load_agent(args.agent)
        except AgentPathError as exc:
            print(f"agent: error: {exc}", file=sys.stderr)
            return 2
    else:
        agent = demo_agent(args.model or get_settings().model)
    handle = await agent.start(client, [ChatMessage.from_user(args.prompt)], run_id=run_id, task_queue=args.task_queue)
    print(
        f"started run {run_id} (task queue {args.task_queue}, model {agent.model}"
        f"{', agent ' + args.agent if args.agent else ''})",
        flush=True,
    )
    workers = await workers_of(client, args.task_queue)
    if not workers.alive:
        print(
            f"agent: note: {workers.describe()}: the run waits until a worker with its tools polls it "
            "(`python worker.py`, or `agent dev`)",
            file=sys.stderr,
            flush=True,
        )
    if not args.wait:
        return 0
    return await wait_within(args.timeout, f"run {run_id}", watch(handle, plain=True, events=False))


async def cmd_status(args: argparse.Namespace, client: Client) -> int:
    handle = get_run(client, args.run)
    service = await run_service(client, args.run)  # raises RPCError NOT_FOUND for an unknown run
    health = await handle.health()
    shown: dict[str, Any] = {"run_id": args.run}
    if service.workers.alive and health.failing_workflow_task is None:
        try:  # the run's own view: step, phase, pending approvals
            status = await handle.workflow.query(
                RUN_STATUS_QUERY, result_type=RunStatus, rpc_timeout=timedelta(seconds=STATUS_QUERY_SECONDS)
            )
            shown.update(status.model_dump(mode="json"))
        except (WorkflowQueryFailedError, RPCError) as err:  # answered only through a worker; the server's view stands
            if isinstance(err, RPCError) and err.status == RPCStatusCode.FAILED_PRECONDITION:
                health = await handle.health()  # its workflow task failed since health was read
            if health.failing_workflow_task is None:
                shown["query_error"] = str(err)
    shown.update(
        status=service.status,
        done=service.status != "RUNNING",
        task_queue=service.task_queue,
        worker=service.workers.describe(),
        health=health.model_dump(mode="json"),
    )
    print(json.dumps(shown, indent=2))
    for line in health_lines(args.run, health):
        print(f"agent: {line}", file=sys.stderr)
    if service.status == "RUNNING" and not service.workers.alive:
        print(
            f"agent: run {args.run}: {service.workers.describe()}; it makes no progress until one does", file=sys.stderr
        )
    if service.status in UNSUCCESSFUL:
        return 1
    return STUCK_EXIT_CODE if health.failing_workflow_task is not None else 0


async def cmd_runs(args: argparse.Namespace, client: Client) -> int:
    if args.limit < 1:
        print("agent: error: --limit must be at least 1", file=sys.stderr)
        return 2
    rows: list[dict] = []
    truncated = False
    async for execution in _list_agent_runs(client):
        if len(rows) >= args.limit:
            truncated = True
            break
        rows.append(await _run_row(execution))
    if args.json:
        print(json.dumps({"runs": rows, "truncated": truncated, "limit": args.limit}, indent=2))
        return 0
    if not rows:
        print("no agent runs in this namespace")
        return 0
    print(f"{'RUN ID':<28} {'STATUS':<16} {'STARTED (UTC)':<20} WAITING FOR APPROVAL")
    for row in rows:
        waiting = (
            "yes" + (f" ({row['pending']} calls)" if row["pending"] else "") if row["waiting_for_approval"] else "-"
        )
        started = (row["start_time"] or "")[:19].replace("T", " ")
        print(f"{row['run_id']:<28} {row['status']:<16} {started:<20} {waiting}")
    if truncated:
        print(f"(only the newest {args.limit} runs are listed; more exist: raise --limit to see them)")
    return 0


async def _list_agent_runs(client: Client):
    """Agent runs, newest first (by start time when the visibility store can order, else its own order:
    open runs, then the most recently closed)."""
    query = f"WorkflowType = '{WORKFLOW_TYPE}'"
    try:
        async for execution in client.list_workflows(query + " ORDER BY StartTime DESC", page_size=100):
            yield execution
        return
    except RPCError as exc:
        if exc.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
    async for execution in client.list_workflows(query, page_size=100):
        yield execution


async def _run_row(execution: WorkflowExecution) -> dict:
    waiting = bool(execution.typed_search_attributes.get(WAITING_FOR_APPROVAL))
    pending = 0
    try:
        memo = await execution.memo()
    except Exception:  # a memo this client cannot decode: the search attribute still answers
        memo = {}
    if memo.get(PENDING_MEMO_KEY):
        pending = len(memo[PENDING_MEMO_KEY])
    running = execution.status == WorkflowExecutionStatus.RUNNING
    return {
        "run_id": execution.id,
        "status": execution.status.name if execution.status else "UNKNOWN",
        "start_time": execution.start_time.isoformat() if execution.start_time else None,
        "close_time": execution.close_time.isoformat() if execution.close_time else None,
        "waiting_for_approval": running and (waiting or pending > 0),
        "pending": pending if running else 0,
        "task_queue": execution.task_queue,
    }


async def cmd_watch(args: argparse.Namespace, client: Client) -> int:
    watching = watch(get_run(client, args.run), plain=True if args.plain else None)
    return await wait_within(args.timeout, f"run {args.run}", watching)


async def cmd_result(args: argparse.Namespace, client: Client) -> int:
    handle = get_run(client, args.run)
    service = await run_service(client, args.run)  # raises RPCError NOT_FOUND for an unknown run
    if service.status == "RUNNING":
        note = "" if service.workers.alive else f"; {service.workers.describe()}"
        print(f"agent: waiting for run {args.run} to finish (Ctrl-C stops waiting, not the run){note}", file=sys.stderr)
        for line in await _waiting_calls(handle.workflow):
            print(f"agent: {line}", file=sys.stderr)
    try:
        result = await wait_within(args.timeout, f"run {args.run}", handle.result())
    except WorkflowFailureError:
        health = await handle.health()
        print(
            f"agent: run {args.run} {health.status.lower()}: {health.failure or 'no failure message'}", file=sys.stderr
        )
        return 1
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    print(f"exit_reason: {result.exit_reason}  steps: {result.step_count}  tool calls: {result.tool_call_counts}")
    ending = await ending_line(handle.workflow, client.data_converter, result)
    if ending is not None:
        print(ending)
        for cut in cut_calls(result):
            print(f"cut: {cut.line()}")
        print(f"last message ({result.last_message.role.value if result.last_message else 'none'}): ", end="")
    print(message_text(result.last_message))
    return 0


async def _waiting_calls(workflow: Any) -> list[str]:
    """What the run waits for a person to decide, from its memo (no worker needed), each with the
    commands that decide it."""
    try:
        description = await workflow.describe()
        pending = await description.memo_value(PENDING_MEMO_KEY, None, type_hint=list[PendingSummary] | None)
    except (RPCError, TypeError, ValueError):
        return []
    return [
        f"it waits for approval of {p.tool_name} ({p.tool_call_id}) {p.arguments_preview}: "
        f"agent approve {workflow.id} {p.tool_call_id}  (or agent reject / agent modify)"
        for p in pending or []
    ]


def _timeout_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"stop waiting for {what} after this long (exit 1; the run goes on). Default: until it ends",
    )


def add_commands(sub: Any) -> None:
    """Add ``run``, ``status``, ``runs``, ``watch`` and ``result`` to the CLI's subparsers."""
    settings = get_settings()
    run = add_command(
        sub,
        "run",
        "start a run of your agent (--agent) or the demo agent with a prompt",
        "Start a run with one user message. A worker with the agent's tools must poll --task-queue; "
        "with --wait, follow the run until it ends (its step, calls waiting for approval, the answer).",
        'examples:\n  agent run "tidy up /tmp" --agent myapp.agents:support_agent --wait\n  agent run "add 2 and 3" --run-id run-1',
    )
    run.add_argument("prompt", help="the user's message")
    run.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="your agent.Agent, or a zero-argument function returning one, by import path "
        "(e.g. myapp.agents:support_agent); default: the demo agent (two tools). A worker with its tools "
        "must poll --task-queue",
    )
    run.add_argument("--run-id", metavar="RUN", help="the new run's id (workflow id; default: a fresh one)")
    run.add_argument("--model", default=None, help="the demo agent's model name (default: $AGENT_MODEL or gpt-4o-mini)")
    run.add_argument(
        "--task-queue", default=settings.task_queue, help="task queue (default: $AGENT_TASK_QUEUE or agent)"
    )
    run.add_argument(
        "--wait",
        action="store_true",
        help="follow the run until it ends and print the final answer (exit 1 if it fails)",
    )
    _timeout_option(run, "the run with --wait")
    run.set_defaults(handler=cmd_run)

    status = add_command(
        sub,
        "status",
        "show a run's status, step, pending approvals, worker and problems; exit 1 if it failed, 3 if stuck",
        "Describe a run from the server (status, failure with its innermost cause, retries, a workflow task "
        "that keeps failing, whether a worker polls its task queue) and, when a worker answers within 3 s, "
        "the run's own step and phase.\n\n"
        "exit codes:\n"
        "  0  the run completed, or is running with nothing stuck\n"
        "  1  the run failed, was cancelled, terminated or timed out (or no such run)\n"
        f"  {STUCK_EXIT_CODE}  the run is stuck: its workflow task keeps failing (attempt, error and the fix are "
        "printed); it resumes by itself once the workers run fixed code",
        "examples:\n  agent status run-1",
    )
    add_run_argument(status)
    status.set_defaults(handler=cmd_status)

    runs = add_command(
        sub,
        "runs",
        "list recent runs: status, start time, waiting for approval",
        "List the namespace's agent runs, newest first, from Temporal visibility (no worker needed).",
        "examples:\n  agent runs\n  agent runs --json --limit 100",
    )
    runs.add_argument("--limit", type=int, default=20, help="at most this many runs (default 20); a cut list says so")
    runs.add_argument("--json", action="store_true", help="print JSON: {runs: [...], truncated, limit}")
    runs.set_defaults(handler=cmd_runs)

    watch_cmd = add_command(
        sub,
        "watch",
        "follow a run live (the answer as it arrives, tool calls, approvals, problems); exit 0 if it completes, 1 if not",
        "Follow a run until it ends, from its live events: each model reply (printed as its tokens arrive when "
        "the agent streams them), tool calls, decisions, calls waiting for approval and problems Temporal "
        "reports (no worker, a failing task, retried activities).",
        "examples:\n  agent watch run-1\n  agent watch run-1 --plain --timeout 600",
    )
    add_run_argument(watch_cmd)
    watch_cmd.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    _timeout_option(watch_cmd, "the run")
    watch_cmd.set_defaults(handler=cmd_watch)

    result = add_command(
        sub,
        "result",
        "wait for a run to finish and print its answer",
        "Wait for a run to finish and print its exit reason and final answer (exit 1 if it failed).",
        "examples:\n  agent result run-1\n  agent result run-1 --json --timeout 60",
    )
    add_run_argument(result)
    result.add_argument("--json", action="store_true", help="print the whole AgentRunResult as JSON")
    _timeout_option(result, "the result")
    result.set_defaults(handler=cmd_result)
