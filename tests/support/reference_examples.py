"""The Haystack reference's examples, moved onto this project as docs/from-haystack.md shows them
(examples 1-4). Hooks and tools travel by import path, so they live in this importable module."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import Field
from temporalio import activity, workflow

from agent import ChatMessage, State, tool
from core.serialization import default_from_dict, default_to_dict
from core.state import replace_values
from hooks import hook
from hooks.compaction import ChatGeneratorSpec
from hooks.context import call_model_from_hook


# -- 1. A function hook ---------------------------------------------------------------------------
@tool
def weather_tool(city: str) -> str:
    """Get the current weather for a given city."""
    return f"The weather in {city} is sunny."


@tool
def save(content: str) -> str:
    """Save content to durable storage."""
    return "Saved."


@hook
def require_save(state: State) -> None:
    if state.get("tool_call_counts", {}).get("save", 0) == 0:
        state.set("messages", [ChatMessage.from_system("You must call `save` before finishing.")])
        state.set("continue_run", True)


# -- 2. Three hooks at three points (the Hooks guide) ---------------------------------------------
@tool
def search(query: Annotated[str, Field(description="The search query")]) -> str:
    """Search the web."""
    return "Fusion startups reported net-energy-gain milestones this year."


@hook
def build_context(state: State) -> None:
    if state.get("step_count") == 0:
        now = workflow.now().strftime("%Y-%m-%d %H:%M UTC")  # not datetime.now()
        system = ChatMessage.from_system(f"You are a research assistant. The current time is {now}.")
        state.set("messages", [system, *state.data["messages"]], handler_override=replace_values)


@hook
def audit_tool_calls(state: State) -> None:
    pending = state.data["messages"][-1].tool_calls
    workflow.logger.info("about to run: %s", [tc.tool_name for tc in pending])  # not print()


@hook
def require_search(state: State) -> None:
    if state.get("tool_call_counts", {}).get("search", 0) == 0:
        state.set("messages", [ChatMessage.from_system("Search before answering.")])
        state.set("continue_run", True)


# -- 3. A class-based hook that calls a model ------------------------------------------------------
class GradeFinalAnswer:
    """Grade the agent's answer with a model and ask for a better one when it is weak."""

    def __init__(self, model: str = "gpt-4o-mini") -> None:
        self.model = model
        self._judge = ChatGeneratorSpec(model)

    async def run_async(self, state: State) -> None:
        answer = state.data["messages"][-1].text or ""
        question = ChatMessage.from_user(f"Reply with only PASS or FAIL. Is this answer complete?\n\n{answer}")
        reply = await call_model_from_hook(self._judge.request([question]))
        if "FAIL" in (reply.message.text or "").upper():
            state.set("messages", [ChatMessage.from_user("Your answer was incomplete. Please improve it.")])
            state.set("continue_run", True)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GradeFinalAnswer:
        return default_from_dict(cls, data)


# -- 4. Any other I/O from a hook: await an activity -----------------------------------------------
@activity.defn
async def fetch_memories(user: str) -> list[str]:
    return [f"{user} prefers short answers."]


@hook
async def recall_memories(state: State) -> None:
    if state.data["step_count"] != 0:
        return
    user = state.data["hook_context"].get("user", "anonymous")
    memories = await workflow.execute_activity(fetch_memories, user, start_to_close_timeout=timedelta(seconds=30))
    state.set("messages", [ChatMessage.from_system("What you know about the user: " + " ".join(memories))])


TOOLS = [weather_tool, save, search]
