"""``agent``: start runs, follow them, approve tool calls, and run the embedded stack.

Each family's people side adds its commands through a module with ``add_commands(subparsers)``,
listed in :data:`PEOPLE_SIDE`; ``dev`` and ``demo`` are the embedded stack's own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent import codec_server, run_commands
from agent.approvals import commands as approval_commands
from agent.client import connect
from agent.config_command import add_config_command
from agent.conversations import commands as conversation_commands
from agent.dev.command import add_dev_command
from agent.dev.demo import run_demo
from agent.inbox import command as inbox_command
from agent.operations import commands as operations_commands
from agent.progress import announce_if_slow
from core.settings import ConfigurationError, get_settings


async def cmd_demo(args: argparse.Namespace, client: None) -> int:
    return await run_demo(Path(args.data_dir))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent", description="Durable, hook-driven LLM agent runs on Temporal.")
    sub = parser.add_subparsers(dest="command", required=True)

    for commands in PEOPLE_SIDE:
        commands.add_commands(sub)

    add_dev_command(sub)
    add_config_command(sub)
    codec_server.add_commands(sub)

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
PEOPLE_SIDE = (run_commands, approval_commands, conversation_commands, inbox_command, operations_commands)


class ConnectError(RuntimeError):
    """The Temporal server could not be reached; the message says where we tried and how to fix it."""


async def connect_from_env() -> Client:
    """``connect()`` from the environment, saying where it connects when that takes over a second,
    with an error that names the address tried and how to fix it.

    :raises ConnectError: When the server cannot be reached.
    """
    settings = get_settings()
    where = (
        f"{settings.temporal_address} (TEMPORAL_ADDRESS)"
        if settings.source("temporal_address") == "environment"
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
