"""Differential tests against haystack-ai 3.4.1 for the human-in-the-loop edge cases: the same
inputs given to Haystack's classes and to ours, and the outcomes compared.

Covered: templates without their placeholder and keyword-only ``BlockingConfirmationStrategy``;
``ConfirmationHook`` keys that are tuples holding ``"*"``, strategies without ``run``/``run_async``
and the hook's ``to_dict`` keys; ``ToolExecutionDecision.to_dict`` / ``from_dict`` across both
libraries; id-less and repeated call ids (locally and on the durable path, on a stand-in for
``temporalio.workflow``); and the arguments a strategy is shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HChatMessage
from haystack.dataclasses import ToolCall as HToolCall
from haystack.hooks import human_in_the_loop as hhitl
from haystack.tools import Tool as HTool

from core.messages import ChatMessage, ToolCall
from core.spec import AgentSpec
from core.state import State
from core.tools import ToolSpec
from hooks.context import RunContext, current_run, set_current_run
from hooks.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    ConfirmationHook,
    ConfirmationUIResult,
    NeverAskPolicy,
    SimpleConsoleUI,
    ToolDecision,
    ToolExecutionDecision,
)
from hooks.human_in_the_loop import escalation as escalation_module
from hooks.human_in_the_loop import hooks as hooks_module
from hooks.human_in_the_loop import registry as registry_module
from hooks.human_in_the_loop import strategies as strategies_module
from hooks.human_in_the_loop.registry import ConfirmationRegistry

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
TOOL_NAMES = ("add", "echo", "remove")
TOOLS = [ToolSpec(name=name, description=f"The {name} tool.", parameters=SCHEMA) for name in TOOL_NAMES]

Answer = tuple[str, str | None, dict[str, Any] | None]  # action, feedback, new_tool_params


class Answers:
    """The person: answers by (tool, arguments), so it needs no call id; notes each question."""

    def __init__(self, by_call: dict[tuple[str, int], Answer]) -> None:
        self.by_call = by_call
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def answer(self, tool_name: str, tool_params: dict[str, Any]) -> Answer:
        self.asked.append((tool_name, dict(tool_params)))
        return self.by_call.get((tool_name, tool_params.get("a", 0)), ("confirm", None, None))


class OurUI(SimpleConsoleUI):
    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def get_user_confirmation(self, tool_name, tool_description, tool_params) -> ConfirmationUIResult:
        return ConfirmationUIResult(*self.answers.answer(tool_name, tool_params))


class TheirUI:
    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def get_user_confirmation(self, tool_name, tool_description, tool_params):
        return hhitl.ConfirmationUIResult(*self.answers.answer(tool_name, tool_params))

    def to_dict(self) -> dict[str, Any]:
        return {}


def shape(message) -> tuple:
    """Role, text, calls (id, tool, arguments), and result with its error flag."""
    calls = [(c.id, c.tool_name, c.arguments) for c in message.tool_calls]
    result = message.tool_call_result
    return (message.role.value, message.text, calls, (result.result, result.error) if result else None)


Call = tuple[str | None, str, dict[str, Any]]  # id, tool, arguments


def their_state(calls: list[Call]) -> HState:
    tools = [HTool(name=t.name, description=t.description, parameters=t.parameters, function=print) for t in TOOLS]
    reply = HChatMessage.from_assistant("on it", tool_calls=[HToolCall(n, dict(a), id=i) for i, n, a in calls])
    return HState(schema={}, data={"messages": [HChatMessage.from_user("go"), reply], "tools": tools})


def our_state(calls: list[Call]) -> State:
    reply = ChatMessage.from_assistant("on it", [ToolCall(tool_name=n, arguments=dict(a), id=i) for i, n, a in calls])
    return State(data={"messages": [ChatMessage.from_user("go"), reply], "tools": list(TOOLS), "step_count": 0})


def theirs_run(calls: list[Call], answers: Answers, policy=None, **templates) -> list[tuple]:
    strategy = hhitl.BlockingConfirmationStrategy(
        confirmation_policy=policy or hhitl.AlwaysAskPolicy(), confirmation_ui=TheirUI(answers), **templates
    )
    state = their_state(calls)
    hhitl.ConfirmationHook(confirmation_strategies={"*": strategy}).run(state)
    return [shape(m) for m in state.data["messages"]]


def ours_run(calls: list[Call], answers: Answers, policy=None, **templates) -> list[tuple]:
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=policy or AlwaysAskPolicy(), confirmation_ui=OurUI(answers), **templates
    )
    state = our_state(calls)
    ConfirmationHook({"*": strategy}).run(state)
    return [shape(m) for m in state.data["messages"]]


# -- a stand-in for temporalio.workflow: the durable path without a server ---------------------


class StandInWorkflow:
    """What the strategy, the registry and the hook use of ``temporalio.workflow``; each
    ``wait_condition`` that is not yet true lets the person decide every pending request through
    ``registry.accept`` (the code the Update handler runs)."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.logger = logging.getLogger("stand-in-workflow")
        self.requested: list[str] = []

    def in_workflow(self) -> bool:
        return True

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def info(self) -> Any:
        return SimpleNamespace(run_id="edge-execution", get_current_history_length=lambda: 1)

    def upsert_search_attributes(self, updates: Any) -> None:
        pass

    def upsert_memo(self, memo: Any) -> None:
        pass

    async def wait_condition(self, condition, timeout=None, timeout_summary=None) -> None:
        for _ in range(100):
            if condition():
                return
            await asyncio.sleep(0)  # every call reaches its wait first, as in a workflow task
            registry = current_run().slot(ConfirmationRegistry)
            for request in registry.pending():
                self.requested.append(request.tool_call_id)
                action, feedback, params = self.answers.answer(request.tool_name, request.tool_params)
                registry.accept(
                    ToolDecision(
                        tool_call_id=request.tool_call_id,
                        action=action,
                        feedback=feedback,
                        new_tool_params=params,
                        approver="ann",
                    ),
                    via="update",
                )
        raise AssertionError("a wait_condition never came true")


