"""Every code block of README.md and docs/*.md runs, or says in its first line why it does not.

Each Markdown file's blocks run in order in one namespace, as a reader would paste them into
``python -m asyncio`` and a shell: Python blocks with top-level ``await`` run on the test
session's event loop (where the docs worker polls), and so do the others, except a block that
calls ``asyncio.run``: it runs in a thread of its own, as a script would. Shell blocks run in ``bash -euo pipefail`` with
``.venv/bin`` on ``PATH`` and the session stack's environment (``TEMPORAL_ADDRESS``, ``AWS_*``,
``OPENAI_BASE_URL`` of the scripted model). An output block right after a Python block must be
exactly what that block prints. See tests/docs/markdown_blocks.py for the labels.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import copy
import importlib
import inspect
import io
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from agent import ChatMessage, get_run
from agent.dev.scripted_model import ScriptedModelServer
from tests.docs.markdown_blocks import Block, blocks

REPO = Path(__file__).resolve().parents[2]
DOC_FILES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK_TIMEOUT_S = 120
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


def _runnable(path: Path) -> list[Block]:
    return [b for b in blocks(path) if b.kind in ("python", "sh", "module")]


def test_every_block_says_what_it_is() -> None:
    problems = [
        f"{b.where}: label the block (python, sh, or text for output)"
        for path in DOC_FILES
        for b in blocks(path)
        if b.kind == "unlabelled"
    ]
    assert not problems, "\n".join(problems)


def test_links_stay_in_the_repository() -> None:
    """Relative links name files of this repository (a clone has nothing beside it)."""
    problems = []
    for path in DOC_FILES:
        for target in _LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"^(https?:|mailto:|#)", target):
                continue
            resolved = (path.parent / target.split("#", 1)[0]).resolve()
            if not resolved.is_relative_to(REPO) or not resolved.exists():
                problems.append(f"{_name(path)}: link {target} names no file of the repository")
    assert not problems, "\n".join(problems)


# -- what some files need before their blocks run, and what their runs must have done -------------


async def _start_api_runs(client: Client, scripted: ScriptedModelServer) -> None:
    """docs/api.md's runs: the quickstart agent, with the call ids its commands quote."""
    from examples.quickstart import agent

    for n in (1, 2):
        run_agent = copy.copy(agent)
        run_agent.model = f"docs-api-{n}-{uuid.uuid4().hex[:8]}"
        call = {"id": f"call_api_{n}", "name": "delete_file", "arguments": {"path": f"/tmp/{n}.log"}}
        scripted.script(run_agent.model, [{"tool_calls": [call]}, {"text": "Done."}])
        handle = await run_agent.start(client, [ChatMessage.from_user(f"delete /tmp/{n}.log")], run_id=f"api-{n}")
        await handle.wait_for_pending(timeout=timedelta(seconds=30))


async def _api_runs_were_decided(client: Client, printed: str) -> None:
    for run_id, via, action in (("api-1", "update", "modify"), ("api-2", "signal", "reject")):
        result = await get_run(client, run_id).result()
        [tool_result] = result.messages[-2].tool_call_results
        assert tool_result.origin.extra["confirmation"]["via"] == via
        assert tool_result.origin.extra["confirmation"]["action"] == action


async def _quickstart_printed_its_answer(client: Client, printed: str) -> None:
    assert "asks: delete_file({'path': '/tmp/old.log'})" in printed, printed
    assert "text - " in printed and "Deleted /tmp/old.log." in printed, printed


async def _approvals_run_was_rejected(client: Client, printed: str) -> None:
    result = await get_run(client, "approvals-1").result()
    [tool_result] = result.messages[-2].tool_call_results
    assert tool_result.error and "keep the logs" in tool_result.result


SETUPS: dict[str, Callable[[Client, ScriptedModelServer], Awaitable[None]]] = {"docs/api.md": _start_api_runs}
CHECKS: dict[str, Callable[[Client, str], Awaitable[None]]] = {
    "README.md": _quickstart_printed_its_answer,
    "docs/api.md": _api_runs_were_decided,
    "docs/approvals.md": _approvals_run_was_rejected,
}


# -- running blocks ---------------------------------------------------------------------------------


def _import_module_block(block: Block, root: Path, namespace: dict[str, Any]) -> None:
    """Write a module block to its path under ``root``, import it, and bring its public names
    into the namespace (the blocks after it use them as if imported)."""
    target = root / block.module_path
    target.parent.mkdir(parents=True, exist_ok=True)
    for package in target.relative_to(root).parents:
        if package != Path("."):
            (root / package / "__init__.py").touch()
    target.write_text(block.source + "\n", encoding="utf-8")
    dotted = block.module_path.removesuffix(".py").replace("/", ".")
    importlib.invalidate_caches()
    sys.modules.pop(dotted, None)
    module = importlib.import_module(dotted)
    namespace.update({k: v for k, v in vars(module).items() if not k.startswith("_")})


async def _run_python(block: Block, namespace: dict[str, Any]) -> str:
    # Leading newlines keep tracebacks on the Markdown file's own line numbers.
    source = "\n" * (block.line - 1) + block.source
    code = compile(source, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if code.co_flags & inspect.CO_COROUTINE:
            await asyncio.wait_for(eval(code, namespace), BLOCK_TIMEOUT_S)
        elif "asyncio.run(" in block.source:
            await asyncio.wait_for(asyncio.to_thread(exec, code, namespace), BLOCK_TIMEOUT_S)
        else:
            exec(code, namespace)
    sys.stdout.write(out.getvalue())
    return out.getvalue()


async def _run_shell(block: Block) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = await asyncio.to_thread(
        subprocess.run,
        ["bash", "-euo", "pipefail", "-c", block.source],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
    )
    assert done.returncode == 0, f"{block.where}: exit status {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("doc", [p for p in DOC_FILES if _runnable(p)], ids=_name)
async def test_code_blocks_run(
    doc: Path,
    docs_worker: str,
    client: Client,
    scripted: ScriptedModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # files a block writes land here, not in the checkout
    # A script's last line may leave with os._exit (the README quickstart: temporalio's runtime can
    # abort at interpreter shutdown); run in this process, the exit is recorded, not obeyed.
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    modules = tmp_path / "modules"
    monkeypatch.syspath_prepend(str(modules))
    before = set(sys.modules)
    name = _name(doc)
    if name in SETUPS:
        await SETUPS[name](client, scripted)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed: list[str] = []
    every = blocks(doc)
    try:
        for index, block in enumerate(every):
            if block.kind == "module":
                _import_module_block(block, modules, namespace)
            elif block.kind == "python":
                output = await _run_python(block, namespace)
                printed.append(output)
                following = every[index + 1] if index + 1 < len(every) else None
                if following is not None and following.kind == "output" and following.after_block:
                    assert output.rstrip("\n") == following.source.rstrip("\n"), (
                        f"{block.where} printed something else than the output block at {following.where}:\n{output}"
                    )
            elif block.kind == "sh":
                printed.append(await _run_shell(block))
        if name in CHECKS:
            await CHECKS[name](client, "".join(printed))
    finally:
        for module in set(sys.modules) - before:
            if getattr(sys.modules[module], "__file__", "") and str(modules) in str(sys.modules[module].__file__):
                del sys.modules[module]
