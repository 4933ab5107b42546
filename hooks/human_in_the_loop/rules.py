"""``RulePolicy``: ask a person when a CEL rule over the call says so.

The rule is a `CEL <https://cel.dev>`_ expression over two variables: ``tool`` (the tool's name)
and ``args`` (the arguments the model gave, a map), e.g. ``args.amount > 100`` or
``tool == "delete_file" && args.path.startsWith("/etc")``. It is compiled when the policy is
built, so a rule with a syntax error fails where the ``Agent`` is built, naming the expression;
and when the ``Agent`` is built, the arguments it reads are checked against the schemas of the
tools its key covers (:meth:`RulePolicy.argument_problem`), so a misspelled ``args.amout`` is a
``ValueError`` there too, naming the arguments the tool takes.

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
import re
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


_QUOTED = r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
_INDEXED = re.compile(r"(?<![\w.])args\s*\[\s*" + _QUOTED + r"\s*\]")
_TESTED = re.compile(_QUOTED + r"\s+in\s+args\b")
_SELECTED = re.compile(r"(?<![\w.])args\s*\.\s*([A-Za-z_]\w*)")


def rule_arguments(expression: str) -> list[str]:
    """The top-level argument names ``expression`` reads: ``args.x``, ``args["x"]``, ``"x" in args``
    (``has(args.x)`` included), in order of first use. Text inside string literals is not read."""
    names: list[str] = []
    for pattern in (_INDEXED, _TESTED):
        names += [match.group(1)[1:-1] for match in pattern.finditer(expression)]
    unquoted = re.sub(_QUOTED, '""', expression)
    names += [match.group(1) for match in _SELECTED.finditer(unquoted)]
    return list(dict.fromkeys(names))


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

    def argument_problem(self, key: str, schemas: dict[str, dict[str, Any]]) -> str | None:
        """Why the rule, applied to the tools ``schemas`` names under strategy key ``key``, reads
        an argument that cannot exist; None when every argument it reads is taken by a tool it
        covers (by one of them, for a key covering several: the others' calls ask), or when a
        schema does not list its arguments.

        :param schemas: Tool name -> JSON schema of its parameters, for the tools the rule covers.
        """
        taken: dict[str, list[str]] = {}
        for tool, schema in schemas.items():
            properties = schema.get("properties")
            if not isinstance(properties, dict) or schema.get("additionalProperties") is True:
                return None  # any argument may come
            taken[tool] = list(properties)
        if not taken:
            return None
        for name in rule_arguments(self.ask_when):
            if any(name in names for names in taken.values()):
                continue
            if len(taken) == 1:
                [(tool, names)] = taken.items()
                return (
                    f"RulePolicy rule {self.ask_when!r} for tool '{tool}' reads args.{name}, which '{tool}' does not "
                    f"take; its arguments are: {', '.join(names) or 'none'}."
                )
            known = ", ".join(f"{tool} ({', '.join(names) or 'no arguments'})" for tool, names in taken.items())
            return (
                f"RulePolicy rule {self.ask_when!r} for {key!r} reads args.{name}, which none of the tools it covers "
                f"takes; their arguments are: {known}."
            )
        return None

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
