"""``TokenBudgetHook``: end a run before the next model call once it has used its token budget."""

from __future__ import annotations

from typing import Any

from core.messages import ChatMessage
from core.serialization import default_from_dict, default_to_dict
from core.state import State
from hooks.context import current_run_or_none, run_logger

EXIT_REASON = "token_budget_exceeded"
FINAL_MESSAGE_TEXT = "The Agent stopped because the token budget was exceeded."

_INPUT_KEYS = ("prompt_tokens", "input_tokens")
_OUTPUT_KEYS = ("completion_tokens", "output_tokens")


def _first_number(usage: dict[str, Any], keys: tuple[str, ...]) -> int:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return 0


def total_tokens(usage: dict[str, Any] | None) -> int:
    """``total_tokens`` of a usage dict, or its input plus output tokens when there is no total."""
    usage = usage or {}
    return _first_number(usage, ("total_tokens",)) or _first_number(usage, _INPUT_KEYS) + _first_number(
        usage, _OUTPUT_KEYS
    )


class TokenBudgetHook:
    """Stops the run once its cumulative token usage reaches ``max_total_tokens``.

    A ``before_llm`` hook: when the budget is reached it sets ``stop_run = "token_budget_exceeded"``,
    and the run loop ends the run with that ``exit_reason`` instead of making the next model call
    (also when an ``on_exit`` hook is keeping a text-only loop alive with ``continue_run``).

    What counts is State's ``token_usage``: the agent's own model calls, as in Haystack. Model calls
    made by hooks (summaries) are counted apart (``RunContext.hook_token_usage``) and added
    only with ``include_hook_usage=True``.

    :param max_total_tokens: The budget, in total tokens.
    :param add_final_message: Append an assistant message saying why the run stopped.
    :param include_hook_usage: Count hooks' model calls against the budget too.
    :raises ValueError: If ``max_total_tokens < 1``.
    """

    allowed_hook_points = ("before_llm",)

    def __init__(self, *, max_total_tokens: int, add_final_message: bool = False, include_hook_usage: bool = False):
        if max_total_tokens < 1:
            raise ValueError(f"`max_total_tokens` must be a positive number of tokens, got {max_total_tokens}.")
        self.max_total_tokens = max_total_tokens
        self.add_final_message = add_final_message
        self.include_hook_usage = include_hook_usage

    def used_tokens(self, state: State) -> int:
        """Tokens counted against the budget so far."""
        used = total_tokens(state.data.get("token_usage"))
        if self.include_hook_usage:
            run = current_run_or_none()
            used += total_tokens(run.hook_token_usage) if run is not None else 0
        return used

    def run(self, state: State) -> None:
        """Request a stop when the budget is reached."""
        used = self.used_tokens(state)
        if used < self.max_total_tokens:
            return
        run_logger(__name__).warning(
            "The agent reached its token budget of %s (%s used); stopping before the next model call.",
            self.max_total_tokens,
            used,
        )
        state.set("stop_run", EXIT_REASON)
        if self.add_final_message:
            state.set("messages", [ChatMessage.from_assistant(FINAL_MESSAGE_TEXT)])

    def to_dict(self) -> dict[str, Any]:
        """Serialise the hook."""
        return default_to_dict(
            self,
            max_total_tokens=self.max_total_tokens,
            add_final_message=self.add_final_message,
            include_hook_usage=self.include_hook_usage,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenBudgetHook:
        """Rebuild the hook from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)
