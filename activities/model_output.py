"""What a model call's answer carries and must be: its usage by model and its cost, and the typed
final answer of ``Agent(output_type=...)``.

The model activity (activities/model.py) calls these on each answer, on the worker: prices come
from the worker's ``AGENT_MODEL_PRICES``, and an answer is checked against the JSON schema that
travelled in the run (never a class: the worker imports nothing a run names).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from core.messages import ChatMessage
from core.models import Model
from core.settings import get_settings

#: ``ApplicationError.type`` of a final answer that is not the agent's ``output_type`` after one correction.
OUTPUT_INVALID_ERROR = "ModelOutputInvalid"
#: Longest part of a validation error sent back to the model or put in a failure.
_PROBLEM_CHARS = 1_000


def account(usage: dict[str, Any], reply: ChatMessage, choice: Model) -> None:
    """Add to a call's ``usage`` (and its ``reply``'s) the cost (when ``AGENT_MODEL_PRICES`` prices
    the model) and a ``by_model`` breakdown under ``model`` or ``model@ENDPOINT``. Usage is summed
    key by key (``core.payloads.add_usage``), so a run's ``token_usage`` carries both, sub-agents'
    included."""
    key = f"{choice.name}@{choice.endpoint}" if choice.endpoint else choice.name
    prices = get_settings().model_prices or {}
    price = prices.get(key) or prices.get(choice.name)
    counted = {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if k in usage}
    if price is not None:
        cost = (usage.get("prompt_tokens", 0) * price[0] + usage.get("completion_tokens", 0) * price[1]) / 1_000_000
        usage["cost"] = counted["cost"] = round(cost, 9)
    usage["by_model"] = {key: counted}
    reply.meta["usage"] = dict(usage)


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions ``response_format`` asking for JSON of ``schema``."""
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(schema.get("title") or "final_answer"))
    return {"type": "json_schema", "json_schema": {"name": name[:64], "schema": schema}}


def output_problem(reply: ChatMessage, schema: dict[str, Any]) -> str | None:
    """Why ``reply`` is not a final answer of ``schema``, or None (a reply with tool calls is not a
    final answer, so it is not checked)."""
    if reply.tool_calls:
        return None
    try:
        value = json.loads(reply.text or "")
    except ValueError as exc:
        return f"the answer is not JSON ({exc})"
    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the answer"
    return f"{where}: {error.message}"[:_PROBLEM_CHARS]


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    """One compiled validator per schema (an agent's schema is the same on every step)."""
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def correction_messages(reply: ChatMessage, problem: str) -> list[dict[str, Any]]:
    """The wire messages that send an invalid answer back once, with why, for a correction."""
    return [
        {"role": "assistant", "content": reply.text or ""},
        {
            "role": "user",
            "content": f"Your answer does not match the required JSON schema: {problem}. "
            "Answer again with only a JSON value that matches the schema.",
        },
    ]
