"""``agent``: start runs, follow them, approve tool calls, and run the embedded stack."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
import uuid
from pathlib import Path

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from agent.agent import Agent
from agent.client import connect, get_run
from agent.config_command import add_config_command
from agent.dev.command import add_dev_command
from agent.dev.demo import demo_agent, run_demo
from agent.inbox.cli import add_inbox_command
from agent.watch import health_lines, watch
from core.messages import ChatMessage
from core.settings import ConfigurationError, get_settings
from core.wire import WORKFLOW_TYPE
from hooks.family import families
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY, WAITING_FOR_APPROVAL


class AgentPathError(Exception):
    """``--agent`` does not name an ``Agent`` (a usage error: exit 2)."""


def load_agent(path: str) -> Agent:
    """The ``Agent`` that ``module:attr`` names: an ``Agent`` instance, or a zero-argument callable
    returning one. The current directory is importable, as with ``python -m``.

    :raises AgentPathError: For a malformed path, a missing module or attribute, an import that
        fails, or something that is not an ``Agent``.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise AgentPathError(f"--agent {path!r}: expected module:attribute, e.g. myapp.agents:support_agent")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise AgentPathError(f"--agent {path!r}: no module named {exc.name!r}") from exc
        raise AgentPathError(f"--agent {path!r}: importing {module_name} failed: {exc}") from exc
    except Exception as exc:
        raise AgentPathError(f"--agent {path!r}: importing {module_name} failed: {type(exc).__name__}: {exc}") from exc
    target: object = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise AgentPathError(f"--agent {path!r}: module {module_name} has no attribute {attr!r}")
        target = getattr(target, part)
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
    if args.wait:
        result = await handle.result()
        print(result.last_message.text if result.last_message else "")
    return 0


async def cmd_status(args: argparse.Namespace, client: Client) -> int:
    handle = get_run(client, args.run_id)
    health = await handle.health()
    try:
        status = (await handle.status()).model_dump(mode="json")
    except WorkflowQueryFailedError as err:  # e.g. its workflow task keeps failing
        status = {"run_id": args.run_id, "query_error": str(err)}
    print(json.dumps({**status, "health": health.model_dump(mode="json")}, indent=2))
    for line in health_lines(args.run_id, health):
        print(f"agent: {line}", file=sys.stderr)
    return 0


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
    return await watch(get_run(client, args.run_id), plain=True if args.plain else None)


async def cmd_result(args: argparse.Namespace, client: Client) -> int:
    result = await get_run(client, args.run_id).result()
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(f"exit_reason: {result.exit_reason}  steps: {result.step_count}  tool calls: {result.tool_call_counts}")
        print(result.last_message.text if result.last_message else "")
    return 0


async def cmd_demo(args: argparse.Namespace, client: None) -> int:
    return await run_demo(Path(args.data_dir))


def build_parser() -> argparse.ArgumentParser:
    settings = get_settings()
    parser = argparse.ArgumentParser(prog="agent", description="Durable, hook-driven LLM agent runs on Temporal.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start a run of your agent (--agent) or the demo agent with a prompt")
    run.add_argument("prompt", help="the user's message")
    run.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="your agent.Agent, or a zero-argument function returning one, by import path "
        "(e.g. myapp.agents:support_agent); default: the demo agent (two tools). A worker with its tools "
        "must poll --task-queue",
    )
    run.add_argument("--run-id", help="workflow id (default: a fresh one)")
    run.add_argument(
        "--model",
        default=None,
        help="the demo agent's model name (default: $AGENT_MODEL or gpt-4o-mini)",
    )
    run.add_argument(
        "--task-queue", default=settings.task_queue, help="task queue (default: $AGENT_TASK_QUEUE or agent)"
    )
    run.add_argument("--wait", action="store_true", help="wait for the result and print the final answer")
    run.set_defaults(handler=cmd_run)

    status = sub.add_parser("status", help="show a run's step, phase, pending approvals and exit reason")
    status.add_argument("run_id")
    status.set_defaults(handler=cmd_status)

    runs = sub.add_parser("runs", help="list recent runs: status, start time, waiting for approval")
    runs.add_argument("--limit", type=int, default=20, help="at most this many runs (default 20); a cut list says so")
    runs.add_argument("--json", action="store_true", help="print JSON: {runs: [...], truncated, limit}")
    runs.set_defaults(handler=cmd_runs)

    watch_cmd = sub.add_parser(
        "watch", help="follow a run live (steps, tool calls, approvals, problems); exit 0 if it completes, 1 if not"
    )
    watch_cmd.add_argument("run_id")
    watch_cmd.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    watch_cmd.set_defaults(handler=cmd_watch)

    result = sub.add_parser("result", help="wait for a run to finish and print its answer")
    result.add_argument("run_id")
    result.add_argument("--json", action="store_true", help="print the whole AgentRunResult as JSON")
    result.set_defaults(handler=cmd_result)

    add_dev_command(sub)

    add_inbox_command(sub)
    add_config_command(sub)

    demo = sub.add_parser("demo", help="the crash-and-resume demo: kill -9 a worker mid-run, watch the run finish")
    demo.add_argument("--data-dir", default=".agent-dev/demo", help="where the demo's stack keeps its files")
    demo.set_defaults(handler=cmd_demo, needs_client=False)

    for family in families():
        if family.add_cli_commands is not None:
            family.add_cli_commands(sub)
    return parser


def _root_cause(exc: BaseException) -> str:
    """The innermost failure message of a workflow failure chain (what went wrong, not where)."""
    messages = []
    while exc is not None:
        messages.append(str(exc))
        exc = getattr(exc, "cause", None)
    return messages[-2] if len(messages) > 1 and "Error code" in messages[-1] else messages[-1]


async def _run_command(args: argparse.Namespace) -> int:
    """Connect (from the environment) unless the command starts its own stack, then run it."""
    client = await connect() if getattr(args, "needs_client", True) else None
    return await args.handler(args, client)


def main(argv: list[str] | None = None) -> None:
    try:  # the parser's defaults come from the settings: a bad variable is reported, not a traceback
        args = build_parser().parse_args(argv)
    except ConfigurationError as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        code = asyncio.run(_run_command(args))
    except KeyboardInterrupt:
        code = 130
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            print(f"agent: error: no such run ({exc.message})", file=sys.stderr)
        else:
            print(f"agent: error: Temporal answered {exc.status.name}: {exc.message}", file=sys.stderr)
        code = 1
    except WorkflowFailureError as exc:
        print(f"agent: the run failed: {_root_cause(exc)}", file=sys.stderr)
        code = 1
    except (RuntimeError, ValueError, ConnectionError) as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        code = 1
    # temporalio's native runtime can abort in interpreter shutdown (PyGILState_Release) after
    # a command has done its work; flush and leave without running finalisers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
