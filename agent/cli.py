"""``agent``: start runs, follow them, approve tool calls, and run the embedded stack.

Each family's people side adds its commands through a module with ``add_commands(subparsers)``,
listed in :data:`PEOPLE_SIDE`; ``dev`` and ``demo`` are the embedded stack's own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent import run_commands
from agent.approvals import commands as approval_commands
from agent.client import connect
from agent.dev.demo import run_demo
from agent.dev.demo_tools import DEMO_TOOLS
from agent.dev.scripted_model import LABEL, ScriptedModelServer
from agent.dev.stack import DEFAULT_S3_PORT, DevStack, ensure_port_free
from agent.inbox import command as inbox_command
from agent.inbox.command import describe_identity, dev_identity, start_inbox
from agent.inbox.identity import IdentityConfig
from agent.progress import announce_if_slow
from core.settings import Settings
from runtime.tracing import prometheus_bind_address
from runtime.worker import create_worker


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
    if args.inbox_port > 0:  # fail before anything starts, as for the stack's own ports
        ensure_port_free(args.inbox_port, "the web inbox", hint="Choose --inbox-port N (0: a free one, -1: no inbox).")
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
                inbox = None
                if args.inbox_port >= 0:
                    identity = IdentityConfig(insecure_dev_identity=args.inbox_identity)
                    inbox = await start_inbox(client, identity, "127.0.0.1", args.inbox_port)
                    print(f"Inbox:           {inbox.url}  ({describe_identity(identity)})", flush=True)
                metrics = prometheus_bind_address()
                if metrics is not None:
                    print(f"Metrics:         http://{metrics}/metrics  (AGENT_PROMETHEUS_BIND)", flush=True)
                print(f"Worker polling task queue '{args.task_queue}'. Ctrl-C stops everything.", flush=True)
                await stop.wait()
                if inbox is not None:
                    await inbox.stop()
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

    for commands in PEOPLE_SIDE:
        commands.add_commands(sub)

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
    dev.add_argument(
        "--inbox-port", type=int, default=8765, help="port of the web inbox on 127.0.0.1 (default 8765; -1: no inbox)"
    )
    dev.add_argument(
        "--inbox-identity",
        default=dev_identity(),
        help="the name the dev inbox decides as (--insecure-dev-identity; default: $USER)",
    )
    dev.set_defaults(handler=cmd_dev, needs_client=False)

    demo = sub.add_parser(
        "demo",
        help="the crash-and-resume demo: kill -9 a worker mid-run, watch the run finish",
        description="Start an embedded stack and a worker, start a run, kill -9 the worker mid-run, start "
        "another, and show the run finishing where it left off.",
        epilog="examples:\n  agent demo\n  agent demo --data-dir /tmp/agent-demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--data-dir", default=".agent-dev/demo", help="where the demo's stack keeps its files")
    demo.set_defaults(handler=cmd_demo, needs_client=False)

    return parser


#: Each family's people-side commands, one module a family (each has ``add_commands(subparsers)``).
PEOPLE_SIDE = (run_commands, approval_commands, inbox_command)


class ConnectError(RuntimeError):
    """The Temporal server could not be reached; the message says where we tried and how to fix it."""


async def connect_from_env() -> Client:
    """``connect()`` from the environment, saying where it connects when that takes over a second,
    with an error that names the address tried and how to fix it.

    :raises ConnectError: When the server cannot be reached.
    """
    settings = Settings.from_env()
    where = (
        f"{settings.temporal_address} (TEMPORAL_ADDRESS)"
        if os.environ.get("TEMPORAL_ADDRESS")
        else f"{settings.temporal_address} (the default: TEMPORAL_ADDRESS is not set)"
    )

    try:
        async with announce_if_slow(f"agent: connecting to Temporal at {where} ..."):
            return await connect()
    except RuntimeError as exc:  # the SDK's "Failed client connect: ... tonic transport error"
        raise ConnectError(
            f"cannot reach the Temporal server at {where}, namespace {settings.temporal_namespace}: "
            f"{_transport_reason(exc)}. Set TEMPORAL_ADDRESS to your server's host:port; for the embedded "
            "stack, `agent dev` writes env.sh into its data directory: run `source .agent-dev/env.sh` in this shell."
        ) from exc


def _transport_reason(exc: BaseException) -> str:
    text = str(exc)
    for reason in ("Connection refused", "dns error", "timed out", "Name or service not known", "invalid"):
        if reason.lower() in text.lower():
            return reason.lower()
    return "no answer"


async def _run_command(args: argparse.Namespace) -> int:
    """Connect (from the environment) unless the command starts its own stack, then run it."""
    client = await connect_from_env() if getattr(args, "needs_client", True) else None
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
    except (RuntimeError, ValueError, ConnectionError, TimeoutError) as exc:
        print(f"agent: error: {exc}", file=sys.stderr)
        code = 1
    # temporalio's native runtime can abort in interpreter shutdown (PyGILState_Release) after
    # a command has done its work; flush and leave without running finalisers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
