"""The texts a confirmation strategy gives the model (Haystack's templates) and their helpers:
checking a template when the strategy is built, previews of big parameters, durations in words,
and a UI's answer as a :class:`ConfirmationUIResult`."""

from __future__ import annotations

import string
from datetime import timedelta
from typing import Any

from hooks.human_in_the_loop.dataclasses import ConfirmationUIResult

REJECTION_FEEDBACK_TEMPLATE = "Tool execution for '{tool_name}' was rejected by the user."
MODIFICATION_FEEDBACK_TEMPLATE = (
    "The parameters for tool '{tool_name}' were updated by the user to:\n{final_tool_params}"
)
USER_FEEDBACK_TEMPLATE = "With user feedback: {feedback}"
TIMEOUT_FEEDBACK_TEMPLATE = "No one answered the confirmation request within {timeout}, so the call was not run."

#: Longest rendering of the new parameters shown whole in a modification's explanation; longer
#: ones are cut here and followed by their full length. At or under it the text is exactly
#: Haystack's (``{final_tool_params}`` is the parameters dict itself).
MODIFICATION_PREVIEW_CHARS = 1_000


def params_preview(params: dict[str, Any], limit: int = MODIFICATION_PREVIEW_CHARS) -> dict[str, Any] | str:
    """What ``{final_tool_params}`` shows: ``params`` itself while its text (``str(params)``, as
    Haystack prints it) has at most ``limit`` characters, else the first ``limit`` characters of
    that text followed by ``"… (N characters in all)"``."""
    text = str(params)
    if len(text) <= limit:
        return params
    return f"{text[:limit]}… ({len(text):,} characters in all)"


def modification_feedback(
    template: str, tool_name: str, params: dict[str, Any], limit: int = MODIFICATION_PREVIEW_CHARS
) -> str:
    """The explanation of a modification: ``template`` with ``{tool_name}`` and
    ``{final_tool_params}`` (:func:`params_preview`), so it stays short however big ``params`` is."""
    return template.format(tool_name=tool_name, final_tool_params=params_preview(params, limit))


def check_template(name: str, template: Any, placeholders: tuple[str, ...]) -> None:
    """Check that ``template`` can be filled with ``placeholders`` alone. As in Haystack it need not
    name them (``"Rejected."`` is fine); one naming another field (``"{tool}"``, ``"{}"``) or
    malformed could never be filled: Haystack fails at the first decision, which in a durable run
    may be days later, so it is refused when the strategy is built.

    :param name: The parameter's name, for the message.
    :param placeholders: The fields ``template.format`` is given.
    :raises ValueError: If ``template`` is not a string or cannot be filled with ``placeholders``.
    """
    if not isinstance(template, str):
        raise ValueError(f"{name} must be a string, got {type(template).__name__}: {template!r}.")
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError as exc:
        raise ValueError(f"{name} is not a valid format string ({exc}): {template!r}.") from exc
    allowed = ", ".join("{" + p + "}" for p in placeholders)
    for field in fields:
        root = field.split(".", 1)[0].split("[", 1)[0]
        if root not in placeholders:
            raise ValueError(f"{name} may use only {allowed}, but names {{{field}}}: {template!r}.")


def as_ui_result(answer: Any) -> ConfirmationUIResult:
    """A UI's answer as a :class:`ConfirmationUIResult` (a dict, or any object with ``action``,
    ``feedback`` and ``new_tool_params``, such as Haystack's dataclass, is converted)."""
    if isinstance(answer, ConfirmationUIResult):
        return answer
    if isinstance(answer, dict):
        return ConfirmationUIResult(**answer)
    return ConfirmationUIResult(
        action=answer.action,
        feedback=getattr(answer, "feedback", None),
        new_tool_params=getattr(answer, "new_tool_params", None),
    )


def describe_timedelta(delta: timedelta) -> str:
    """``timedelta(days=3)`` -> ``"3 days"``; ``timedelta(hours=1, minutes=30)`` -> ``"1 hour 30 minutes"``."""
    seconds = int(delta.total_seconds())
    parts = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts) or f"{delta.total_seconds():g} seconds"
