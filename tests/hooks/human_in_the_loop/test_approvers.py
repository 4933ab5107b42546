"""Who may decide, without a server (a decision is only as safe as the check of its approver): the
``approvers`` arguments of ``DurableConfirmationStrategy`` and ``ConfirmationHook`` (errors,
serialisation), which list a hook gives each call, and the registry's check of a decision's approver."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent import Agent, ChatMessage, ToolCall
from core.serialization import object_from_dict
from core.state import State
from core.tools import ToolSpec
from hooks.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    ConfirmationHook,
    DurableConfirmationStrategy,
    SimpleConsoleUI,
    ToolExecutionDecision,
)
from hooks.human_in_the_loop.dataclasses import PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.registry import ConfirmationRegistry, DecisionError, approver_list
from tests import tools as t


def durable(**kwargs: Any) -> DurableConfirmationStrategy:
    return DurableConfirmationStrategy(AlwaysAskPolicy(), **kwargs)


# -- DurableConfirmationStrategy(approvers=...) ------------------------------------------------


@pytest.mark.parametrize(
    ("approvers", "message"),
    [
        ([], r"approvers is empty, so no one could decide"),
        ((), r"approvers is empty"),
        ("alice", r"approvers must be a list of approver names, got 'alice'"),
        ({"alice"}, r"approvers must be a list of approver names"),
        (["alice", 3], r"must hold approver names \(strings\), got 3 \(int\)"),
        (["alice", None], r"got None \(NoneType\)"),
        ([""], r"blank approver name ''"),
        (["   "], r"blank approver name '   '"),
        ([" alice"], r"holds ' alice', with spaces around it"),
    ],
)
def test_strategy_refuses_bad_approvers(approvers, message):
    with pytest.raises(ValueError, match=message):
        durable(approvers=approvers)


def test_blocking_strategy_inherits_the_check():
    with pytest.raises(ValueError, match="approvers is empty"):
        BlockingConfirmationStrategy(
            confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI(), approvers=[]
        )


def test_strategy_keeps_a_list_without_duplicates_and_none_means_anyone():
    assert durable().approvers is None
    assert durable(approvers=("bob", "alice", "bob")).approvers == ["bob", "alice"]
    assert approver_list(["a", "b", "a"]) == ["a", "b"]


def test_strategy_round_trip_and_older_dicts_have_no_approvers():
    strategy = durable(approvers=["alice", "bob"])
    data = strategy.to_dict()
    assert data["init_parameters"]["approvers"] == ["alice", "bob"]
    back = object_from_dict(data)
    assert isinstance(back, DurableConfirmationStrategy) and back.approvers == ["alice", "bob"]
    assert back.to_dict() == data
    older = strategy.to_dict()
    del older["init_parameters"]["approvers"]
    assert DurableConfirmationStrategy.from_dict(older).approvers is None
    assert durable().to_dict()["init_parameters"]["approvers"] is None


def test_blocking_strategy_round_trip_keeps_approvers():
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI(), approvers=["carol"]
    )
    back = object_from_dict(strategy.to_dict())
    assert isinstance(back, BlockingConfirmationStrategy) and back.approvers == ["carol"]
    assert back.to_dict() == strategy.to_dict()
    assert "approvers=['carol']" in repr(back)


# -- ConfirmationHook(approvers=...) ------------------------------------------------------------


class NotDurable:
    """A custom strategy (not a DurableConfirmationStrategy): it has no approvers to check."""

    async def run_async(self, **kwargs: Any) -> ToolExecutionDecision:
        return ToolExecutionDecision(tool_name=kwargs["tool_name"], execute=True)

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.NotDurable", "init_parameters": {}}


@pytest.mark.parametrize(
    ("strategies", "approvers", "message"),
    [
        ({"add": durable()}, ["alice"], r"approvers must be a dict of tool name -> list of approver names"),
        ({"add": durable()}, {"": ["alice"]}, r"approvers keys must be a tool name"),
        ({"add": durable()}, {("add", "*"): ["alice"]}, r"approvers keys must be a tool name"),
        ({"add": durable()}, {"add": []}, r"approvers\['add'\] is empty"),
        ({"add": durable()}, {"add": "alice"}, r"approvers\['add'\] must be a list of approver names"),
        ({"add": durable()}, {"add": ["alice", ""]}, r"approvers\['add'\] holds a blank approver name"),
        ({"add": durable()}, {"ad": ["alice"]}, r"approvers\['ad'\] names tool 'ad', which no confirmation strategy"),
        ({"add": durable()}, {("add", "echo"): ["alice"]}, r"names tool 'echo', which no confirmation strategy"),
        ({"add": NotDurable()}, {"add": ["alice"]}, r"covers 'add', whose strategy .* does not check approvers"),
        ({"add": durable(), "*": NotDurable()}, {"*": ["alice"]}, r"approvers\['\*'\] covers '\*'"),
    ],
)
def test_hook_refuses_bad_approvers(strategies, approvers, message):
    with pytest.raises(ValueError, match=message):
        ConfirmationHook(strategies, approvers=approvers)


def test_hook_approvers_may_name_tools_a_wildcard_strategy_covers():
    hook = ConfirmationHook(
        {"*": durable(approvers=["ops"])}, approvers={"add": ["alice"], ("echo", "record"): ["bob"]}
    )
    assert hook.approvers == {"add": ["alice"], ("echo", "record"): ["bob"]}
    assert ConfirmationHook({"*": durable()}, approvers={}).approvers is None


def test_hook_round_trip_with_tuple_keys_and_through_an_agent():
    hook = ConfirmationHook(
        {("add", "echo"): durable(approvers=["ops"]), "*": durable()},
        approvers={"add": ["alice", "bob"], ("echo", "record"): ["carol"], "*": ["dave"]},
    )
    data = hook.to_dict()
    assert data["init_parameters"]["approvers"] == {
        "add": ["alice", "bob"],
        '["echo", "record"]': ["carol"],
        "*": ["dave"],
    }
    back = object_from_dict(data)
    assert back.approvers == hook.approvers and back.to_dict() == data
    assert back.confirmation_strategies[("add", "echo")].approvers == ["ops"]
    # Agent(...) round-trips every hook as the worker will: this one survives.
    agent = Agent(model="m", tools=[t.add, t.echo, t.record], hooks={"before_tool": [hook]})
    rebuilt = Agent.from_dict(agent.to_dict()).hooks["before_tool"][0]
    assert rebuilt.approvers == hook.approvers
    plain = ConfirmationHook({"add": durable()}).to_dict()
    assert "approvers" not in plain["init_parameters"]  # only when set, as Haystack's hook has no such key
    assert ConfirmationHook.from_dict(plain).approvers is None


class Recording(DurableConfirmationStrategy):
    """Records the ``approvers`` each call was asked with, and confirms (no workflow needed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: dict[str, list[str] | None] = {}

    async def run_async(self, *, tool_name, tool_description, tool_params, tool_call_id=None, **rest):
        self.asked[tool_call_id] = rest.get("approvers", "not passed")
        return ToolExecutionDecision(
            tool_name=tool_name, execute=True, tool_call_id=tool_call_id, final_tool_params=tool_params
        )


async def test_hook_gives_a_tools_own_list_in_place_of_the_strategys():
    strategy = Recording(AlwaysAskPolicy(), approvers=["ops"])
    hook = ConfirmationHook({"*": strategy}, approvers={"add": ["alice"], ("echo",): ["bob"]})
    calls = [
        ToolCall(tool_name="add", arguments={"a": 1, "b": 2}, id="c1"),
        ToolCall(tool_name="echo", arguments={"text": "x"}, id="c2"),
        ToolCall(tool_name="record", arguments={"label": "y"}, id="c3"),
    ]
    tools = [ToolSpec(name=name) for name in ("add", "echo", "record")]
    state = State(data={"messages": [ChatMessage.from_assistant(tool_calls=calls)], "tools": tools, "step_count": 0})
    await hook.run_async(state)
    # own key and tuple key replace the strategy's list; a tool with no key gets none passed,
    # so the strategy uses its own (["ops"]).
    assert strategy.asked == {"c1": ["alice"], "c2": ["bob"], "c3": "not passed"}


# -- the registry's check ------------------------------------------------------------------------------


class OffWorkflowRegistry(ConfirmationRegistry):
    """A registry outside a workflow: advertising (search attribute, memo) needs one; validating does not."""

    def _advertise(self) -> None:
        pass


def registry_with(approvers: list[str] | None) -> ConfirmationRegistry:
    registry = OffWorkflowRegistry(search_attribute=None)
    request = PendingConfirmation(
        tool_call_id="call_1",
        tool_name="transfer_money",
        tool_params={"amount": 10},
        requested_at=datetime(2025, 1, 1, tzinfo=UTC),
        approvers=approvers,
    )
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
    registry.publish(request, schema=schema)
    return registry


def decision(approver: str | None, action: str = "confirm", **kwargs: Any) -> ToolDecision:
    return ToolDecision(tool_call_id="call_1", action=action, approver=approver, **kwargs)


def test_registry_refuses_an_approver_not_on_the_list():
    registry = registry_with(["alice", "bob"])
    with pytest.raises(DecisionError) as refused:
        registry.validate(decision("mallory"))
    assert str(refused.value) == (
        "Approver 'mallory' may not decide tool call 'call_1' (transfer_money): allowed approvers are alice, bob."
    )
    with pytest.raises(DecisionError, match="Approver 'Alice' may not decide"):  # names match exactly
        registry.validate(decision("Alice"))


@pytest.mark.parametrize("approvers", [["alice"], None])
def test_registry_refuses_an_approver_name_over_200_characters(approvers):
    registry = registry_with(approvers)
    with pytest.raises(DecisionError) as refused:
        registry.validate(decision("a" * 200_000))
    assert str(refused.value) == "The approver is 200,000 characters; the limit is 200."
    registry.validate(decision("alice" if approvers else "b" * 200))


@pytest.mark.parametrize("approver", [None, ""])
def test_registry_refuses_a_decision_without_an_approver_when_a_list_exists(approver):
    registry = registry_with(["alice", "bob"])
    with pytest.raises(DecisionError) as refused:
        registry.validate(decision(approver, action="reject"))
    assert str(refused.value) == (
        "Tool call 'call_1' (transfer_money) needs an approver: pass approver= (one of alice, bob)."
    )


def test_registry_checks_the_approver_before_the_decisions_content():
    registry = registry_with(["alice"])
    # An unlisted approver is told only that they may not decide, not what the schema wants.
    with pytest.raises(DecisionError, match="Approver 'mallory' may not decide"):
        registry.validate(decision("mallory", action="modify", new_tool_params={"amount": "lots"}))
    with pytest.raises(DecisionError, match="do not match its JSON schema"):
        registry.validate(decision("alice", action="modify", new_tool_params={"amount": "lots"}))


def test_registry_accepts_a_listed_approver_and_anyone_without_a_list():
    assert registry_with(["alice", "bob"]).validate(decision("bob")).tool_call_id == "call_1"
    for anyone in (None, "", "mallory"):
        assert registry_with(None).validate(decision(anyone)).tool_call_id == "call_1"


def test_pending_confirmation_carries_its_approvers_through_json():
    request = registry_with(["alice"]).pending()[0]
    assert request.approvers == ["alice"]
    assert PendingConfirmation.model_validate_json(request.model_dump_json()).approvers == ["alice"]
    older = request.model_dump(mode="json")
    del older["approvers"]
    assert PendingConfirmation.model_validate(older).approvers is None
