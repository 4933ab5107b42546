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

from collections.abc import Mapping
from typing import Any, Protocol, Required, TypedDict, Unpack, runtime_checkable

from core.serialization import default_from_dict, default_to_dict
from core.trust import Slot
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


class ConfirmationCall(TypedDict, total=False):
    """The keyword arguments of every strategy's ``run_async`` and ``run``: Haystack's strategy
    signature, written once. ``ConfirmationHook`` passes them by name.

    :param tool_name: The tool to be called (required).
    :param tool_description: Its description (required).
    :param tool_params: The arguments the model asked for (required).
    :param tool_call_id: The call's id (the hook gives id-less calls a deterministic one).
    :param confirmation_strategy_context: The run's ``hook_context`` (JSON data).
    """

    tool_name: Required[str]
    tool_description: Required[str]
    tool_params: Required[dict[str, Any]]
    tool_call_id: str | None
    confirmation_strategy_context: dict[str, Any] | None


_REQUIRED_KEYWORDS = ("tool_name", "tool_description", "tool_params")
_KEYWORDS = (*_REQUIRED_KEYWORDS, "tool_call_id", "confirmation_strategy_context")


def confirmation_call(call: Mapping[str, Any], where: str) -> ConfirmationCall:
    """``call`` checked as a Python call with :class:`ConfirmationCall`'s keywords would be.

    :param call: The keyword arguments a strategy was called with.
    :param where: The method, for the message (``"DurableConfirmationStrategy.run_async"``).
    :raises TypeError: For a missing required keyword or an unknown one.
    """
    missing = [name for name in _REQUIRED_KEYWORDS if name not in call]
    if missing:
        raise TypeError(f"{where}() missing required keyword argument(s): {', '.join(missing)}")
    unknown = [name for name in call if name not in _KEYWORDS]
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword argument(s): {', '.join(unknown)}")
    return ConfirmationCall(**call)  # type: ignore[typeddict-item]


@runtime_checkable
class ConfirmationStrategy(Protocol):
    """Turns one pending tool call into a :class:`ToolExecutionDecision`.

    ``run_async`` runs as workflow code: it may wait (``workflow.wait_condition``) and await
    activities, but must stay deterministic. A strategy may also define a sync ``run`` with the
    same keyword arguments, as Haystack's do: ``ConfirmationHook.run(state)``, the local,
    non-durable path, calls it (``BlockingConfirmationStrategy.run`` asks through its UI there).
    """

    async def run_async(self, **call: Unpack[ConfirmationCall]) -> ToolExecutionDecision:
        """Decide on one call (:class:`ConfirmationCall` lists the keywords)."""
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


#: What a run's input may name in this family's places (core.trust checks them before construction).
POLICY_SLOT = Slot("confirmation policy", methods=("should_ask",))
STRATEGY_SLOT = Slot("confirmation strategy", any_of=("run", "run_async"))
UI_SLOT = Slot("confirmation UI", methods=("get_user_confirmation",))
NOTIFIER_SLOT = Slot("approval notifier", methods=("to_dict",))