@contextlib.contextmanager
def stand_in_workflow(answers: Answers, state: State) -> Iterator[StandInWorkflow]:
    fake = StandInWorkflow(answers)
    modules = (strategies_module, registry_module, hooks_module, escalation_module)
    originals = [module.workflow for module in modules]
    for module in modules:
        module.workflow = fake
    set_current_run(RunContext(run_id="edge", agent=AgentSpec(model="m", tools=list(TOOLS)), state=state))
    try:
        yield fake
    finally:
        for module, original in zip(modules, originals, strict=True):
            module.workflow = original
        set_current_run(None)


def ours_durable(calls: list[Call], answers: Answers, **templates) -> tuple[list[tuple], StandInWorkflow, State]:
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI(), **templates
    )
    state = our_state(calls)
    with stand_in_workflow(answers, state) as fake:
        asyncio.run(ConfirmationHook({"*": strategy}).run_async(state))
    return [shape(m) for m in state.data["messages"]], fake, state


# -- item 1: templates, keyword-only parameters ------------------------------------------------

TEMPLATES = [
    {"reject_template": "Rejected."},
    {"reject_template": "No.", "user_feedback_template": "Because."},
    {"modify_template": "Changed."},
    {"modify_template": "Now {final_tool_params}.", "reject_template": "{tool_name}!r"},
    {"modify_template": "{tool_name!r} changed", "user_feedback_template": "({feedback!r})"},
]
ANSWERS = {
    ("add", 1): ("reject", "too big", None),
    ("echo", 2): ("modify", "better", {"a": 5}),
    ("remove", 3): ("reject", None, None),
}
CALLS: list[Call] = [
    ("c1", "add", {"a": 1}),
    ("c2", "echo", {"a": 2}),
    ("c3", "remove", {"a": 3}),
    ("c4", "add", {"a": 4}),
]


@pytest.mark.parametrize("templates", TEMPLATES)
def test_templates_without_their_placeholder_give_haystacks_conversation(templates):
    theirs = theirs_run(CALLS, Answers(ANSWERS), **templates)
    assert ours_run(CALLS, Answers(ANSWERS), **templates) == theirs
    assert ours_durable(CALLS, Answers(ANSWERS), **templates)[0] == theirs


def test_a_template_that_can_never_be_filled_fails_at_construction_here_and_at_the_first_decision_there():
    answers = Answers(ANSWERS)
    with pytest.raises(KeyError):  # Haystack: accepted, then the first rejection raises
        theirs_run(CALLS, answers, reject_template="{tool} was rejected")
    with pytest.raises(ValueError, match=r"may use only \{tool_name\}, but names \{tool\}"):
        ours_run(CALLS, Answers(ANSWERS), reject_template="{tool} was rejected")


def test_blocking_strategy_parameters_are_keyword_only_in_both():
    with pytest.raises(TypeError, match="positional"):
        hhitl.BlockingConfirmationStrategy(hhitl.AlwaysAskPolicy(), hhitl.SimpleConsoleUI())
    with pytest.raises(TypeError, match="positional"):
        BlockingConfirmationStrategy(AlwaysAskPolicy(), SimpleConsoleUI())


