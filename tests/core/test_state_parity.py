"""Differential test against haystack-ai 3.4.1: ``State.set`` merges the same way, so a hook's
``state.set("messages", [...])`` appends, as in Haystack, unless it passes ``handler_override``."""

from __future__ import annotations

from typing import Any

import pytest
from haystack.components.agents.state.state import State as HState
from haystack.components.agents.state.state_utils import replace_values as h_replace_values
from haystack.dataclasses import ChatMessage as HChatMessage

from core.messages import ChatMessage
from core.state import State, replace_values

SCHEMA: dict[str, dict[str, Any]] = {"notes": {"type": list}, "score": {"type": int}, "tags": {"type": list[str]}}

# (key, value, replace?) in order; messages are given as (role, text) and built on each side.
SETS = [
    ("messages", [("user", "one")], False),
    ("messages", [("assistant", "two"), ("user", "three")], False),
    ("messages", ("user", "four"), False),  # a single message, not a list: appended too
    ("notes", ["a"], False),
    ("notes", "b", False),
    ("score", 1, False),
    ("score", 2, False),
    ("tags", ["x"], False),
    ("tags", ["y"], False),
    ("messages", [("user", "five")], True),  # handler_override=replace_values: the list is replaced
    ("messages", [("assistant", "six")], False),
    ("notes", ["c"], True),
]


def build(value: Any, kind: str) -> Any:
    make = {
        "ours": {"user": ChatMessage.from_user, "assistant": ChatMessage.from_assistant},
        "theirs": {"user": HChatMessage.from_user, "assistant": HChatMessage.from_assistant},
    }[kind]
    if isinstance(value, tuple):
        return make[value[0]](value[1])
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return [make[role](text) for role, text in value]
    return value


def view(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key in ("messages", "notes", "score", "tags"):
        value = data.get(key)
        if key == "messages" and value is not None:
            value = [(m.role.value, m.text) for m in value]
        out[key] = value
    return out


def test_set_merges_and_replaces_as_haystacks_state():
    ours, theirs = State(schema=SCHEMA), HState(schema=SCHEMA)
    for step, (key, value, replace) in enumerate(SETS):
        ours.set(key, build(value, "ours"), handler_override=replace_values if replace else None)
        theirs.set(key, build(value, "theirs"), handler_override=h_replace_values if replace else None)
        assert view(ours.data) == view(theirs.data), f"after set #{step} ({key})"
    assert [text for _, text in view(ours.data)["messages"]] == ["five", "six"]


def test_an_unknown_key_is_a_value_error_in_both():
    with pytest.raises(ValueError):
        HState(schema=SCHEMA).set("unknown", 1)
    with pytest.raises(ValueError):
        State(schema=SCHEMA).set("unknown", 1)
