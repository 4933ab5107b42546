"""A real S3 endpoint on loopback: moto's server (``moto[server]``), started and stopped by PID."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from agent.dev.ports import LOOPBACK, ensure_port_free, find_executable, free_port
from agent.dev.processes import ChildProcess, DevServerError
from agent.dev.server_process import ProcessBackedServer

#: Dummy credentials moto accepts (it does not check signatures).
DUMMY_AWS_CREDENTIALS: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class MotoS3Server(ProcessBackedServer):
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
