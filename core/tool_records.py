"""What hook families leave on tool calls and their results that others read.

A family never imports another (DESIGN.md "Families"), yet some of what one writes is read
elsewhere: the audit records a confirmation's decision and an offloaded result's pointer, the
run loop's spans name the decision, the compactor skips results already offloaded, and the tool
activity writes the same pointer text as the offloading hook. Those marks and texts live here,
one layer below the families:

- a confirmation's record (a ``DecisionRecord`` as JSON) under :data:`CONFIRMATION_KEY`, in a
  confirmed or modified call's ``ToolCall.extra`` or in the ``ChatMessage.meta`` of the tool
  message answering a rejected call; the hash that binds it to arguments, :func:`arguments_sha256`;
- an offloaded result's references under :data:`OFFLOADED_META_KEY` in its message's meta, its
  key in the store (:func:`result_key`), and the text the conversation keeps (:func:`pointer_text`,
  or :func:`unstored_text` when the store kept failing).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from core.messages import ChatMessage

#: Where a confirmed or modified call keeps its confirmation record (``ToolCall.extra``), and where
#: the tool message answering a rejected call keeps it (``ChatMessage.meta``).
CONFIRMATION_KEY = "confirmation"

#: Meta key marking an offloaded tool-result message; its value is the list of references written.
OFFLOADED_META_KEY = "tool_result_offloaded"


def canonical_json(arguments: dict[str, Any] | None) -> str:
    """The canonical JSON of ``arguments``: sorted keys, no spaces, non-ASCII kept as is.

    Its UTF-8 encoding is what :func:`arguments_sha256` hashes and what a decision's size limit on
    ``new_tool_params`` measures.
    """
    return json.dumps(arguments or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def arguments_sha256(arguments: dict[str, Any] | None) -> str:
    """SHA-256 (hex) of the canonical JSON of ``arguments`` (sorted keys, no spaces).

    A decision is bound to the arguments it approved through this hash.
    """
    return hashlib.sha256(canonical_json(arguments).encode("utf-8")).hexdigest()


def confirmation_records(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The confirmation records in ``messages`` (on confirmed or modified calls, and on the tool
    messages answering rejected ones), one per tool call id, in message order."""
    seen: dict[str, dict[str, Any]] = {}
    for message in messages:
        found = [(call.extra or {}).get(CONFIRMATION_KEY) for call in message.tool_calls]
        found.append((message.meta or {}).get(CONFIRMATION_KEY))
        for record in found:
            if isinstance(record, dict) and record.get("tool_call_id") not in seen:
                seen[record.get("tool_call_id")] = record
    return list(seen.values())


def encode_key_segment(value: str) -> str:
    """Percent-encode ``value`` into one path segment (no ``/``), so distinct values stay distinct.

    :raises ValueError: If ``value`` is empty, ``.`` or ``..``.
    """
    if value in ("", ".", ".."):
        raise ValueError(f"{value!r} cannot be used as a key segment.")
    return quote(value, safe="")


def result_key(step: int, tool_name: str, call_id: str | None, position: int) -> str:
    """The store key of one result: ``step-{step}/{tool}/{call id}.txt``.

    Each part is percent-encoded into one segment, so distinct (step, tool, id) never map to the
    same key. An id-less call uses ``@{position in this step's batch}``, which no encoded id can
    equal (``@`` is always encoded in ids).
    """
    call_part = encode_key_segment(call_id) if call_id else f"@{position}"
    return f"step-{step}/{encode_key_segment(tool_name)}/{call_part}.txt"


def pointer_text(reference: str, content: str, preview_chars: int) -> str:
    """What stays in the conversation in place of an offloaded result."""
    preview = content[:preview_chars] + ("..." if len(content) > preview_chars else "")
    return (
        f"Tool result offloaded: {len(content)} characters at '{reference}'. "
        "Read it with read_tool_result(reference, start/end or start_line/end_line). "
        f"Preview: {preview}"
    )


def unstored_text(tool_name: str, content: str, deadline: timedelta, error: object) -> str:
    """What the conversation gets when a result over the policy's threshold could not be stored:
    an error, not the result (the policy promised it would not sit in the context)."""
    return (
        f"The result of '{tool_name}' ({len(content)} characters) could not be stored: the tool-result store "
        f"kept failing for {deadline} ({error}). It was not kept in the conversation; call the tool again "
        "later if you need it."
    )
