"""Ready-made confirmation policies (same names and rules as Haystack's)."""

from __future__ import annotations

import copy
from typing import Any

from hooks.human_in_the_loop.dataclasses import ConfirmationUIResult
from hooks.human_in_the_loop.protocol import ConfirmationPolicy


class AlwaysAskPolicy(ConfirmationPolicy):
    """Ask a person before every call."""

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Always True."""
        return True


class NeverAskPolicy(ConfirmationPolicy):
    """Never ask; every call runs (use it to opt one tool out of a ``"*"`` default)."""

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Always False."""
        return False


class AskOncePolicy(ConfirmationPolicy):
    """Ask once per tool and arguments: after a person *confirms* a call, the same tool with the
    same arguments runs unasked for the rest of the run (as in Haystack, the policy remembers the
    last confirmed arguments of each tool). The memory survives continue-as-new through
    :meth:`snapshot`/:meth:`restore`. Modified, rejected and timed-out calls are not remembered.

    Unlike Haystack's, it remembers a copy of the confirmed arguments, not the caller's dict: the
    memory is what a snapshot carries across continue-as-new, so it must not change when the
    caller later changes that dict (a run would then ask, or not, depending on whether it had
    continued as new), and arguments no one confirmed must not come to pass as confirmed.
    """

    def __init__(self) -> None:
        self._confirmed: dict[str, dict[str, Any]] = {}

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """False when ``tool_name`` was last confirmed with exactly ``tool_params``."""
        return tool_name not in self._confirmed or self._confirmed[tool_name] != tool_params

    def update_after_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        confirmation_result: ConfirmationUIResult,
    ) -> None:
        """Remember ``tool_name`` with ``tool_params`` when the action was ``"confirm"``."""
        if confirmation_result.action == "confirm":
            self._confirmed[tool_name] = copy.deepcopy(tool_params)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """The confirmed tool -> arguments map."""
        return copy.deepcopy(self._confirmed)

    def restore(self, data: Any) -> None:
        """Take back a :meth:`snapshot`."""
        self._confirmed = copy.deepcopy(dict(data or {}))
