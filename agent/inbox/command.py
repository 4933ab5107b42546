"""The ``agent inbox`` command (and the inbox that ``agent dev`` starts): options, startup lines, Ctrl-C."""

from __future__ import annotations

import argparse

from temporalio.client import Client

from agent.approvals.decisions import default_approver
from agent.command_line import add_command
from agent.inbox.agui import AguiAgent, load_agui_agents
from agent.inbox.app import create_app
from agent.inbox.identity import IdentityConfig, IdentityConfigError, load_tokens
from agent.inbox.server import DEFAULT_PORT, InboxServer
from agent.run_commands import AgentPathError
from core.settings import get_settings
from runtime.signals import stop_requested


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``agent inbox`` on the CLI's subcommands."""
    inbox = add_command(
        sub,
        "inbox",
        "the web approvals inbox: waiting calls, approve / reject / modify in a browser (127.0.0.1)",
        "Serve the web approvals inbox for the namespace of TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE. "
        "Approvers are identified by a trusted header from your reverse proxy (--identity-header) or a token "
        "table (--tokens); with neither, the inbox is read-only.",
        "examples:\n  agent inbox --identity-header X-Forwarded-User\n  agent inbox --tokens tokens.txt --port 8765\n"
        "  agent inbox --identity-header X-Forwarded-User --agent myapp.agents:support   # + POST /ag-ui/support",
    )
    inbox.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    inbox.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: a free one)")
    # One identity source; checked by argparse, before anything connects.
    source = inbox.add_mutually_exclusive_group()
    source.add_argument(
        "--identity-header",
        metavar="NAME",
        help="trust this request header (set by your reverse proxy, e.g. X-Forwarded-User) as the approver's name",
    )
    source.add_argument(
        "--tokens",
        metavar="FILE",
        type=_token_file,
        help="token table: JSON {token: name} or 'token = name' lines; browsers send 'Authorization: Bearer TOKEN' "
        "or sign in once at /login?token=TOKEN (an HttpOnly cookie)",
    )
    source.add_argument(
        "--insecure-dev-identity",
        metavar="NAME",
        help="everyone who reaches the inbox decides as NAME unless they choose another name in the page's "
        "header (local development only)",
    )
    inbox.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="serve this agent.Agent to AG-UI clients at POST /ag-ui/ATTR (docs/frontends.md); repeatable",
    )
    inbox.add_argument(
        "--task-queue",
        default=get_settings().task_queue,
        help="with --agent: the task queue its sessions start on (default: $AGENT_TASK_QUEUE or agent)",
    )
    inbox.set_defaults(handler=cmd_inbox)


def _token_file(path: str) -> dict[str, str]:
    """argparse type of ``--tokens``: the table, or a usage error naming what is wrong."""
    try:
        return load_tokens(path)
    except IdentityConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def identity_from_args(args: argparse.Namespace) -> IdentityConfig:
    """The identity source the options name (``args.tokens`` is the table ``--tokens`` read).

    :raises IdentityConfigError: For more than one source or an empty header name.
    """
    return IdentityConfig(
        header=args.identity_header, tokens=args.tokens or {}, insecure_dev_identity=args.insecure_dev_identity or None
    )


def describe_identity(identity: IdentityConfig) -> str:
    """One line on who may decide through this inbox."""
    if identity.header:
        return f"approver = the '{identity.header}' header (set it in your reverse proxy; clients must not reach the inbox directly)"
    if identity.tokens:
        return f"approver = token table ({len(identity.tokens)} tokens); sign in at /login?token=TOKEN"
    if identity.insecure_dev_identity:
        return (
            f"approver = '{identity.insecure_dev_identity}' unless a person chooses another name in the page "
            "(--insecure-dev-identity: development only)"
        )
    return "read-only: no identity source, every decision is refused (see --identity-header, --tokens)"


async def start_inbox(
    client: Client, identity: IdentityConfig, host: str, port: int, agents: dict[str, AguiAgent] | None = None
) -> InboxServer:
    """Start the inbox in the running loop (with ``agents`` at ``/ag-ui/{name}``).

    :raises InboxBindError: If the port is taken.
    """
    return await InboxServer(create_app(client, identity=identity, agents=agents), host=host, port=port).start()


async def cmd_inbox(args: argparse.Namespace, client: Client) -> int:
    try:
        identity = identity_from_args(args)
    except IdentityConfigError as err:
        print(f"agent inbox: error: {err}", flush=True)
        return 2
    try:
        agents = load_agui_agents(args.agent, args.task_queue)
    except AgentPathError as err:
        print(f"agent inbox: error: {err}", flush=True)
        return 2
    server = await start_inbox(client, identity, args.host, args.port, agents)
    print(f"Inbox:    {server.url}", flush=True)
    for name in agents:
        print(f"AG-UI:    POST {server.url}/ag-ui/{name}", flush=True)
    print(f"Identity: {describe_identity(identity)}", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}, not loopback: put it behind your reverse proxy.", flush=True)
    stop = stop_requested()
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


def dev_identity() -> str:
    """The name ``agent dev``'s inbox decides as: the CLI's default approver
    (``AGENT_APPROVER``, else the OS user name), else ``dev``."""
    return default_approver() or "dev"
