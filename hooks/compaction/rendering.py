"""Plain-text rendering of a conversation: what token counters measure and what summaries read.

The format is Haystack's (``haystack.token_counters.utils``), so that a counter measuring the same
conversation in Haystack and here sees the same text, and compactors keep the same messages:

- a tool-result message renders as one ``[tool:NAME (error)] RESULT`` line per result;
- any other message renders ``[ROLE] TEXT`` and one ``[ROLE -> tool_call] NAME(JSON-ARGS)`` line per call
  (arguments as sorted JSON), or ``[ROLE] <no content>`` when it has neither;
- messages are joined with a newline; tool schemas render as one sorted JSON array.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from core.messages import ChatMessage
from core.tools import ToolSpec


def _call_id(call_id: str | None, include: bool) -> str:
    return f" id={call_id}" if include and call_id else ""


def render_message(message: ChatMessage, include_tool_call_ids: bool = False) -> str:
    """One message as one or more lines of plain text.

    :param message: The message to render.
    :param include_tool_call_ids: Add ``id=...`` to tool calls and results, so that a reader (the
        summarising model) can tell which result answers which call.
    """
    role = message.role.value
    if message.tool_call_results:
        return "\n".join(
            f"[tool:{result.origin.tool_name}{_call_id(result.origin.id, include_tool_call_ids)}"
            f"{' (error)' if result.error else ''}] {result.result}"
            for result in message.tool_call_results
        )
    lines = [f"[{role}] {message.text}"] if message.text is not None else []
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, default=str, sort_keys=True)
        lines.append(f"[{role} -> tool_call{_call_id(call.id, include_tool_call_ids)}] {call.tool_name}({arguments})")
    return "\n".join(lines) if lines else f"[{role}] <no content>"


def render_conversation(messages: Iterable[ChatMessage], include_tool_call_ids: bool = False) -> str:
    """The conversation as one block of text, one rendered message after another."""
    return "\n".join(render_message(message, include_tool_call_ids) for message in messages)


def _tool_spec_dict(tool: ToolSpec | dict[str, Any]) -> dict[str, Any]:
    spec = tool if isinstance(tool, ToolSpec) else ToolSpec.model_validate(tool)
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def render_tools(tools: Sequence[ToolSpec | dict[str, Any]] | None) -> str:
    """Tool schemas as one JSON block (what a provider sends next to the messages); ``""`` for none.

    :param tools: ``ToolSpec`` objects or their ``model_dump()`` dicts (``state.data["tools"]``).
    """
    if not tools:
        return ""
    return json.dumps([_tool_spec_dict(tool) for tool in tools], default=str, sort_keys=True)
