"""Differential tests against haystack-ai 3.4.1 for issue 36's human-in-the-loop rows:
``BlockingConfirmationStrategy``'s dict across both libraries, ``ToolExecutionDecision`` and
``ConfirmationUIResult`` as dataclasses, ``AskOncePolicy`` on a fresh policy and its memory, and a
UI without ``get_user_confirmation``."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from haystack.hooks import human_in_the_loop as hhitl

from agent.approvals.interactive import JsonArgumentsConsoleUI, confirmation_ui_for
from hooks.human_in_the_loop import (
    AlwaysAskPolicy,
    AskOncePolicy,
    BlockingConfirmationStrategy,
    ConfirmationHook,
    ConfirmationUIResult,
    NeverAskPolicy,
    PendingConfirmation,
    SimpleConsoleUI,
    ToolExecutionDecision,
)


def ours_type(data: dict[str, Any]) -> dict[str, Any]:
    """A Haystack dict naming this project's classes (same module paths without ``haystack.``)."""
    return json.loads(json.dumps(data).replace('"haystack.hooks.', '"hooks.'))


def haystack_type(data: dict[str, Any]) -> dict[str, Any]:
    """Our dict naming Haystack's classes."""
    return json.loads(json.dumps(data).replace('"hooks.human_in_the_loop.', '"haystack.hooks.human_in_the_loop.'))


TEMPLATES = [{}, {"reject_template": "No.", "user_feedback_template": "({feedback})"}]


# -- BlockingConfirmationStrategy's dict -------------------------------------------------------


@pytest.mark.parametrize("templates", TEMPLATES)
def test_the_strategy_dict_has_haystacks_five_keys_and_crosses_both_ways(templates: dict[str, str]) -> None:
    ours = BlockingConfirmationStrategy(
        confirmation_policy=AskOncePolicy(), confirmation_ui=SimpleConsoleUI(), **templates
    )
    theirs = hhitl.BlockingConfirmationStrategy(
        confirmation_policy=hhitl.AskOncePolicy(), confirmation_ui=hhitl.SimpleConsoleUI(), **templates
    )
    assert list(ours.to_dict()["init_parameters"]) == list(theirs.to_dict()["init_parameters"])
    assert ours.to_dict() == ours_type(theirs.to_dict())
    # Haystack's from_dict reads ours, ours reads Haystack's
    back_there = hhitl.BlockingConfirmationStrategy.from_dict(haystack_type(ours.to_dict()))
    assert back_there.to_dict() == theirs.to_dict()
    back_here = BlockingConfirmationStrategy.from_dict(ours_type(theirs.to_dict()))
    assert back_here.to_dict() == ours.to_dict() and back_here.timeout == timedelta(days=7)


def test_durable_options_appear_only_when_set_and_survive_the_round_trip() -> None:
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=AlwaysAskPolicy(),
        confirmation_ui=SimpleConsoleUI(),
        timeout=timedelta(hours=2),
        on_timeout="confirm",
        approvers=["ann"],
        search_attribute=None,
    )
    params = strategy.to_dict()["init_parameters"]
    assert list(params)[:5] == [
        "confirmation_policy",
        "confirmation_ui",
        "reject_template",
        "modify_template",
        "user_feedback_template",
    ]
    assert {k: params[k] for k in list(params)[5:]} == {
        "timeout": 7200.0,
        "on_timeout": "confirm",
        "search_attribute": None,
        "approvers": ["ann"],
    }
    again = BlockingConfirmationStrategy.from_dict(json.loads(json.dumps(strategy.to_dict())))
    assert again.to_dict() == strategy.to_dict() and again.search_attribute is None
    hook = ConfirmationHook({"*": strategy})
    assert ConfirmationHook.from_dict(json.loads(json.dumps(hook.to_dict()))).to_dict() == hook.to_dict()


# -- the two dataclasses -----------------------------------------------------------------------


def test_decisions_and_ui_results_are_dataclasses_as_in_haystack() -> None:
    for ours_cls, their_cls in (
        (ToolExecutionDecision, hhitl.ToolExecutionDecision),
        (ConfirmationUIResult, hhitl.ConfirmationUIResult),
    ):
        assert dataclasses.is_dataclass(ours_cls) and dataclasses.is_dataclass(their_cls)
        haystack_fields = [f.name for f in dataclasses.fields(their_cls)]
        assert [f.name for f in dataclasses.fields(ours_cls)][: len(haystack_fields)] == haystack_fields
    decision = ToolExecutionDecision("add", True, "c1", None, {"a": 1})
    changed = dataclasses.replace(decision, execute=False, feedback="no")
    their_changed = dataclasses.replace(
        hhitl.ToolExecutionDecision("add", True, "c1", None, {"a": 1}), execute=False, feedback="no"
    )
    assert changed.to_dict() == their_changed.to_dict()
    answer = dataclasses.replace(ConfirmationUIResult("confirm"), action="reject", feedback="f")
    assert vars(answer) == vars(
        dataclasses.replace(hhitl.ConfirmationUIResult("confirm"), action="reject", feedback="f")
    )


