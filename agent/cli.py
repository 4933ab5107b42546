"""``agent``: start runs, follow them, approve tool calls, and run the embedded stack."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowFailureError, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from agent.client import connect, get_run
from agent.dev.demo import demo_agent, run_demo
from agent.dev.demo_tools import DEMO_TOOLS
from agent.dev.scripted_model import LABEL, ScriptedModelServer
from agent.dev.stack import DEFAULT_S3_PORT, DevStack
from core.messages import ChatMessage
from core.payloads import RunHealth
from core.settings import Settings
from hooks.family import families
from runtime.worker import create_worker


async def cmd_run(args: argparse.Namespace, client: Client) -> int:
    run_id = args.run_id or f"run-{uuid.uuid4().hex[:12]}"
    agent = demo_agent(args.model)
    handle = await agent.start(client, [ChatMessage.from_user(args.prompt)], run_id=run_id, task_queue=args.task_queue)
    print(f"started run {run_id} (task queue {args.task_queue}, model {args.model})")
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


def health_lines(run_id: str, health: RunHealth) -> list[str]:
    """One readable line per problem Temporal reports for the run."""
    lines = []
    if health.failure:
        lines.append(f"run {run_id} {health.status.lower()}: {health.failure}")
    if health.workflow_task_attempts > 1:
        lines.append(
            f"run {run_id}: its workflow task keeps failing (attempt {health.workflow_task_attempts}): "
            f"{health.workflow_task_error or 'no message'}"
        )
    for retry in health.retrying_activities:
        lines.append(
            f"run {run_id}: {retry.activity_type} is being retried (attempt {retry.attempt}): {retry.last_error}"
        )
    return lines


async def cmd_result(args: argparse.Namespace, client: Client) -> int:
    result = await get_run(client, args.run_id).result()
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(f"exit_reason: {result.exit_reason}  steps: {result.step_count}  tool calls: {result.tool_call_counts}")
        print(result.last_message.text if result.last_message else "")
    return 0


async def cmd_dev(args: argparse.Namespace, client: None) -> int:
    # S3 port: --s3-port, else the one remembered in <data-dir>/s3.port, else DEFAULT_S3_PORT; fixed so
    # that the env.sh written below stays valid when `agent dev` is restarted.
    stack = DevStack(
        Path(args.data_dir),
        with_ui=True,
        temporal_port=args.port,
        ui_port=args.ui_port,
        s3_port=args.s3_port,
        default_s3_port=DEFAULT_S3_PORT,
    )
    scripted = None
    with stack:
        stack.apply_env()
        if not os.environ.get("OPENAI_API_KEY"):
            scripted = ScriptedModelServer().start()
            os.environ.update({"OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": "scripted-model"})
        print(stack.describe())
        print(
            f"Model:           {'[' + LABEL + '] scripted model at ' + scripted.base_url if scripted else os.environ.get('OPENAI_BASE_URL', 'OpenAI')}"
        )
        print(f"Env for other shells: source {stack.write_env_file()}")
        client = await connect(stack.temporal.address)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with create_worker(client, tools=DEMO_TOOLS, task_queue=args.task_queue):
                print(f"Worker polling task queue '{args.task_queue}'. Ctrl-C stops everything.", flush=True)
                await stop.wait()
                print("stopping the worker, the Temporal server and S3 ...", flush=True)
        finally:
            if scripted is not None:
                scripted.stop()
    print("stopped.")
    return 0


async def cmd_demo(args: argparse.Namespace, client: None) -> int:
    return await run_demo(Path(args.data_dir))


def build_parser() -> argparse.ArgumentParser:
    settings = Settings.from_env()
    parser = argparse.ArgumentParser(prog="agent", description="Durable, hook-driven LLM agent runs on Temporal.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start a run of the demo agent (two tools) with a prompt")
    run.add_argument("prompt", help="the user's message")
    run.add_argument("--run-id", help="workflow id (default: a fresh one)")
    run.add_argument(
        "--model",
        default=os.environ.get("AGENT_MODEL", "gpt-4o-mini"),
        help="model name (default: $AGENT_MODEL or gpt-4o-mini)",
    )
    run.add_argument(
        "--task-queue", default=settings.task_queue, help="task queue (default: $AGENT_TASK_QUEUE or agent)"
    )
    run.add_argument("--wait", action="store_true", help="wait for the result and print the final answer")
    run.set_defaults(handler=cmd_run)

    status = sub.add_parser("status", help="show a run's step, phase, pending approvals and exit reason")
    status.add_argument("run_id")
    status.set_defaults(handler=cmd_status)

    result = sub.add_parser("result", help="wait for a run to finish and print its answer")
    result.add_argument("run_id")
    result.add_argument("--json", action="store_true", help="print the whole AgentRunResult as JSON")
    result.set_defaults(handler=cmd_result)

    dev = sub.add_parser("dev", help="run the embedded stack (Temporal dev server, S3, worker) until Ctrl-C")
    dev.add_argument(
        "--data-dir",
        default=".agent-dev",
        help="where Temporal's SQLite file, S3's recording and port, env.sh and logs live",
    )
    dev.add_argument("--port", type=int, default=7233, help="Temporal gRPC port on 127.0.0.1 (default 7233)")
    dev.add_argument("--ui-port", type=int, default=8233, help="Temporal UI port (default 8233)")
    dev.add_argument(
        "--s3-port",
        type=int,
        default=None,
        help=f"S3 (moto) port on 127.0.0.1 (default {DEFAULT_S3_PORT}, MinIO's); the port used is remembered in "
        "DATA_DIR/s3.port and reused by the next start without --s3-port, so env.sh stays valid",
    )
    dev.add_argument("--task-queue", default=settings.task_queue, help="task queue of the worker")
    dev.set_defaults(handler=cmd_dev, needs_client=False)

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
    args = build_parser().parse_args(argv)
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
