"""Ready-made offload policies (same names and meaning as Haystack's).

A custom policy is any module-level class with ``should_offload(tool_name, result, state)``,
``to_dict`` and ``from_dict``; subclass :class:`OffloadPolicyBase` to get the last two for a
policy whose constructor arguments are JSON values.
"""

from __future__ import annotations

from typing import Any

from core.serialization import default_from_dict, default_to_dict
from core.state import State


class OffloadPolicyBase:
    """Serialisation for policies whose ``__init__`` takes no arguments (override ``to_dict`` otherwise).

    Set ``decides_without_state = True`` on a policy whose decision reads only the tool name and
    result: the tool activity can then apply it itself, and a big result never enters history.
    """

    decides_without_state = False

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """Whether to offload; subclasses decide."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """Serialise with no init parameters."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Rebuild from :meth:`to_dict`'s output."""
        return default_from_dict(cls, data)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.to_dict() == self.to_dict()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(type(self).__qualname__)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.to_dict()["init_parameters"].items())
        return f"{type(self).__name__}({params})"


class AlwaysOffload(OffloadPolicyBase):
    """Offload every (non-empty, successful) result of the tools it is assigned to."""

    decides_without_state = True

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """Always True."""
        return True


class NeverOffload(OffloadPolicyBase):
    """Keep results in the conversation; use it to opt a tool out of a ``"*"`` default."""

    decides_without_state = True

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """Always False."""
        return False


class OffloadOverChars(OffloadPolicyBase):
    """Offload a result whose length in characters is strictly greater than ``threshold``.

    :param threshold: Characters a result may have and still stay in the conversation.
    :raises ValueError: If ``threshold`` is negative or not an integer.
    """

    decides_without_state = True

    def __init__(self, threshold: int) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise ValueError(f"OffloadOverChars threshold must be a non-negative integer, got {threshold!r}.")
        self.threshold = threshold

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """True when ``len(result) > threshold``."""
        return len(result) > self.threshold

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the threshold."""
        return default_to_dict(self, threshold=self.threshold)