@pytest.mark.parametrize(
    "data",
    [
        {"tool_name": "add", "execute": True, "surprise": 1},  # an unknown key
        {"tool_name": "add"},  # a missing field
        {"execute": False},
    ],
)
def test_a_bad_decision_dict_is_the_same_type_error_in_both(data: dict[str, Any]) -> None:
    with pytest.raises(TypeError) as theirs:
        hhitl.ToolExecutionDecision.from_dict(dict(data))
    with pytest.raises(TypeError) as ours:
        ToolExecutionDecision.from_dict(dict(data))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError):
        ConfirmationUIResult(**{"action": "confirm", "surprise": 1})
    with pytest.raises(TypeError):
        hhitl.ConfirmationUIResult(**{"action": "confirm", "surprise": 1})


def test_values_are_kept_as_given_not_coerced_in_both() -> None:
    ours = ToolExecutionDecision.from_dict({"tool_name": "add", "execute": "false"})
    theirs = hhitl.ToolExecutionDecision.from_dict({"tool_name": "add", "execute": "false"})
    assert ours.execute == theirs.execute == "false"
    assert ours.to_dict() == theirs.to_dict()
    assert vars(ConfirmationUIResult(1, 2, 3)) == vars(hhitl.ConfirmationUIResult(1, 2, 3))


# -- AskOncePolicy -----------------------------------------------------------------------------

PARAMS = [None, {}, {"a": 1}, {"a": {"b": [1]}}]


@pytest.mark.parametrize("params", PARAMS)
def test_a_fresh_ask_once_policy_asks_for_any_parameters_in_both(params: dict[str, Any] | None) -> None:
    assert AskOncePolicy().should_ask("t", "d", params) is hhitl.AskOncePolicy().should_ask("t", "d", params) is True


@pytest.mark.parametrize("params", PARAMS)
def test_ask_once_decides_as_haystack_after_each_answer(params: dict[str, Any] | None) -> None:
    ours, theirs = AskOncePolicy(), hhitl.AskOncePolicy()
    for action, tool in (("reject", "t"), ("confirm", "t"), ("modify", "u"), ("confirm", "u")):
        ours.update_after_confirmation(tool, "d", params, ConfirmationUIResult(action))
        theirs.update_after_confirmation(tool, "d", params, hhitl.ConfirmationUIResult(action))
        for asked in ("t", "u", "v"):
            for other in PARAMS:
                assert ours.should_ask(asked, "d", other) == theirs.should_ask(asked, "d", other)


def test_ask_once_remembers_a_copy_where_haystack_keeps_the_callers_dict() -> None:
    ours, theirs = AskOncePolicy(), hhitl.AskOncePolicy()
    params = {"path": "/tmp/a"}
    ours.update_after_confirmation("rm", "d", params, ConfirmationUIResult("confirm"))
    theirs.update_after_confirmation("rm", "d", params, hhitl.ConfirmationUIResult("confirm"))
    params["path"] = "/"  # the caller changes its dict after the person confirmed /tmp/a
    assert theirs.should_ask("rm", "d", {"path": "/"}) is False  # Haystack: "/" now passes as confirmed
    assert ours.should_ask("rm", "d", {"path": "/"}) is True  # here: only what was confirmed passes
    assert ours.should_ask("rm", "d", {"path": "/tmp/a"}) is False
    # the memory a continue-as-new carries is the same copy
    restored = AskOncePolicy()
    restored.restore(ours.snapshot())
    assert restored.should_ask("rm", "d", {"path": "/tmp/a"}) is False


# -- a UI without get_user_confirmation --------------------------------------------------------


class NoPromptUI:
    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.NoPromptUI", "init_parameters": {}}


def test_a_ui_without_get_user_confirmation_is_accepted_and_fails_when_asked_in_both() -> None:
    ours = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=NoPromptUI())
    theirs = hhitl.BlockingConfirmationStrategy(
        confirmation_policy=hhitl.AlwaysAskPolicy(), confirmation_ui=NoPromptUI()
    )
    call = {"tool_name": "t", "tool_description": "d", "tool_params": {}, "tool_call_id": "c1"}
    with pytest.raises(AttributeError, match="get_user_confirmation") as their_error:
        theirs.run(**call)
    with pytest.raises(AttributeError, match="get_user_confirmation") as our_error:
        ours.run(**call)
    assert type(our_error.value) is type(their_error.value)
    # a policy that does not ask never reaches the UI, in either
    quiet = BlockingConfirmationStrategy(confirmation_policy=NeverAskPolicy(), confirmation_ui=NoPromptUI())
    assert quiet.run(**call).execute is True


def test_the_approvers_side_falls_back_to_the_simple_console_for_such_a_ui(capsys: pytest.CaptureFixture[str]) -> None:
    request = PendingConfirmation(
        tool_call_id="c1",
        tool_name="t",
        tool_params={},
        requested_at=datetime(2026, 1, 1, tzinfo=UTC),
        confirmation_ui=NoPromptUI().to_dict(),
    )
    assert isinstance(confirmation_ui_for(request), JsonArgumentsConsoleUI)
    assert "has no get_user_confirmation" in capsys.readouterr().out
