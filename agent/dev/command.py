"""``agent dev``: the embedded stack, the scripted model, a worker with your tools, and the inbox, until Ctrl-C.

Ports that other shells need (Temporal's, S3's, the scripted model's) stay the same across
restarts, so the ``env.sh`` it writes stays valid; one ``agent dev`` runs per data directory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path

from agent.client import connect
from agent.codec_server import DEFAULT_PORT as CODEC_PORT
from agent.codec_server import start_codec_server
from agent.command_line import add_command
from agent.dev.encryption import KEY_FILE, KEYS_ENV, codec_endpoint, dev_payload_keys, ui_origins
from agent.dev.lock import AlreadyRunningError, DataDirLock
from agent.dev.ports import ensure_port_free, read_port_file, write_port_file
from agent.dev.processes import DevServerError
from agent.dev.reloading_worker import ReloadingWorker, python_files_snapshot
from agent.dev.scripted_model import LABEL, ScriptedModelServer
from agent.dev.stack import DEFAULT_S3_PORT, DevStack
from agent.dev.supervision import Watched, death_report, watch_children
from agent.inbox.agui import load_agui_agents
from agent.inbox.command import describe_identity, dev_identity, start_inbox
from agent.inbox.identity import IdentityConfig
from agent.operations.deploys import promote_if_none_current
from agent.run_commands import AgentPathError
from core.converter import payload_codec
from core.settings import ConfigurationError, env_name, get_settings
from runtime.deployment import deployment_config
from runtime.signals import stop_requested
from runtime.telemetry import PROMETHEUS_ENV, prometheus_bind_address

#: File under the data directory holding the scripted model's port of the last start (one integer).
MODEL_PORT_FILE = "model.port"

#: The ``OPENAI_API_KEY`` that env.sh gives other shells with the scripted model (it checks no key).
SCRIPTED_API_KEY = "scripted-model"


def _fail(message: str, code: int = 1) -> int:
    print(f"agent dev: error: {message}", file=sys.stderr, flush=True)
    return code


def _scripted_model(data_dir: Path, port: int | None) -> ScriptedModelServer:
    """The scripted model on ``port``, else the port remembered in ``data_dir/model.port``, else a free one.

    :raises DevServerError: When that port is taken.
    """
    port_file = data_dir / MODEL_PORT_FILE
    chosen = port if port is not None else read_port_file(port_file)
    if chosen:
        origin = "asked for with --model-port" if port is not None else f"remembered in {port_file}"
        ensure_port_free(chosen, "the scripted model", hint=f"({origin}.) Choose another with --model-port N.")
    server = ScriptedModelServer(chosen or 0)
    write_port_file(port_file, server.port)
    return server


async def cmd_dev(args: argparse.Namespace, client: None) -> int:
    """Run ``agent dev`` until SIGINT/SIGTERM; returns the exit status."""
    data_dir = Path(args.data_dir).absolute()
    try:  # a name without a build id (or the reverse) is refused before anything starts
        deployment_config(args.deployment_name, args.build_id)
    except ConfigurationError as exc:
        return _fail(str(exc), 2)
    try:
        lock = DataDirLock(data_dir).acquire()
    except AlreadyRunningError as exc:
        return _fail(str(exc))
    try:
        code = await _serve(args, data_dir)
        if code == 0:
            print("stopped.", flush=True)
        return code
    except DevServerError as exc:
        return _fail(str(exc))
    finally:
        lock.release()


async def _serve(args: argparse.Namespace, data_dir: Path) -> int:
    # S3 port: --s3-port, else the one remembered in <data-dir>/s3.port, else DEFAULT_S3_PORT; fixed so
    # that the env.sh written below stays valid when `agent dev` is restarted.
    stack = DevStack(
        data_dir,
        with_ui=True,
        temporal_port=args.port,
        ui_port=args.ui_port,
        s3_port=args.s3_port,
        default_s3_port=DEFAULT_S3_PORT,
    )
    if args.inbox_port > 0:  # fail before anything starts, as for the stack's own ports
        ensure_port_free(args.inbox_port, "the web inbox", hint="Choose --inbox-port N (0: a free one, -1: no inbox).")
    keys, generated_key = dev_payload_keys(data_dir) if args.encrypt else (None, False)
    if keys is not None:  # the parent (its clients, the inbox) and the worker encrypt alike
        os.environ[KEYS_ENV] = keys
        stack.temporal.ui_codec_endpoint = codec_endpoint(args.codec_port)
    real_model = get_settings().openai_api_key is not None
    scripted = None if real_model else _scripted_model(data_dir, args.model_port)
    # The worker serves the SDK metrics: the parent's own client must not bind the same address.
    metrics = prometheus_bind_address()
    worker_env = dict(os.environ)
    os.environ.pop(PROMETHEUS_ENV, None)
    try:
        with stack:
            model_env = {"OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": SCRIPTED_API_KEY} if scripted else {}
            shell_env = {**model_env, "AGENT_TASK_QUEUE": args.task_queue}
            if generated_key:  # the development key of DATA_DIR/payload-keys; never the user's own
                shell_env[KEYS_ENV] = keys
            if args.deployment_name or args.build_id:  # the worker checks that both are given
                worker_env.update(AGENT_DEPLOYMENT_NAME=args.deployment_name or "", AGENT_BUILD_ID=args.build_id or "")
            if real_model and get_settings().openai_base_url:
                shell_env["OPENAI_BASE_URL"] = get_settings().openai_base_url
            worker_env.update({**stack.env, **shell_env})
            # where file-system stores named in runs may write (core/side_effects.py), unless set already
            worker_env.setdefault(env_name("file_roots"), str((data_dir / "files").resolve()))
            if scripted is not None:
                scripted.start()
            print(stack.describe())
            model_line = (
                f"[{LABEL}] scripted model at {scripted.base_url}" if scripted else "yours (OPENAI_API_KEY is set)"
            )
            print(f"Model:           {model_line}")
            print(f"Env for other shells: source {stack.write_env_file(extra=shell_env)}", flush=True)
            if real_model:
                print("  (env.sh leaves out OPENAI_API_KEY: export your own in the other shell)")
            worker = ReloadingWorker(args.agent, args.task_queue, worker_env, Path.cwd(), data_dir / "worker.log")
            pid: int | None
            try:
                pid = worker.start()
            except DevServerError:
                what = "the agents' tools (" + ", ".join(args.agent) + ")" if args.agent else "the demo tools"
                # A spec that names nothing (exit 2) or no worker at all stops agent dev; a worker
                # that failed further on (an MCP server that cannot start) waits for a fix.
                if not args.agent or worker.failed_start is None or worker.failed_start[1] == 2:
                    return _fail(
                        f"the worker could not load {what}: {worker.last_error_line()} (log: {worker.log_file})", 2
                    )
                pid = None
                print(death_report(_worker_watched(args, worker), *worker.failed_start), flush=True)
            try:
                return await _until_stopped(args, stack, worker, pid, metrics)
            finally:
                worker.stop()
    finally:
        if scripted is not None:
            scripted.stop()
        if metrics is not None:
            os.environ[PROMETHEUS_ENV] = worker_env[PROMETHEUS_ENV]


def _worker_watched(args: argparse.Namespace, worker: ReloadingWorker) -> Watched:
    """The worker as :mod:`agent.dev.supervision` watches it, with what brings it back."""
    if args.agent:
        step = f"Fix the cause and save a *.py file under {Path.cwd()}: the worker starts again."
    else:
        step = "Restart agent dev (Ctrl-C, then agent dev again) to start it again."
    return Watched("the worker", worker.process, step)


async def _until_stopped(
    args: argparse.Namespace, stack: DevStack, worker: ReloadingWorker, pid: int | None, metrics: str | None
) -> int:
    client = await connect(stack.temporal.address)
    stop = stop_requested()
    inbox = None
    if args.inbox_port >= 0:
        identity = IdentityConfig(insecure_dev_identity=args.inbox_identity)
        agents = _agui_agents(args.agent, args.task_queue)
        inbox = await start_inbox(client, identity, "127.0.0.1", args.inbox_port, agents)
        print(f"Inbox:           {inbox.url}  ({describe_identity(identity)})", flush=True)
        for name in agents:
            print(f"AG-UI:           POST {inbox.url}/ag-ui/{name}", flush=True)
    codec = None
    if args.encrypt:
        origins = ui_origins(stack.temporal.ui_port) if stack.temporal.ui_port else []
        codec = await start_codec_server(payload_codec(), args.codec_port, origins)
        print(f"Codec server:    {codec.url}  (payloads encrypted; the Temporal UI decodes through it)", flush=True)
    if args.deployment_name and args.build_id:
        promoted = await promote_if_none_current(client, args.build_id, args.deployment_name)
        what = promoted or f"deployment {args.deployment_name} already has a current build (agent deploy status)"
        print(f"Deployment:      worker is build {args.build_id} of {args.deployment_name}; {what}", flush=True)
    if metrics is not None:
        print(f"Metrics:         http://{metrics}/metrics  (AGENT_PROMETHEUS_BIND)", flush=True)
    watcher = None
    if args.agent:
        before = python_files_snapshot(Path.cwd())  # before "Watching" is said: no change after it is missed
        watcher = asyncio.create_task(worker.watch(Path.cwd(), lambda line: print(line, flush=True), snapshot=before))
        print(f"Watching:        *.py under {Path.cwd()}; a change restarts the worker", flush=True)
    served = ", ".join(args.agent) if args.agent else "the demo tools (check_inventory, open_ticket)"
    if pid is not None:
        print(
            f"Worker polling task queue '{args.task_queue}' (pid {pid}) with {served}. Ctrl-C stops everything.",
            flush=True,
        )
    else:
        print(
            f"Worker: not running (it failed to start, above); save a fix under {Path.cwd()} and it starts. "
            "Ctrl-C stops everything.",
            flush=True,
        )
    restart = "Restart agent dev (Ctrl-C, then agent dev again) to start it again."
    watched = [
        Watched(
            "the Temporal server", stack.temporal.process, f"Runs wait, kept in {stack.temporal.db_file}. {restart}"
        ),
        Watched("S3 (moto)", stack.s3.process, f"Tool results and payloads cannot be stored now. {restart}"),
    ]
    children = asyncio.create_task(
        watch_children(lambda: [*watched, _worker_watched(args, worker)], lambda text: print(text, flush=True))
    )
    await stop.wait()
    for task in (watcher, children):
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if inbox is not None:
        await inbox.stop()
    if codec is not None:
        await codec.stop()
    print("stopping the worker, the Temporal server and S3 ...", flush=True)
    return 0


def _agui_agents(paths: list[str], task_queue: str) -> dict:
    """The AG-UI endpoints of the ``--agent`` paths that name an ``Agent`` (one naming only
    tools gets none, and a line says so)."""
    agents = {}
    for path in paths:
        try:
            agents.update(load_agui_agents([path], task_queue))
        except AgentPathError as err:
            print(f"AG-UI:           none for {path} ({err})", flush=True)
    return agents


def add_dev_command(subparsers: argparse._SubParsersAction) -> None:
    """Register ``agent dev`` on the ``agent`` command's subparsers."""
    settings = get_settings()
    dev = add_command(
        subparsers,
        "dev",
        "run the embedded stack (Temporal dev server, S3, scripted model, a worker with your tools) until Ctrl-C",
        "Run Temporal, S3, the scripted model, the inbox and a worker until Ctrl-C. The worker serves "
        "the tools of every --agent on --task-queue (the demo's two tools without --agent) and restarts when a "
        "*.py file under the current directory changes. DATA_DIR/env.sh has what another shell needs "
        "(source it). One agent dev runs per data directory.",
        "examples:\n  agent dev\n  agent dev --agent examples.quickstart:agent\n"
        "  agent dev --agent myapp.agents:support --agent myapp.agents:billing --data-dir /tmp/dev2 --port 7240\n"
        "  agent dev --deployment-name agent --build-id dev-1",
    )
    dev.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="your agent.Agent (or a list of @tool functions, a Toolset, or a function returning one) by import "
        "path, found in the current directory, e.g. myapp.agents:support; repeatable. The worker serves their "
        "tools, and only theirs, on --task-queue; without --agent it serves the demo's two tools. The inbox "
        "serves each Agent to AG-UI clients at POST /ag-ui/ATTR (docs/frontends.md)",
    )
    dev.add_argument(
        "--data-dir",
        default=".agent-dev",
        help="where Temporal's SQLite file, S3's recording, the remembered ports, env.sh, the lock and logs live",
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
    dev.add_argument(
        "--model-port",
        type=int,
        default=None,
        help="the scripted model's port on 127.0.0.1 (default: the one remembered in DATA_DIR/model.port, else a "
        "free one, then remembered); not started when OPENAI_API_KEY is set",
    )
    dev.add_argument(
        "--task-queue",
        default=settings.task_queue,
        help=f"task queue of the worker (default: $AGENT_TASK_QUEUE or agent; now {settings.task_queue!r})",
    )
    dev.add_argument(
        "--inbox-port", type=int, default=8765, help="port of the web inbox on 127.0.0.1 (default 8765; -1: no inbox)"
    )
    dev.add_argument(
        "--inbox-identity",
        default=dev_identity(),
        help="the name the dev inbox decides as until a person chooses another in the page's header "
        "(--insecure-dev-identity; default: the CLI's default approver, "
        f"$AGENT_APPROVER else your OS user name: {dev_identity()!r})",
    )
    dev.add_argument(
        "--encrypt",
        action="store_true",
        help=f"encrypt every payload with AGENT_PAYLOAD_KEYS (unset: a development key kept in DATA_DIR/{KEY_FILE}) "
        "and serve a codec server the Temporal UI decodes through",
    )
    dev.add_argument(
        "--codec-port",
        type=int,
        default=CODEC_PORT,
        help=f"port of the codec server with --encrypt, on 127.0.0.1 (default {CODEC_PORT})",
    )
    dev.add_argument(
        "--deployment-name",
        metavar="NAME",
        help="run the worker as a version of Worker Deployment NAME (with --build-id; docs/operations.md, "
        '"Deploys"); the build is made current when the deployment has none yet',
    )
    dev.add_argument("--build-id", metavar="ID", help="the worker's build id within --deployment-name")
    dev.set_defaults(handler=cmd_dev, needs_client=False)