# -- item 3: ConfirmationHook's keys, its strategies, its to_dict ------------------------------


def test_a_tuple_key_holding_the_wildcard_covers_only_the_tools_it_names_in_both():
    answers_theirs, answers_ours = Answers(ANSWERS), Answers(ANSWERS)
    h_strategy = hhitl.BlockingConfirmationStrategy(
        confirmation_policy=hhitl.AlwaysAskPolicy(), confirmation_ui=TheirUI(answers_theirs)
    )
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=OurUI(answers_ours))
    h_state, state = their_state(CALLS), our_state(CALLS)
    hhitl.ConfirmationHook(confirmation_strategies={("add", "*"): h_strategy}).run(h_state)
    ConfirmationHook({("add", "*"): strategy}).run(state)
    assert [shape(m) for m in state.data["messages"]] == [shape(m) for m in h_state.data["messages"]]
    assert answers_ours.asked == answers_theirs.asked == [("add", {"a": 1}), ("add", {"a": 4})]


class NoRun:
    """A strategy with neither run nor run_async."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.NoRun", "init_parameters": {}}


def test_a_strategy_without_run_is_accepted_and_fails_when_a_call_needs_it_in_both():
    theirs = hhitl.ConfirmationHook(confirmation_strategies={"add": NoRun()})
    ours = ConfirmationHook({"add": NoRun()})
    untouched = [("c2", "echo", {"a": 2})]  # no call for the strategy: nothing fails
    h_state, state = their_state(untouched), our_state(untouched)
    theirs.run(h_state)
    ours.run(state)
    assert [shape(m) for m in state.data["messages"]] == [shape(m) for m in h_state.data["messages"]]
    with pytest.raises(AttributeError):
        theirs.run(their_state(CALLS))
    with pytest.raises(AttributeError):
        ours.run(our_state(CALLS))
    with pytest.raises(AttributeError):
        asyncio.run(theirs.run_async(their_state(CALLS)))
    with pytest.raises(AttributeError):
        asyncio.run(ours.run_async(our_state(CALLS)))


def test_hook_to_dict_has_haystacks_keys_unless_approvers_are_set():
    h_strategy = hhitl.BlockingConfirmationStrategy(
        confirmation_policy=hhitl.AlwaysAskPolicy(), confirmation_ui=hhitl.SimpleConsoleUI()
    )
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI())
    theirs = hhitl.ConfirmationHook(confirmation_strategies={("add", "echo"): h_strategy}).to_dict()
    ours = ConfirmationHook({("add", "echo"): strategy}).to_dict()
    assert ours["init_parameters"].keys() == theirs["init_parameters"].keys() == {"confirmation_strategies"}
    assert ours["init_parameters"]["confirmation_strategies"].keys() == {'["add", "echo"]'}
    assert theirs["init_parameters"]["confirmation_strategies"].keys() == {'["add", "echo"]'}
    with_approvers = ConfirmationHook({("add", "echo"): strategy}, approvers={"add": ["ann"]}).to_dict()
    assert with_approvers["init_parameters"]["approvers"] == {"add": ["ann"]}
    with pytest.raises(TypeError, match="positional"):
        ConfirmationHook({"add": strategy}, {"add": ["ann"]})


# -- item 6: ToolExecutionDecision across both libraries ---------------------------------------

DECISIONS = [
    ("add", True, "c1", None, {"a": 1}),
    ("add", False, "c2", "Tool execution for 'add' was rejected by the user.", None),
    ("echo", True, None, "The parameters were updated", {"a": 5}),
    ("remove", True, None, None, None),
]


@pytest.mark.parametrize("fields", DECISIONS)
def test_decision_dicts_cross_between_the_libraries(fields):
    record = {"tool_call_id": "c1", "action": "confirm", "approver": "ann"}
    ours = ToolExecutionDecision(*fields, record=record)
    theirs = hhitl.ToolExecutionDecision(*fields)
    assert ours.to_dict() == theirs.to_dict()
    assert hhitl.ToolExecutionDecision.from_dict(ours.to_dict()) == theirs
    assert ToolExecutionDecision.from_dict(theirs.to_dict()) == ToolExecutionDecision(*fields)
    assert ours.record == record  # kept, outside Haystack's dict


def test_asked_decisions_carry_a_record_that_haystack_can_still_read():
    calls: list[Call] = [("c1", "add", {"a": 1})]
    seen: list[ToolExecutionDecision] = []
    original = hooks_module._bound

    def keep(decision, call):
        bound = original(decision, call)
        seen.append(bound)
        return bound

    hooks_module._bound = keep
    try:
        ours_durable(calls, Answers({("add", 1): ("confirm", None, None)}))
    finally:
        hooks_module._bound = original
    assert seen[0].record is not None and seen[0].record["approver"] == "ann"
    back = hhitl.ToolExecutionDecision.from_dict(seen[0].to_dict())
    assert back == hhitl.ToolExecutionDecision("add", True, "c1", None, {"a": 1})


# -- item 7: id-less and repeated call ids -----------------------------------------------------

IDLESS: list[Call] = [(None, "add", {"a": 1}), (None, "echo", {"a": 2}), ("c3", "add", {"a": 3})]


def test_id_less_calls_stay_id_less_in_the_conversation():
    theirs = theirs_run(IDLESS, Answers(ANSWERS))
    assert [call[0] for message in theirs for call in message[2]] == [None, None, "c3"]  # what Haystack keeps
    assert ours_run(IDLESS, Answers(ANSWERS)) == theirs
    durable, fake, state = ours_durable(IDLESS, Answers(ANSWERS))
    assert durable == theirs
    # The durable wait asks under ids a person can name; they stay out of the messages, in the records only.
    assert sorted(fake.requested) == ["c3", "hitl-s0-c0", "hitl-s0-c1"]
    records = [
        m.tool_call_result.origin.extra["confirmation"]["tool_call_id"]
        for m in state.data["messages"]
        if m.tool_call_result is not None
    ]
    assert records == ["hitl-s0-c0"]  # the rejected add


@pytest.mark.parametrize(
    "calls",
    [
        [(None, "add", {"a": 1}), (None, "add", {"a": 4})],
        [("c1", "add", {"a": 1}), ("c1", "echo", {"a": 2})],
        [(None, "echo", {"a": 2}), ("", "echo", {"a": 2})],
    ],
)
def test_calls_that_cannot_be_told_apart_are_haystacks_value_error(calls):
    with pytest.raises(ValueError) as theirs:
        theirs_run(calls, Answers(ANSWERS))
    answers = Answers(ANSWERS)
    with pytest.raises(ValueError) as ours:
        ours_run(calls, answers)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="No unused ToolExecutionDecision matches"):
        ours_durable(calls, answers)
    assert answers.asked == []  # raised before anyone was asked


def test_id_less_calls_of_different_tools_run_unasked_as_in_haystack():
    never_theirs = theirs_run(IDLESS, Answers(ANSWERS), policy=hhitl.NeverAskPolicy())
    assert ours_run(IDLESS, Answers(ANSWERS), policy=NeverAskPolicy()) == never_theirs


# -- row: strategies see only the arguments the model asked for --------------------------------


class Recording:
    """A strategy that records what it is shown and confirms."""

    def __init__(self, decision_type) -> None:
        self.decision_type = decision_type
        self.seen: list[dict[str, Any]] = []

    def run(self, *, tool_name, tool_description, tool_params, tool_call_id=None, confirmation_strategy_context=None):
        self.seen.append(
            {"tool": tool_name, "description": tool_description, "params": tool_params, "id": tool_call_id}
        )
        return self.decision_type(
            tool_name=tool_name, execute=True, tool_call_id=tool_call_id, final_tool_params=tool_params
        )

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.Recording", "init_parameters": {}}


def test_strategies_see_only_the_model_requested_arguments():
    calls: list[Call] = [("c1", "add", {"a": 1}), ("c2", "echo", {})]
    # Haystack's tool takes one more input from State; the strategy still sees the model's arguments only.
    h_tools = [
        HTool(
            name=t.name,
            description=t.description,
            parameters={"type": "object", "properties": {"a": {"type": "integer"}, "user": {"type": "string"}}},
            function=print,
            inputs_from_state={"user": "user"},
        )
        for t in TOOLS
    ]
    h_state = their_state(calls)
    h_state.data["tools"] = h_tools
    h_state.data["user"] = "ann"
    theirs, ours = Recording(hhitl.ToolExecutionDecision), Recording(ToolExecutionDecision)
    hhitl.ConfirmationHook(confirmation_strategies={"*": theirs}).run(h_state)
    state = our_state(calls)
    state.data["user"] = "ann"
    ConfirmationHook({"*": ours}).run(state)
    assert ours.seen == theirs.seen
    assert [s["params"] for s in ours.seen] == [{"a": 1}, {}]
