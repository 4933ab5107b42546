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

    :param max_total_tokens: The budget, in total tokens (None: no token budget, with ``max_cost``).
    :param add_final_message: Append an assistant message saying why the run stopped.
    :param include_hook_usage: Count hooks' model calls against the budget too.
    :param max_cost: A budget in cost as well (or instead): the ``cost`` the model calls add to
        their usage when the worker's ``AGENT_MODEL_PRICES`` prices their models (docs/models.md).
    :raises ValueError: If ``max_total_tokens < 1``, ``max_cost <= 0``, or neither is given.
    """

    allowed_hook_points = ("before_llm",)

    def __init__(
        self,
        *,
        max_total_tokens: int | None = None,
        add_final_message: bool = False,
        include_hook_usage: bool = False,
        max_cost: float | None = None,
    ):
        if max_total_tokens is None and max_cost is None:
            raise ValueError("TokenBudgetHook needs `max_total_tokens`, `max_cost` or both.")
        if max_total_tokens is not None and max_total_tokens < 1:
            raise ValueError(f"`max_total_tokens` must be a positive number of tokens, got {max_total_tokens}.")
        if max_cost is not None and not max_cost > 0:
            raise ValueError(f"`max_cost` must be a positive amount, got {max_cost}.")
        self.max_total_tokens = max_total_tokens
        self.add_final_message = add_final_message
        self.include_hook_usage = include_hook_usage
        self.max_cost = max_cost

    def used_tokens(self, state: State) -> int:
        """Tokens counted against the budget so far."""
        used = total_tokens(state.data.get("token_usage"))
        if self.include_hook_usage:
            run = current_run_or_none()
            used += total_tokens(run.hook_token_usage) if run is not None else 0
        return used

    def used_cost(self, state: State) -> float:
        """Cost counted against ``max_cost`` so far (0 when no model call was priced)."""
        usages = [state.data.get("token_usage") or {}]
        if self.include_hook_usage and (run := current_run_or_none()) is not None:
            usages.append(run.hook_token_usage)
        return sum(float(u.get("cost") or 0) for u in usages)

    def run(self, state: State) -> None:
        """Request a stop when the budget is reached."""
        used = self.used_tokens(state)
        cost = self.used_cost(state) if self.max_cost is not None else 0.0
        if self.max_total_tokens is not None and used >= self.max_total_tokens:
            run_logger(__name__).warning(
                "The agent reached its token budget of %s (%s used); stopping before the next model call.",
                self.max_total_tokens,
                used,
            )
        elif self.max_cost is not None and cost >= self.max_cost:
            run_logger(__name__).warning(
                "The agent reached its cost budget of %s (%s used); stopping before the next model call.",
                self.max_cost,
                cost,
            )
        else:
            return
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
            **({"max_cost": self.max_cost} if self.max_cost is not None else {}),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenBudgetHook:
        """Rebuild the hook from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)
