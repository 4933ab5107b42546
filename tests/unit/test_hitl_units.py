"""Construction, serialisation, key resolution and message rewriting of the confirmation hook,
without a server; the rewriting is checked against Haystack's own (installed for reference)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent import Agent, ChatMessage, ToolCall
from core.serialization import object_from_dict
from hooks._tool_keys import lookup_by_tool
from hooks.human_in_the_loop import (
    AlwaysAskPolicy,
    AskOncePolicy,
    ConfirmationHook,
    ConfirmationUIResult,
    DurableConfirmationStrategy,
    NeverAskPolicy,
    ToolExecutionDecision,
)
from hooks.human_in_the_loop.hooks import apply_decisions, with_unique_ids
from hooks.human_in_the_loop.strategies import describe_timedelta
from tests import tools as t


def test_hook_only_at_before_tool():
    hook = ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy())})
    Agent(model="m", tools=[t.add], hooks={"before_tool": [hook]})
    with pytest.raises(ValueError, match="only supports: before_tool"):
        Agent(model="m", tools=[t.add], hooks={"after_tool": [hook]})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": timedelta(0)}, "timeout must be a positive"),
        ({"on_timeout": "maybe"}, "on_timeout must be"),
        ({"reject_template": "no"}, "must contain {tool_name}"),
        ({"modify_template": "{tool_name}"}, "must contain {final_tool_params}"),
        ({"user_feedback_template": "x"}, "must contain {feedback}"),
        ({"notify_url": "ftp://x"}, "http"),
    ],
)
def test_strategy_rejects_bad_configuration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DurableConfirmationStrategy(AlwaysAskPolicy(), **kwargs)


@pytest.mark.parametrize("strategies", [{}, {"": DurableConfirmationStrategy(AlwaysAskPolicy())}, {"x": object()}])
def test_hook_rejects_bad_strategies(strategies):
    with pytest.raises(ValueError):
        ConfirmationHook(strategies)


def test_round_trip_with_tuple_keys():
    hook = ConfirmationHook(
        {
            ("add", "echo"): DurableConfirmationStrategy(
                AskOncePolicy(), timeout=timedelta(days=3), on_timeout="confirm", notify_url="http://127.0.0.1:9/x"
            ),
            "*": DurableConfirmationStrategy(NeverAskPolicy(), reject_template="No {tool_name}."),
        }
    )
    data = hook.to_dict()
    assert set(data["init_parameters"]["confirmation_strategies"]) == {'["add", "echo"]', "*"}
    back = object_from_dict(data)
    assert back.to_dict() == data
    strategy = back.confirmation_strategies[("add", "echo")]
    assert strategy.timeout == timedelta(days=3) and isinstance(strategy.confirmation_policy, AskOncePolicy)


def test_most_specific_key_wins():
    own, group, wildcard = (DurableConfirmationStrategy(AlwaysAskPolicy()) for _ in range(3))
    strategies = {"*": wildcard, ("add", "echo"): group, "add": own}
    assert lookup_by_tool("add", strategies) is own
    assert lookup_by_tool("echo", strategies) is group
    assert lookup_by_tool("other", strategies) is wildcard
    assert lookup_by_tool("other", {"add": own}) is None


def test_ask_once_policy_memory_and_snapshot():
    policy = AskOncePolicy()
    assert policy.should_ask("add", "", {"a": 1})
    policy.update_after_confirmation("add", "", {"a": 1}, ConfirmationUIResult(action="reject"))
    assert policy.should_ask("add", "", {"a": 1})
    policy.update_after_confirmation("add", "", {"a": 1}, ConfirmationUIResult(action="confirm"))
    assert not policy.should_ask("add", "", {"a": 1}) and policy.should_ask("add", "", {"a": 2})
    hook = ConfirmationHook({("add",): DurableConfirmationStrategy(policy)})
    fresh = ConfirmationHook.from_dict(hook.to_dict())
    assert fresh.confirmation_strategies[("add",)].confirmation_policy.should_ask("add", "", {"a": 1})
    fresh.restore(hook.snapshot())
    assert not fresh.confirmation_strategies[("add",)].confirmation_policy.should_ask("add", "", {"a": 1})


def test_unique_ids_are_deterministic():
    calls = [ToolCall(tool_name="a"), ToolCall(tool_name="b", id="x"), ToolCall(tool_name="c", id="x")]
    ids = [c.id for c in with_unique_ids(calls, step=4)]
    assert ids == ["hitl-s4-c0", "x", "x-2"] == [c.id for c in with_unique_ids(calls, step=4)]


def test_describe_timedelta():
    assert describe_timedelta(timedelta(days=3)) == "3 days"
    assert describe_timedelta(timedelta(hours=1, minutes=30)) == "1 hour 30 minutes"


def test_rewriting_matches_haystack():
    """Same calls, same decisions: the same conversation as Haystack's ConfirmationHook writes."""
    from haystack.dataclasses import ChatMessage as HChatMessage
    from haystack.dataclasses import ToolCall as HToolCall
    from haystack.hooks.human_in_the_loop import ToolExecutionDecision as HDecision
    from haystack.hooks.human_in_the_loop.strategies import _apply_tool_execution_decisions

    raw = [("c1", "add", {"a": 1}), ("c2", "add", {"a": 2}), ("c3", "echo", {"text": "x"})]
    decisions = [
        dict(tool_call_id="c1", tool_name="add", execute=False, feedback="Tool execution for 'add' was rejected."),
        dict(tool_call_id="c2", tool_name="add", execute=True, final_tool_params={"a": 20}),
        dict(tool_call_id="c3", tool_name="echo", execute=True, final_tool_params={"text": "x"}),
    ]
    ours = apply_decisions(
        ChatMessage.from_assistant("thinking", [ToolCall(tool_name=n, arguments=a, id=i) for i, n, a in raw]),
        [ToolExecutionDecision(**d) for d in decisions],
    )
    rejected, kept = _apply_tool_execution_decisions(
        [HChatMessage.from_assistant("thinking", tool_calls=[HToolCall(n, a, id=i) for i, n, a in raw])],
        [HDecision(**d) for d in decisions],
    )
    theirs = rejected + kept

    def shape(m):
        calls = [(c.id, c.tool_name, c.arguments) for c in m.tool_calls]
        result = m.tool_call_result
        return (m.role.value, m.text, calls, (result.result, result.error) if result else None)

    assert [shape(m) for m in ours] == [shape(m) for m in theirs]
