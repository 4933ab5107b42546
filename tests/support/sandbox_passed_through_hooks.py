"""A hook module that imports a Haystack Chat Generator through the workflow sandbox
(``imports_passed_through``), as the refusal message offers. See tests/runtime/test_hook_sandbox.py."""

from __future__ import annotations

from temporalio import workflow

from core.state import State
from hooks import hook

with workflow.unsafe.imports_passed_through():
    from haystack.components.generators.chat import OpenAIChatGenerator


@hook
def check_generator_class(state: State) -> None:
    """Touches the passed-through class; a run that reaches its model call has rebuilt this hook."""
    if not isinstance(OpenAIChatGenerator, type):
        raise TypeError("OpenAIChatGenerator is not a class")
