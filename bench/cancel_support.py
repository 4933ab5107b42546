"""Tools and hooks of the cancel drill and the conversation tests (hooks travel by import path, so
they live in a module that a worker imports; ``tests`` imports it, it imports nothing from ``tests``).

- :func:`gate`: a tool that runs until the test opens its gate (a file), so a test sends messages or
  cancels while a tool call is in flight, without sleeping;
- :class:`CloseProbe`: a hook whose ``close`` marks the run's memo (``closed``), so a test sees
  that ``close`` ran after the run ended;
- :class:`HookModelCall`: a ``before_llm`` hook that awaits a model call activity of its own on the
  first step (the scripted model can hold it), for cancelling inside a hook's activity;
- :func:`count_after_run`: an ``after_run`` hook counting its runs in the State key ``after_run``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from temporalio import workflow

from core.messages import ChatMessage
from core.state import State
from core.tools import tool
from hooks import hook

with workflow.unsafe.imports_passed_through():
    from activities.model import ModelCallInput
    from hooks.context import call_model_from_hook

#: Longest a gate stays closed before the tool gives up (so nothing waits forever).
GATE_LIMIT_SECONDS = 60.0
#: Memo key :class:`CloseProbe` sets when its ``close`` runs.
CLOSED_MEMO_KEY = "close_probe"


def gate_dir() -> Path:
    return Path(os.environ.get("GATE_DIR", tempfile.gettempdir()))


@tool
async def gate(label: str) -> str:
    """Wait until the test opens the gate called `label`."""
    directory = gate_dir()
    (directory / f"{label}.started").touch()
    give_up_at = asyncio.get_running_loop().time() + GATE_LIMIT_SECONDS
    try:
        while not (directory / f"{label}.open").exists():
            if asyncio.get_running_loop().time() > give_up_at:
                return f"gate {label} never opened"
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        (directory / f"{label}.cancelled").touch()  # the heartbeating activity saw the cancel
        raise
    return f"gate {label} passed"


CONVERSATION_TOOLS = [gate]


class CloseProbe:
    """Marks the memo when ``close`` runs (visible in ``describe()`` once the run has ended)."""

    def run(self, state: State) -> None:
        return None

    def close(self) -> None:
        workflow.upsert_memo({CLOSED_MEMO_KEY: True})

    def to_dict(self) -> dict:
        return {"type": "bench.cancel_support.CloseProbe", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict) -> CloseProbe:
        return cls()


class HookModelCall:
    """``before_llm``: on step 0 of the first turn, await a model call (``purpose="hook"``) to ``model``.

    :param model: The scripted model name the hook calls.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self._called = False

    def run(self, state: State) -> None:
        raise RuntimeError("HookModelCall runs only as run_async")

    async def run_async(self, state: State) -> None:
        if not self._called:
            self._called = True
            await call_model_from_hook(ModelCallInput(model=self.model, messages=[ChatMessage.from_user("summarise")]))

    def to_dict(self) -> dict:
        return {"type": "bench.cancel_support.HookModelCall", "init_parameters": {"model": self.model}}

    @classmethod
    def from_dict(cls, data: dict) -> HookModelCall:
        return cls(**data["init_parameters"])


#: The ``state_schema`` entry :func:`count_after_run` needs.
AFTER_RUN_SCHEMA = {"after_run": {"type": int}}


@hook
def count_after_run(state: State) -> None:
    """after_run: count how many times after_run ran (``state["after_run"]``)."""
    state.set("after_run", (state.data.get("after_run") or 0) + 1)
