"""``RulePolicy``: ask a person when a CEL rule over the call says so.

The rule is a `CEL <https://cel.dev>`_ expression over two variables: ``tool`` (the tool's name)
and ``args`` (the arguments the model gave, a map), e.g. ``args.amount > 100`` or
``tool == "delete_file" && args.path.startsWith("/etc")``. It is compiled when the policy is
built, so a rule with a syntax error fails where the ``Agent`` is built, naming the expression.

Evaluation is deterministic (CEL has no clock, no I/O and no randomness), so it runs in the
workflow. The library is ``common-expression-language`` (module ``cel``, Rust bindings):
``bench/cel_evaluation.py`` measures it next to ``cel-python``.

A rule that cannot be evaluated for a call (it reads an argument the call lacks, compares types
CEL refuses to compare, or gives something other than a bool) asks: a person decides rather than
a call running unchecked. The request's warning log line says why; write ``has(args.amount) &&
args.amount > 100`` to make a missing argument mean "do not ask".
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from temporalio import workflow

from core.serialization import default_to_dict
from hooks.human_in_the_loop.protocol import ConfirmationPolicy

if TYPE_CHECKING:
    import cel

#: The variables a rule may read.
RULE_VARIABLES = ("args", "tool")


def _cel() -> Any:
    """The ``cel`` module, imported when a rule is first compiled: its package imports its command
    line (typer and rich, ~150 ms), which a worker that runs no rule should not load. In a workflow
    (a rule rebuilt from the run's input) the import passes through the sandbox, typer and rich
    with it, as the sandbox's pass-through list does for ``cel`` itself at worker start."""
    if workflow.in_workflow():
        with workflow.unsafe.imports_passed_through():
            return importlib.import_module("cel")
    return importlib.import_module("cel")


def compile_rule(expression: Any) -> cel.Program:
    """``expression`` compiled. (Which names it reads is not checked here: the library counts a
    macro's own variable, ``r`` in ``args.to.exists(r, ...)``, among them; a name other than
    :data:`RULE_VARIABLES` fails at evaluation, which asks.)

    :raises ValueError: For an expression that is not a non-empty string, or does not parse (the
        message names it and carries the parser's).
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError(f"RulePolicy ask_when must be a non-empty CEL expression, got {expression!r}.")
    try:
        program = _cel().compile(expression)
    except ValueError as exc:
        raise ValueError(f"RulePolicy ask_when {expression!r} is not valid CEL: {exc}") from exc
    return program


def rule_context(tool_name: str, tool_params: dict[str, Any]) -> dict[str, Any]:
    """What a rule sees for one call."""
    return {"tool": tool_name, "args": tool_params}


class RulePolicy(ConfirmationPolicy):
    """Ask when a CEL rule over ``args`` and ``tool`` is true.

    :param ask_when: The rule, e.g. ``"args.amount > 100"`` (see the module docstring).
    :raises ValueError: For a rule that is empty or not valid CEL; the message names the rule.
    """

    def __init__(self, ask_when: str) -> None:
        self._program = compile_rule(ask_when)
        self.ask_when = ask_when

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """The rule's value for this call; True (ask) when it cannot be evaluated or is not a bool."""
        try:
            value = self._program.execute(rule_context(tool_name, tool_params))
        except Exception as exc:  # noqa: BLE001 - any evaluation error means "a person decides"
            self._warn(tool_name, f"cannot be evaluated ({type(exc).__name__}: {exc})")
            return True
        if not isinstance(value, bool):
            self._warn(tool_name, f"gave {value!r}, not a bool")
            return True
        return value

    def _warn(self, tool_name: str, problem: str) -> None:
        message = "RulePolicy rule %r %s for a call of %s, so a person is asked."
        logger = workflow.logger if workflow.in_workflow() else logging.getLogger(__name__)
        logger.warning(message, self.ask_when, problem, tool_name)

    def to_dict(self) -> dict[str, Any]:
        """Serialise (the rule as its text)."""
        return default_to_dict(self, ask_when=self.ask_when)

    def __repr__(self) -> str:
        return f"RulePolicy(ask_when={self.ask_when!r})"
