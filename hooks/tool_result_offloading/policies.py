"""Ready-made offload policies (same names and meaning as Haystack's).

A custom policy is any module-level class with ``should_offload(tool_name, result, state)``,
``to_dict`` and ``from_dict``. Subclass :class:`~hooks.tool_result_offloading.protocol.OffloadPolicy`
(or :class:`OffloadPolicyBase`, which adds equality and a readable ``repr``) to get ``to_dict`` and
``from_dict`` for a policy whose constructor takes no arguments.
"""

from __future__ import annotations

from typing import Any

from core.serialization import default_to_dict
from core.state import State
from hooks.tool_result_offloading.protocol import OffloadPolicy


class OffloadPolicyBase(OffloadPolicy):
    """Base of the ready-made policies: the protocol's serialisation (no init arguments unless
    ``to_dict`` is overridden), equality by serialised form, and a readable ``repr``.

    Set ``decides_without_state = True`` on a policy whose decision reads only the tool name and
    result: the tool activity can then apply it itself, and a big result never enters history.
    """

    decides_without_state = False

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """Whether to offload; subclasses decide."""
        raise NotImplementedError

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

    :param threshold: Characters a result may have and still stay in the conversation. Any number
        is accepted, as in Haystack (a negative one offloads every non-empty result).
    :raises ValueError: If ``threshold`` is not a number: Haystack's fails at the first result,
        which in a durable run would end the run mid-way, so it is refused when built.
    """

    decides_without_state = True

    def __init__(self, threshold: int) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ValueError(f"OffloadOverChars threshold must be a number, got {threshold!r}.")
        self.threshold = threshold

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        """True when ``len(result) > threshold``."""
        return len(result) > self.threshold

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the threshold."""
        return default_to_dict(self, threshold=self.threshold)
