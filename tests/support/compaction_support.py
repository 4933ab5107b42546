"""Test helpers for compaction: conversation builders, and the same conversation as Haystack messages.

Haystack is a test-only dependency: it is imported here (never from product code) so that
equivalence tests can run Haystack's compactors next to ours on the same conversation.
"""

from __future__ import annotations

import random
from typing import Any

from core.messages import ChatMessage, ChatRole, ToolCall
from core.tools import ToolSpec


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(tool_name=name, arguments=arguments, id=call_id)


def step(call_id: str, result: str, name: str = "search", text: str | None = None) -> list[ChatMessage]:
    """One tool-calling step: an assistant call and its result."""
    origin = call(name, call_id, q=call_id)
    return [ChatMessage.from_assistant(text, tool_calls=[origin]), ChatMessage.from_tool(result, origin)]


def parallel_step(call_ids: list[str], result: str) -> list[ChatMessage]:
    """One step with several calls and all their results."""
    origins = [call("search", cid, q=cid) for cid in call_ids]
    return [ChatMessage.from_assistant(tool_calls=origins), *(ChatMessage.from_tool(result, o) for o in origins)]


def random_conversation(
    seed: int, turns: int = 4, max_steps: int = 5, result_lines: tuple[int, ...] = (1, 5, 50, 200, 600)
) -> list[ChatMessage]:
    """A varied, reproducible conversation: system prompt, turns of user text, tool steps and replies.

    :param result_lines: Tool results are this many lines long, chosen at random.
    """
    rng = random.Random(seed)
    messages = [ChatMessage.from_system("You are a careful agent. " * rng.randint(1, 5))]
    if rng.random() < 0.3:
        messages.append(ChatMessage.from_system("Second instruction."))
    call_number = 0
    for turn in range(turns):
        messages.append(ChatMessage.from_user(f"Task {turn}: " + "please do it " * rng.randint(1, 30)))
        for _ in range(rng.randint(0, max_steps)):
            calls = []
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                call_number += 1
                name = rng.choice(["search", "read", "run"])
                calls.append(call(name, f"c{call_number}", arg="x" * rng.randint(0, 40)))
            text = "thinking " * rng.randint(1, 10) if rng.random() < 0.3 else None
            messages.append(ChatMessage.from_assistant(text, tool_calls=calls))
            for origin in calls:
                meta = {"tool_result_offloaded": True} if rng.random() < 0.1 else {}
                body = "result line\n" * rng.choice(result_lines)
                messages.append(ChatMessage.from_tool(body, origin, error=rng.random() < 0.1, meta=meta))
        if turn < turns - 1 or rng.random() < 0.5:
            messages.append(ChatMessage.from_assistant("Done: " + "answer " * rng.randint(1, 80)))
    return messages


def to_haystack(messages: list[ChatMessage]) -> list[Any]:
    """The same conversation as ``haystack.dataclasses.ChatMessage`` objects."""
    from haystack.dataclasses import ChatMessage as HMessage
    from haystack.dataclasses import ToolCall as HCall

    def hcall(c: ToolCall) -> Any:
        return HCall(tool_name=c.tool_name, arguments=dict(c.arguments), id=c.id)

    out = []
    for m in messages:
        meta = dict(m.meta)
        if m.role == ChatRole.USER:
            out.append(HMessage.from_user(m.text, meta=meta))
        elif m.role == ChatRole.SYSTEM:
            out.append(HMessage.from_system(m.text, meta=meta))
        elif m.role == ChatRole.ASSISTANT:
            out.append(HMessage.from_assistant(m.text, tool_calls=[hcall(c) for c in m.tool_calls], meta=meta))
        else:
            r = m.tool_call_result
            out.append(HMessage.from_tool(r.result, origin=hcall(r.origin), error=r.error, meta=meta))
    return out


def from_haystack(messages: list[Any]) -> list[ChatMessage]:
    """Haystack messages back as ours (to continue a conversation Haystack compacted)."""
    out = []
    for m in messages:
        role = m.role.value
        meta = dict(m.meta)
        if role == "tool":
            r = m.tool_call_result
            origin = ToolCall(tool_name=r.origin.tool_name, arguments=r.origin.arguments, id=r.origin.id)
            out.append(ChatMessage.from_tool(r.result, origin, error=r.error, meta=meta))
        else:
            calls = [ToolCall(tool_name=c.tool_name, arguments=c.arguments, id=c.id) for c in m.tool_calls]
            out.append(ChatMessage(role=ChatRole(role), text=m.text, tool_calls=calls, meta=meta))
    return out


def key(message: Any) -> tuple:
    """What must match between our kept messages and Haystack's: role, text, call ids, result ids and texts."""
    results = message.tool_call_results
    return (
        message.role.value,
        message.text,
        tuple(c.id for c in message.tool_calls),
        tuple((r.origin.id, r.result, r.error) for r in results),
        str(message.meta.get("context_compaction")),
    )


def keys(messages: list[Any] | None) -> list[tuple] | None:
    return None if messages is None else [key(m) for m in messages]


def haystack_tools(specs: list[ToolSpec]) -> list[Any]:
    """Haystack ``Tool`` objects with the same schemas as ``specs``."""
    from haystack.tools import Tool as HTool

    def noop(**kwargs: Any) -> str:
        return ""

    return [HTool(name=s.name, description=s.description, parameters=s.parameters, function=noop) for s in specs]


def assert_pairs_intact(messages: list[ChatMessage]) -> None:
    """Rule 3: every tool result follows its call's assistant message, and every call has all its results."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == ChatRole.ASSISTANT:
            assert not open_calls, f"calls {open_calls} lost their results"
            open_calls = {c.id for c in message.tool_calls}
        elif message.tool_call_results:
            for r in message.tool_call_results:
                assert r.origin.id in open_calls, f"result for {r.origin.id} has no call before it"
                open_calls.discard(r.origin.id)
        else:
            assert not open_calls, f"calls {open_calls} lost their results"
    assert not open_calls, f"calls {open_calls} lost their results"
