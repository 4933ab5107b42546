"""What a confirmation policy, a confirmation strategy and a confirmation UI are (as Haystack's
``types/protocol.py``).

A policy decides *whether* to ask; a strategy decides *how* a call gets its decision (here:
durably, by waiting for a Signal or Update); a UI is how a person is asked. Policies and
strategies travel by reference in the workflow input, so they have ``to_dict``/``from_dict``, and
run as workflow code, so they are deterministic. A UI travels by reference too (a
``BlockingConfirmationStrategy`` names it in each pending request), but it only ever runs on the
approver's side (``agent approve --interactive``) or in a local, non-durable run: never in a
workflow, where reading a console would block the worker.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from core.serialization import default_from_dict, default_to_dict
from hooks.human_in_the_loop.dataclasses import ConfirmationUIResult, ToolExecutionDecision


class ConfirmationPolicy:
    """Base class of confirmation policies; subclass it for a custom policy.

    A policy with memory (like :class:`~hooks.human_in_the_loop.policies.AskOncePolicy`) also
    overrides :meth:`snapshot` and :meth:`restore`, so its memory survives continue-as-new.
    """

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Whether a person must confirm this call.

        :param tool_name: The tool to be called.
        :param tool_description: Its description.
        :param tool_params: The arguments it would be called with.
        """
        raise NotImplementedError

    def update_after_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        confirmation_result: ConfirmationUIResult,
    ) -> None:
        """Learn from a person's answer (default: nothing)."""
        return

    def snapshot(self) -> Any:
        """JSON-able memory carried across continue-as-new (default: none)."""
        return None

    def restore(self, data: Any) -> None:
        """Take back what :meth:`snapshot` returned (default: nothing)."""
        return

    def to_dict(self) -> dict[str, Any]:
        """Serialise (a policy whose ``__init__`` takes arguments overrides this)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationPolicy:
        """Rebuild from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@runtime_checkable
class ConfirmationStrategy(Protocol):
    """Turns one pending tool call into a :class:`ToolExecutionDecision`.

    ``run_async`` runs as workflow code: it may wait (``workflow.wait_condition``) and await
    activities, but must stay deterministic. A strategy may also define a sync ``run`` with the
    same keyword arguments, as Haystack's do: ``ConfirmationHook.run(state)``, the local,
    non-durable path, calls it (``BlockingConfirmationStrategy.run`` asks through its UI there).
    """

    async def run_async(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
    ) -> ToolExecutionDecision:
        """Decide on one call.

        :param tool_name: The tool to be called.
        :param tool_description: Its description.
        :param tool_params: The arguments the model asked for.
        :param tool_call_id: The call's id (the hook gives id-less calls a deterministic one).
        :param confirmation_strategy_context: The run's ``hook_context`` (JSON data).
        """
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise."""
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationStrategy:
        """Rebuild from :meth:`to_dict`'s output."""
        ...


@runtime_checkable
class ConfirmationUI(Protocol):
    """How a person is asked about one tool call (as Haystack's ``ConfirmationUI``).

    Approver-side code: ``agent approve --interactive`` rebuilds the UI a pending request names
    (from its ``to_dict()``, by import path) and asks through it; a local run asks through it
    directly. Subclass it to inherit :meth:`to_dict`/:meth:`from_dict`; a UI whose ``__init__``
    takes arguments overrides :meth:`to_dict`. Ready-made UIs are in
    :mod:`hooks.human_in_the_loop.user_interfaces`.
    """

    def get_user_confirmation(
        self, tool_name: str, tool_description: str, tool_params: dict[str, Any]
    ) -> ConfirmationUIResult:
        """Ask a person about one call and return the answer.

        :param tool_name: The tool to be called.
        :param tool_description: Its description.
        :param tool_params: The arguments it would be called with.
        """
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise (by import path, so the approver's side can rebuild it)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationUI:
        """Rebuild from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)
