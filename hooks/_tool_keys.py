"""Mappings keyed by tool: a tool name, a tuple of names sharing one entry, or ``"*"``.

``ConfirmationHook`` (strategies) and ``ToolResultOffloadHook`` (policies) both take such a
mapping, with Haystack's rules: a tool's own key beats a tuple containing it, a tuple beats
``"*"``, and a tool no key matches gets nothing. Tuple keys serialise as JSON-array strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypeVar

ToolKey = str | tuple[str, ...]
WILDCARD = "*"

V = TypeVar("V")


def validate_tool_keys(mapping: Mapping[ToolKey, object], what: str) -> None:
    """Check every key is a tool name, a non-empty tuple of names, or ``"*"``.

    A ``"*"`` inside a tuple is accepted, as in Haystack, and means nothing there: the tuple covers
    the tools it names, and only the key ``"*"`` itself is the wildcard. Keys must serialise (tuple
    keys as JSON-array strings) because every hook travels to the worker by ``to_dict``, so a key
    that is not a non-empty string or tuple of them is refused.

    :param what: The mapping's name, for the error message.
    :raises ValueError: For a malformed key.
    """
    for key in mapping:
        names = key if isinstance(key, tuple) else (key,)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"{what} keys must be a tool name, a tuple of tool names, or '*', got {key!r}.")


def lookup_by_tool(tool_name: str, mapping: Mapping[ToolKey, V]) -> V | None:
    """The entry for ``tool_name``: its own key, else a tuple containing it, else ``"*"``, else None."""
    if tool_name in mapping:
        return mapping[tool_name]
    for key, value in mapping.items():
        if isinstance(key, tuple) and tool_name in key:
            return value
    return mapping.get(WILDCARD)


def encode_tool_key(key: ToolKey) -> str:
    """Tuple keys become JSON-array strings (serialised mapping keys must be strings), as in Haystack."""
    return json.dumps(list(key)) if isinstance(key, tuple) else key


def decode_tool_key(raw: str) -> ToolKey:
    """Inverse of :func:`encode_tool_key`."""
    return tuple(json.loads(raw)) if raw.startswith("[") else raw
