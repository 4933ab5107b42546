"""A hook module the workflow sandbox refuses: it imports a Haystack Chat Generator (an HTTP
client) at its top, as a port of a Haystack summariser might. See tests/runtime/test_hook_sandbox.py."""

from __future__ import annotations

from typing import Any

from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: F401 - the import is the point

from core.serialization import default_from_dict, default_to_dict
from core.state import State
from hooks import hook


@hook
def note_step(state: State) -> None:
    """A harmless function hook; its module is what the sandbox refuses."""


class NoteStepHook:
    """A harmless hook class in the same module."""

    def run(self, state: State) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoteStepHook:
        return default_from_dict(cls, data)
