"""The run's ``State``: the one object hooks read and mutate, as in Haystack.

``State`` wraps a dict whose keys are fixed by a schema: the reserved keys below plus the
agent's ``state_schema``. ``set`` merges lists (appends) and replaces everything else unless a
``handler_override`` says otherwise, exactly like Haystack's ``State.set``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, get_args, get_origin

from core.messages import ChatMessage
from core.trust import STATE_HANDLER, STATE_TYPE, import_trusted


def merge_lists(current: Any, new: Any) -> list:
    """Append ``new`` (a list or one item) to ``current`` (a list or None)."""
    current_list = [] if current is None else list(current) if isinstance(current, list) else [current]
    new_list = list(new) if isinstance(new, list) else [new]
    return current_list + new_list


def replace_values(current: Any, new: Any) -> Any:
    """Replace the current value."""
    return new


#: Keys the agent owns. A ``state_schema`` naming any of them but ``messages`` is a ``ValueError``;
#: ``messages`` may be redefined (as ``list[ChatMessage]``, with a handler of one's own), as in Haystack.
RESERVED_STATE_KEYS: dict[str, dict[str, Any]] = {
    "messages": {"type": list, "handler": merge_lists},
    "step_count": {"type": int, "handler": replace_values},
    "token_usage": {"type": dict, "handler": replace_values},
    "tool_call_counts": {"type": dict, "handler": replace_values},
    "exit_reason": {"type": str, "handler": replace_values},
    "continue_run": {"type": bool, "handler": replace_values},
    "stop_run": {"type": str, "handler": replace_values},
    "tools": {"type": list, "handler": replace_values},
    "hook_context": {"type": dict, "handler": replace_values},
    "context_tokens": {"type": int, "handler": replace_values},
}

_BUILTIN_TYPES = {t.__name__: t for t in (str, int, float, bool, list, dict)}


def _is_message_list(value_type: Any) -> bool:
    args = get_args(value_type)
    return (
        get_origin(value_type) is list
        and len(args) == 1
        and isinstance(args[0], type)
        and issubclass(args[0], ChatMessage)
    )


_MESSAGE_LIST = "list[core.messages.ChatMessage]"


def _type_to_str(value_type: Any) -> str:
    if _is_message_list(value_type):
        return _MESSAGE_LIST
    base = get_origin(value_type) or value_type
    if base in _BUILTIN_TYPES.values():
        return base.__name__
    return f"{base.__module__}.{base.__qualname__}"


def _type_from_str(name: str) -> Any:
    if name == _MESSAGE_LIST:
        return list[ChatMessage]
    if name in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[name]
    return import_trusted(name, STATE_TYPE)


def _callable_to_str(function: Callable) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def validate_state_schema(state_schema: dict[str, dict[str, Any]]) -> None:
    """Check a user ``state_schema``.

    :param state_schema: ``{key: {"type": python_type, "handler": optional callable}}``.
    :raises ValueError: If a key is reserved, has no ``type``, or its handler is not callable.
    """
    for key, definition in state_schema.items():
        if key in RESERVED_STATE_KEYS and key != "messages":
            reserved = ", ".join(k for k in RESERVED_STATE_KEYS if k != "messages")
            raise ValueError(f"state_schema key '{key}' is reserved by the agent; reserved keys are: {reserved}.")
        if not isinstance(definition, dict) or "type" not in definition:
            raise ValueError(f"state_schema key '{key}' needs a definition like {{'type': int}}, got {definition!r}.")
        if key == "messages" and not _is_message_list(definition["type"]):
            raise ValueError(
                f"state_schema key 'messages' must be of type list[ChatMessage], got {definition['type']!r}."
            )
        handler = definition.get("handler")
        if handler is not None and not callable(handler):
            raise ValueError(f"state_schema handler for '{key}' must be callable, got {handler!r}.")


def state_schema_to_dict(state_schema: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Serialise a ``state_schema``: types by name, handlers by import path."""
    out: dict[str, dict[str, str]] = {}
    for key, definition in state_schema.items():
        out[key] = {"type": _type_to_str(definition["type"])}
        if definition.get("handler") is not None:
            out[key]["handler"] = _callable_to_str(definition["handler"])
    return out


def state_schema_from_dict(data: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Inverse of :func:`state_schema_to_dict`."""
    out: dict[str, dict[str, Any]] = {}
    for key, definition in data.items():
        out[key] = {"type": _type_from_str(definition["type"])}
        if definition.get("handler"):
            out[key]["handler"] = import_trusted(definition["handler"], STATE_HANDLER)
    return out


class State:
    """The live state of a run, passed to every hook.

    :param schema: Extra keys (a validated ``state_schema``); the reserved keys are always present.
    :param data: Initial values.
    """

    def __init__(self, schema: dict[str, dict[str, Any]] | None = None, data: dict[str, Any] | None = None) -> None:
        self.schema: dict[str, dict[str, Any]] = {**RESERVED_STATE_KEYS}
        for key, definition in (schema or {}).items():
            handler = definition.get("handler")
            if handler is None:
                handler = (
                    merge_lists if (get_origin(definition["type"]) or definition["type"]) is list else replace_values
                )
            self.schema[key] = {"type": definition["type"], "handler": handler}
        self._data: dict[str, Any] = dict(data or {})

    def get(self, key: str, default: Any = None) -> Any:
        """A deep copy of the value at ``key`` (so a hook cannot change State by accident)."""
        return copy.deepcopy(self._data.get(key, default))

    def set(self, key: str, value: Any, handler_override: Callable[[Any, Any], Any] | None = None) -> None:
        """Merge or replace the value at ``key``.

        :param key: A key of the schema.
        :param value: The value to merge (lists are appended by default) or store.
        :param handler_override: ``(current, new) -> stored``, e.g. ``replace_values`` to
            overwrite ``messages`` instead of appending.
        :raises ValueError: If ``key`` is not in the schema.
        """
        definition = self.schema.get(key)
        if definition is None:
            raise ValueError(f"State has no key '{key}'. Known keys: {', '.join(self.schema)}.")
        handler = handler_override or definition["handler"]
        self._data[key] = handler(self._data.get(key), value)

    def has(self, key: str) -> bool:
        """Whether ``key`` holds a value."""
        return key in self._data

    @property
    def data(self) -> dict[str, Any]:
        """The live data (not a copy); hooks read it for speed, and write through ``set``."""
        return self._data

    @property
    def messages(self) -> list[ChatMessage]:
        """Shortcut for ``data["messages"]``."""
        return self._data.get("messages", [])
