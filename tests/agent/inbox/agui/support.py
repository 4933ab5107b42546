"""What the AG-UI tests share: the official client installed from the npm registry, the node
script that drives the endpoint with it, and the agent it talks to."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

from agent import Agent
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests.agent.inbox.support import deploy_service, fetch_logs

HERE = Path(__file__).parent
#: The client script (CommonJS: it loads the package from the install directory).
CLIENT_SCRIPT = HERE / "agui_client.cjs"
#: The npm packages the tests install: the official AG-UI client 1.0.x, and esbuild to bundle it
#: for the browser (the example page).
NPM_PACKAGES = ("@ag-ui/client@~1.0.0", "esbuild@~0.28.0")
#: Where they go unless AGUI_CLIENT_DIR says: a cache shared by the test processes and runs.
DEFAULT_CLIENT_DIR = Path.home() / ".cache" / "durable-agent-tests" / "agui-client-1.0"
NODE = shutil.which("node") or "/usr/bin/node"


def install_client() -> Path:
    """``npm install --prefix DIR`` the packages (once: later calls find them), under a file lock
    so that parallel test processes install once. Returns DIR.

    :raises RuntimeError: When npm fails (its output says why).
    """
    target = Path(os.environ.get("AGUI_CLIENT_DIR") or DEFAULT_CLIENT_DIR)
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        installed = target / "node_modules" / "@ag-ui" / "client" / "package.json"
        bundler = target / "node_modules" / ".bin" / "esbuild"
        if not (installed.exists() and bundler.exists()):
            npm = shutil.which("npm") or "/usr/bin/npm"
            done = subprocess.run(
                [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", *NPM_PACKAGES],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                raise RuntimeError(f"npm install {' '.join(NPM_PACKAGES)} failed: {done.stderr[-2000:]}")
    return target


async def drive(client_dir: Path, url: str, thread_id: str, steps: list[dict[str, Any]], **extra: Any) -> list[dict]:
    """Run the client script over ``steps`` on thread ``thread_id``; returns each step's report."""
    config = {"url": url, "threadId": thread_id, "steps": steps, **extra}
    process = await asyncio.create_subprocess_exec(
        NODE,
        str(CLIENT_SCRIPT),
        str(client_dir),
        json.dumps(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    if process.returncode != 0:
        raise AssertionError(f"the AG-UI client script failed ({process.returncode}): {err.decode()[-3000:]}")
    return json.loads(out)["steps"]


def types(step: dict) -> list[str]:
    """The event types a step's client saw, in order."""
    return [event["type"] for event in step["events"]]


def text_of(step: dict) -> str:
    """The text of the step's TEXT_MESSAGE_CONTENT events, joined."""
    return "".join(event["delta"] for event in step["events"] if event["type"] == "TEXT_MESSAGE_CONTENT")


def chat_agent(model: str) -> Agent:
    """A streaming agent whose ``deploy_service`` calls wait for approval; ``fetch_logs`` runs freely."""
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=1))
    return Agent(
        model=model,
        tools=[deploy_service, fetch_logs],
        system_prompt="You are the release assistant.",
        hooks={"before_tool": [ConfirmationHook({"deploy_service": strategy})]},
        stream_tokens=True,
    )


def build_bundle(client_dir: Path, out: Path) -> Path:
    """Bundle the example page's client (``examples/agui_frontend/entry.mjs``) with esbuild, as
    the example's build.sh does, into ``out``; returns ``out``.

    :raises RuntimeError: When esbuild fails.
    """
    entry = HERE.parents[3] / "examples" / "agui_frontend" / "entry.mjs"
    done = subprocess.run(
        [
            str(client_dir / "node_modules" / ".bin" / "esbuild"),
            str(entry),
            "--bundle",
            "--format=esm",
            "--platform=browser",
            f"--outfile={out}",
            "--log-level=warning",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(client_dir / "node_modules")},
    )
    if done.returncode != 0:
        raise RuntimeError(f"esbuild failed: {done.stderr[-2000:]}")
    return out
