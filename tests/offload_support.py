"""Hooks for the offload-order tests (tests/hooks/tool_result_offloading/test_offload_order.py).

They travel by import path in the workflow input, so they live in this importable module.
"""

from __future__ import annotations

from typing import Any

from core.messages import ChatMessage
from core.state import State, replace_values
from hooks import hook

SECRET = "SECRET"
REDACTED = "[redacted]"


def fresh_tool_results_start(messages: list[ChatMessage]) -> int:
    """Index where this step's trailing block of tool-result messages begins."""
    index = len(messages)
    while index > 0 and messages[index - 1].tool_call_result is not None:
        index -= 1
    return index


@hook
def redact_secrets(state: State) -> None:
    """Replace ``SECRET`` with ``[redacted]`` in this step's tool results (a function hook, so it
    cannot declare anything: it counts as reading results)."""
    messages: list[ChatMessage] = list(state.data.get("messages") or [])
    changed = False
    for index in range(fresh_tool_results_start(messages), len(messages)):
        result = messages[index].tool_call_result
        if result is None or SECRET not in result.result:
            continue
        messages[index] = ChatMessage.from_tool(
            result.result.replace(SECRET, REDACTED), origin=result.origin, error=result.error, meta=messages[index].meta
        )
        changed = True
    if changed:
        state.set("messages", messages, handler_override=replace_values)


class IgnoresToolResults:
    """An ``after_tool`` hook that never looks at tool results and says so (``reads_tool_results``),
    so an offload hook registered after it may still write results in the tool activity."""

    reads_tool_results = False
    allowed_hook_points = ("after_tool",)

    def run(self, state: State) -> None:
        """Nothing to do: it only stands between the tool call and the offload hook."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tests.offload_support.IgnoresToolResults", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IgnoresToolResults:
        return cls()
