"""Hooks the continue-as-new tests register (hooks travel by import path and are imported inside
the workflow sandbox, so they live here and not in a test module, which pytest rewrites)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from activities.model import ModelCallInput
from core.messages import ChatMessage
from core.serialization import default_from_dict, default_to_dict
from core.state import State, replace_values
from hooks import hook
from hooks.context import call_model_from_hook


class StepMemoryHook:
    """after_tool: counts tool steps in the hook's own memory (not State), and publishes the count
    to the ``memory_count`` State key. Only ``snapshot()``/``restore()`` carry the memory across
    continue-as-new: a rebuilt hook starts from zero."""

    def __init__(self) -> None:
        self.seen = 0

    def run(self, state: State) -> None:
        self.seen += 1
        state.set("memory_count", self.seen, handler_override=replace_values)

    def snapshot(self) -> dict[str, int]:
        return {"seen": self.seen}

    def restore(self, data: dict[str, int]) -> None:
        self.seen = data["seen"]

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepMemoryHook:
        return default_from_dict(cls, data)


class SideCallHook:
    """before_llm: every ``every`` steps, a model call of its own (``purpose="hook"``, like a summary);
    adds the call's tokens to the ``side_tokens`` State key.

    :param model: The scripted model name the side calls go to.
    :param every: Call at steps 0, every, 2*every, ...
    """

    def __init__(self, model: str, every: int = 3) -> None:
        self.model = model
        self.every = every

    async def run_async(self, state: State) -> None:
        if state.data["step_count"] % self.every:
            return
        prompt = f"Note step {state.data['step_count']}."
        output = await call_model_from_hook(
            ModelCallInput(model=self.model, messages=[ChatMessage.from_user(prompt)], purpose="hook")
        )
        state.set("side_tokens", (state.data.get("side_tokens") or 0) + output.usage["total_tokens"])

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, every=self.every)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SideCallHook:
        return default_from_dict(cls, data)


class Tally(BaseModel):
    """A pydantic-typed State value (``state_schema={"tally": {"type": Tally}}``)."""

    steps: int = 0
    kinds: list[str] = []


def count_with_model(state: State) -> None:
    """after_tool: bump the Tally and note the type the value had when this hook read it."""
    tally = state.data.get("tally") or Tally()
    previous = tally if isinstance(tally, Tally) else Tally.model_validate(tally)
    kinds = [*previous.kinds, type(tally).__name__]
    state.set("tally", Tally(steps=previous.steps + 1, kinds=kinds), handler_override=replace_values)


count_with_model_hook = hook(count_with_model)
