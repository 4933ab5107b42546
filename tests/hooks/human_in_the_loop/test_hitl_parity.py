"""Differential tests against haystack-ai 3.4.1: the same tool calls and the same answers give the
same conversation as Haystack's ``ConfirmationHook``, with every policy, on seeded random inputs.

Haystack's hook runs as shipped (``ConfirmationHook.run`` with ``BlockingConfirmationStrategy`` and
a scripted ``ConfirmationUI``). Ours runs two ways:

- **durable**: ``ConfirmationHook.run_async`` with ``BlockingConfirmationStrategy``, the real registry
  and the real strategy code, on a stand-in for ``temporalio.workflow`` (its clock, memo
  and ``wait_condition``) whose approver decides one pending request at a time, in a random
  order, as a person answering Updates would; no server is needed;
- **local**: ``ConfirmationHook.run`` (the non-durable path) with the same strategy asking a
  scripted UI, as Haystack does.

Answers are scripted per tool call id, so the comparison holds whatever order requests are asked
or answered in. Besides the messages, each case compares which calls were asked (the number of
requests, so "ask once" means once) and checks every asked call carries its own audit record.

Also here: the reference's positional constructors, ``BlockingConfirmationStrategy`` outside and
(stand-in) inside a workflow, ``ConfirmationHook.run`` inside a workflow, and the console UIs
driven by the same standard input as Haystack's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import logging
import random
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HChatMessage
from haystack.dataclasses import ToolCall as HToolCall
from haystack.hooks import human_in_the_loop as hhitl
from haystack.tools import Tool as HTool

from core.messages import ChatMessage, ToolCall
from core.serialization import object_from_dict
from core.spec import AgentSpec
from core.state import State
from core.tools import ToolSpec
from hooks.context import RunContext, current_run, set_current_run
from hooks.human_in_the_loop import (
    CONFIRMATION_KEY,
    AlwaysAskPolicy,
    AskOncePolicy,
    BlockingConfirmationStrategy,
    ConfirmationHook,
    ConfirmationUI,
    ConfirmationUIResult,
    DurableConfirmationStrategy,
    NeverAskPolicy,
    PendingConfirmation,
    RichConsoleUI,
    SimpleConsoleUI,
    ToolDecision,
    ToolExecutionDecision,
)
from hooks.human_in_the_loop import escalation as escalation_module
from hooks.human_in_the_loop import hooks as hooks_module
from hooks.human_in_the_loop import registry as registry_module
from hooks.human_in_the_loop import strategies as strategies_module
from hooks.human_in_the_loop.registry import ConfirmationRegistry

# -- the tools, and random calls and answers ---------------------------------------------------

TOOLS = [
    ToolSpec(
        name="add",
        description="Add two integers.",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    ToolSpec(
        name="echo",
        description="Return the text.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    ToolSpec(
        name="remove",
        description="Delete a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(name="ping", description="No arguments.", parameters={"type": "object", "properties": {}}),
]
UNKNOWN_TOOL = "ghost"  # called by the model, known to no one: passes through unasked on both sides


def random_arguments(rng: random.Random, tool: str) -> dict[str, Any]:
    """Arguments from a small domain, so identical calls (same tool, same arguments) are common."""
    if tool == "add":
        return {"a": rng.randint(0, 2), "b": rng.randint(0, 1)}
    if tool == "echo":
        return {"text": rng.choice(["x", "y"])}
    if tool == "remove":
        return {"path": rng.choice(["/tmp/a", "/tmp/b"])}
    if tool == "ping":
        return {}
    return {"q": rng.randint(0, 1)}


def random_step(rng: random.Random, step: int) -> list[tuple[str, str, dict[str, Any]]]:
    """One assistant message's calls: (id, tool, arguments)."""
    names = ["add", "echo", "remove", "ping"] + ([UNKNOWN_TOOL] if rng.random() < 0.15 else [])
    return [
        (f"s{step}c{i}", tool, random_arguments(rng, tool))
        for i, tool in enumerate(rng.choice(names) for _ in range(rng.randint(1, 4)))
    ]


Answer = tuple[str, str | None, dict[str, Any] | None]  # action, feedback, new_tool_params


def random_answer(rng: random.Random, tool: str, arguments: dict[str, Any]) -> Answer:
    """What the person answers about one call (valid for the tool's schema, so the run accepts it)."""
    feedback = rng.choice([None, None, "not now", "use the other one"])
    kind = rng.choice(["confirm", "confirm", "reject", "modify"])
    if kind == "modify":
        same = rng.random() < 0.2  # a "modification" to the same arguments counts as a confirmation
        return ("modify", feedback, dict(arguments) if same else random_arguments(rng, tool))
    return (kind, feedback, None)


POLICIES = {"always": AlwaysAskPolicy, "never": NeverAskPolicy, "ask_once": AskOncePolicy}
H_POLICIES = {"always": hhitl.AlwaysAskPolicy, "never": hhitl.NeverAskPolicy, "ask_once": hhitl.AskOncePolicy}


def random_layout(rng: random.Random, mode: str) -> dict[Any, str]:
    """Strategy keys -> policy names: one ``"*"`` key for a single-policy mode; for ``"mixed"``, a
    tool's own key, a tuple key sharing one strategy and a ``"*"`` default, each with a random policy."""
    if mode != "mixed":
        return {"*": mode}
    layout: dict[Any, str] = {("add", "echo"): rng.choice(list(POLICIES)), "*": rng.choice(list(POLICIES))}
    if rng.random() < 0.5:
        layout["add"] = rng.choice(list(POLICIES))
    if rng.random() < 0.5:
        layout["remove"] = rng.choice(list(POLICIES))
    return layout


# -- the approver: answers by call id, whoever asks ------------------------------------------


class Approver:
    """The person: answers each call with its scripted answer, and notes which calls were asked."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self.current: str | None = None  # the call a blocking strategy is asking about

    def answer(self, call_id: str) -> Answer:
        assert call_id not in self.asked, f"{call_id} was asked twice"
        self.asked.append(call_id)
        return self.answers[call_id]


class ScriptedUI(ConfirmationUI):
    """Our UI, answering for the call the strategy is asking about."""

    def __init__(self, approver: Approver) -> None:
        self.approver = approver

    def get_user_confirmation(self, tool_name, tool_description, tool_params) -> ConfirmationUIResult:
        return ConfirmationUIResult(*self.approver.answer(self.approver.current))


class ScriptedStrategy(BlockingConfirmationStrategy):
    """Ours: tells the approver which call the UI is about to be asked for (local path)."""

    def run(self, **inputs) -> ToolExecutionDecision:
        self.confirmation_ui.approver.current = inputs["tool_call_id"]
        return super().run(**inputs)


class HScriptedUI:
    def __init__(self, approver: Approver) -> None:
        self.approver = approver

    def get_user_confirmation(self, tool_name, tool_description, tool_params):
        return hhitl.ConfirmationUIResult(*self.approver.answer(self.approver.current))

    def to_dict(self) -> dict[str, Any]:
        return {}


class HScriptedStrategy(hhitl.BlockingConfirmationStrategy):
    """Haystack's, telling the approver which call it is about to ask for."""

    def run(self, **inputs):
        self.confirmation_ui.approver.current = inputs["tool_call_id"]
        return super().run(**inputs)


# -- a stand-in for temporalio.workflow, for the durable path without a server -----------------


class FakeWorkflow:
    """What the strategy, the registry and the hook use of ``temporalio.workflow``. ``wait_condition``
    lets the approver decide one pending request (picked at random) per turn, by ``registry.accept``,
    the code the Update handler runs."""

    def __init__(self, approver: Approver, rng: random.Random) -> None:
        self.approver = approver
        self.rng = rng
        self.logger = logging.getLogger("fake-workflow")
        self.published: list[PendingConfirmation] = []
        self.first_look: list[PendingConfirmation] | None = None  # what waited when the approver first looked

    def in_workflow(self) -> bool:
        return True

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def info(self) -> Any:
        return SimpleNamespace(run_id="parity-execution", get_current_history_length=lambda: 1)

    def upsert_search_attributes(self, updates: Any) -> None:
        pass

    def upsert_memo(self, memo: Any) -> None:
        pass

    async def wait_condition(self, condition, timeout=None, timeout_summary=None) -> None:
        for _ in range(1000):
            if condition():
                return
            await asyncio.sleep(0)  # let the other calls reach their waits first, as in a workflow task
            if condition():
                return
            self._decide_one()
        raise AssertionError("a wait_condition never came true")

    def _decide_one(self) -> None:
        registry = current_run().slot(ConfirmationRegistry)
        pending = registry.pending() if registry is not None else []
        if self.first_look is None:
            self.first_look = list(pending)
        for request in pending:
            if request not in self.published:
                self.published.append(request)
        if not pending:
            return
        request = self.rng.choice(pending)
        action, feedback, params = self.approver.answer(request.tool_call_id)
        decision = ToolDecision(
            tool_call_id=request.tool_call_id,
            action=action,
            feedback=feedback,
            new_tool_params=params if action == "modify" else None,
            approver="ann",
        )
        registry.accept(decision, via="update")


@contextlib.contextmanager
def stand_in_workflow(approver: Approver, rng: random.Random) -> Iterator[FakeWorkflow]:
    """The stand-in ``workflow`` in the modules of this family that use it on this path, for the block."""
    fake = FakeWorkflow(approver, rng)
    modules = (strategies_module, registry_module, hooks_module, escalation_module)
    originals = [module.workflow for module in modules]
    for module in modules:
        module.workflow = fake
    try:
        yield fake
    finally:
        for module, original in zip(modules, originals, strict=True):
            module.workflow = original
        set_current_run(None)


# -- one case on each side ---------------------------------------------------------------------


def shape(message) -> tuple:
    """What both sides must agree on: role, text, calls (id, tool, arguments), result and error."""
    calls = [(c.id, c.tool_name, c.arguments) for c in message.tool_calls]
    result = message.tool_call_result
    return (message.role.value, message.text, calls, (result.result, result.error) if result else None)


def haystack_case(steps, layout, answers) -> tuple[list[tuple], list[str]]:
    approver = Approver(answers)
    strategies = {
        key: HScriptedStrategy(confirmation_policy=H_POLICIES[name](), confirmation_ui=HScriptedUI(approver))
        for key, name in layout.items()
    }
    hook = hhitl.ConfirmationHook(confirmation_strategies=strategies)
    tools = [HTool(name=t.name, description=t.description, parameters=t.parameters, function=print) for t in TOOLS]
    state = HState(schema={}, data={"messages": [HChatMessage.from_user("go")], "tools": tools})
    for calls in steps:
        reply = HChatMessage.from_assistant("on it", tool_calls=[HToolCall(n, dict(a), id=i) for i, n, a in calls])
        state.set("messages", [reply])
        hook.run(state)
    return [shape(m) for m in state.data["messages"]], approver.asked


def our_state() -> State:
    return State(data={"messages": [ChatMessage.from_user("go")], "tools": list(TOOLS), "step_count": 0})


def our_reply(calls) -> ChatMessage:
    return ChatMessage.from_assistant("on it", [ToolCall(tool_name=n, arguments=dict(a), id=i) for i, n, a in calls])


def our_local_case(steps, layout, answers) -> tuple[list[tuple], list[str], list[ChatMessage]]:
    approver = Approver(answers)
    hook = ConfirmationHook(
        {
            key: ScriptedStrategy(confirmation_policy=POLICIES[name](), confirmation_ui=ScriptedUI(approver))
            for key, name in layout.items()
        }
    )
    state = our_state()
    for step, calls in enumerate(steps):
        state.set("messages", [our_reply(calls)])
        state.set("step_count", step)
        hook.run(state)
    return [shape(m) for m in state.data["messages"]], approver.asked, state.data["messages"]


async def our_durable_case(steps, layout, answers, rng) -> tuple[list[tuple], list[str], list[ChatMessage]]:
    approver = Approver(answers)
    hook = ConfirmationHook(
        {
            key: BlockingConfirmationStrategy(confirmation_policy=POLICIES[name](), confirmation_ui=SimpleConsoleUI())
            for key, name in layout.items()
        }
    )
    state = our_state()
    with stand_in_workflow(approver, rng) as fake:
        set_current_run(RunContext(run_id="parity", agent=AgentSpec(model="m", tools=list(TOOLS)), state=state))
        for step, calls in enumerate(steps):
            state.set("messages", [our_reply(calls)])
            state.set("step_count", step)
            await hook.run_async(state)
    for request in fake.published:  # every request names the strategy's UI for the approver's side
        assert object_from_dict(request.confirmation_ui).__class__ is SimpleConsoleUI
    return [shape(m) for m in state.data["messages"]], approver.asked, state.data["messages"]


def audit_records(messages: list[ChatMessage]) -> dict[str, dict]:
    """Call id -> its confirmation record (on the call, or on the tool message of a rejected call)."""
    records: dict[str, dict] = {}
    for message in messages:
        for call in message.tool_calls:
            if call.extra and CONFIRMATION_KEY in call.extra:
                records[call.id] = call.extra[CONFIRMATION_KEY]
        if message.tool_call_result is not None and CONFIRMATION_KEY in message.meta:
            records[message.tool_call_result.origin.id] = message.meta[CONFIRMATION_KEY]
    return records


MODES = ["always", "never", "ask_once", "mixed"]
SEEDS_PER_MODE = 100
TALLY: Counter = Counter()


def random_case(seed: int, mode: str):
    rng = random.Random(f"{mode}-{seed}")
    steps = [random_step(rng, step) for step in range(rng.randint(1, 3))]
    answers = {i: random_answer(rng, n, a) for calls in steps for i, n, a in calls}
    return rng, steps, random_layout(rng, mode), answers


@pytest.mark.parametrize("mode", MODES)
async def test_rewriting_matches_haystack_on_random_cases(mode):
    identical_pairs = 0
    for seed in range(SEEDS_PER_MODE):
        rng, steps, layout, answers = random_case(seed, mode)
        theirs, asked_theirs = haystack_case(steps, layout, answers)

        local, asked_local, _ = our_local_case(steps, layout, answers)
        durable, asked_durable, messages = await our_durable_case(steps, layout, answers, rng)
        context = f"mode={mode} seed={seed} layout={layout} steps={steps} answers={answers}"
        assert local == theirs, context
        assert durable == theirs, context
        assert asked_local == asked_theirs, context  # same requests, in the same order
        assert sorted(asked_durable) == sorted(asked_theirs), context  # same requests (answered in any order)

        records = audit_records(messages)
        assert sorted(records) == sorted(asked_durable), context  # one record per asked call, bound to it
        for call_id, record in records.items():
            assert record["tool_call_id"] == call_id and record["action"] == answers[call_id][0], context

        TALLY["cases"] += 3  # Haystack's, our local and our durable run of the same case
        TALLY[f"{mode} cases"] += 1
        TALLY["steps"] += len(steps)
        TALLY["calls"] += sum(len(calls) for calls in steps)
        TALLY["requests"] += len(asked_theirs)
        TALLY.update(f"answer {answers[i][0]}" for i in asked_theirs)
        for calls in steps:
            keys = [(n, sorted(a.items())) for _, n, a in calls if n != UNKNOWN_TOOL]
            identical_pairs += len(keys) - len(set(map(repr, keys)))
    TALLY["identical calls in one step"] += identical_pairs
    print(f"\n{mode}: {SEEDS_PER_MODE} random cases; running tally {dict(sorted(TALLY.items()))}")
    assert TALLY[f"{mode} cases"] == SEEDS_PER_MODE
    if mode == "ask_once":
        assert identical_pairs >= 20  # the inputs do exercise "ask once" within a step


def test_case_counts():
    """How many differential cases the random-case tests compare, and that Haystack's requests among
    them get every answer. Counted from the cases themselves (and Haystack's run of each), not from
    what the other tests tallied: scripts/test runs them in other processes (pytest-xdist)."""
    tally: Counter = Counter()
    for mode in MODES:
        for seed in range(SEEDS_PER_MODE):
            _, steps, layout, answers = random_case(seed, mode)
            _, asked_theirs = haystack_case(steps, layout, answers)
            tally["cases"] += 3  # Haystack's, our local and our durable run of the same case
            tally[f"{mode} cases"] += 1
            tally["requests"] += len(asked_theirs)
            tally.update(f"answer {answers[i][0]}" for i in asked_theirs)
    print(f"\ndifferential cases: {dict(sorted(tally.items()))}")
    assert tally["cases"] == 3 * SEEDS_PER_MODE * len(MODES)
    assert all(tally[f"{mode} cases"] == SEEDS_PER_MODE for mode in MODES)
    assert tally["answer reject"] and tally["answer modify"] and tally["answer confirm"]


# -- "ask once" means once -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "asked"),
    [
        (("confirm", None, None), ["c0"]),  # confirmed: the identical second call runs unasked
        (("reject", "no", None), ["c0", "c1"]),  # rejected: the second is asked, as in Haystack
        (("modify", None, {"a": 9, "b": 9}), ["c0", "c1"]),  # modified: not remembered, asked again
    ],
)
async def test_identical_calls_under_ask_once(first, asked):
    steps = [[("c0", "add", {"a": 1, "b": 1}), ("c1", "add", {"a": 1, "b": 1}), ("c2", "echo", {"text": "x"})]]
    answers = {"c0": first, "c1": ("confirm", None, None), "c2": ("confirm", None, None)}
    theirs, asked_theirs = haystack_case(steps, {"*": "ask_once"}, answers)
    ours, asked_ours, messages = await our_durable_case(steps, {"*": "ask_once"}, answers, random.Random(0))
    assert ours == theirs
    assert [a for a in asked_theirs if a != "c2"] == asked
    assert sorted(a for a in asked_ours if a != "c2") == asked
    assert sorted(audit_records(messages)) == sorted([*asked, "c2"])


async def test_same_tool_waits_in_call_order_other_tools_concurrently():
    """Under AskOnce the second ``add`` is published only once the first is decided; ``echo`` waits
    alongside the first from the start. Under AlwaysAsk all three wait at once."""
    calls = [("c0", "add", {"a": 1, "b": 1}), ("c1", "add", {"a": 2, "b": 1}), ("c2", "echo", {"text": "x"})]
    answers = {c: ("confirm", None, None) for c in ("c0", "c1", "c2")}
    for policy, first_wave in (("ask_once", {"c0", "c2"}), ("always", {"c0", "c1", "c2"})):
        hook = ConfirmationHook({"*": DurableConfirmationStrategy(POLICIES[policy]())})
        state = our_state()
        state.set("messages", [our_reply(calls)])
        with stand_in_workflow(Approver(answers), random.Random(1)) as fake:
            set_current_run(RunContext(run_id="order", agent=AgentSpec(model="m", tools=list(TOOLS)), state=state))
            await hook.run_async(state)
        assert {p.tool_call_id for p in fake.first_look} == first_wave, policy
        assert [m.role.value for m in state.data["messages"]] == ["user", "assistant"]


# -- the reference's constructors and the two paths of BlockingConfirmationStrategy ------------


def test_positional_constructors_follow_haystack():
    assert ConfirmationUIResult("confirm") == ConfirmationUIResult(action="confirm")
    assert dataclasses.asdict(ConfirmationUIResult("modify", "why", {"a": 1})) == {
        "action": "modify",
        "feedback": "why",
        "new_tool_params": {"a": 1},
    }
    assert vars(hhitl.ConfirmationUIResult("reject", "no")) == vars(ConfirmationUIResult("reject", "no"))
    decision = ToolExecutionDecision("add", True, "c1", "note", {"a": 1})
    theirs = hhitl.ToolExecutionDecision("add", True, "c1", "note", {"a": 1})
    assert decision.to_dict() == theirs.to_dict()
    assert ToolExecutionDecision.from_dict(theirs.to_dict()) == decision
    assert ToolExecutionDecision("add", False, record={"x": 1}).record == {"x": 1}
    for args, kwargs in ((("confirm",), {"action": "reject"}), ((), {})):
        with pytest.raises(TypeError) as theirs_error:
            hhitl.ConfirmationUIResult(*args, **kwargs)
        with pytest.raises(TypeError) as ours_error:
            ConfirmationUIResult(*args, **kwargs)
        assert str(ours_error.value) == str(theirs_error.value)
    with pytest.raises(TypeError, match="positional arguments"):
        ToolExecutionDecision("add", True, "c1", None, {}, {"record": 1})


def test_blocking_strategy_round_trips_and_old_requests_parse():
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=AskOncePolicy(), confirmation_ui=RichConsoleUI(), timeout=timedelta(days=2)
    )
    data = strategy.to_dict()
    assert data["type"] == "hooks.human_in_the_loop.strategies.BlockingConfirmationStrategy"
    assert data["init_parameters"]["confirmation_ui"] == {
        "type": "hooks.human_in_the_loop.user_interfaces.RichConsoleUI",
        "init_parameters": {"console": None},
    }
    back = object_from_dict(data)
    assert isinstance(back.confirmation_ui, RichConsoleUI) and back.timeout == timedelta(days=2)
    assert back.to_dict() == data
    hook = ConfirmationHook(
        {"*": BlockingConfirmationStrategy(confirmation_policy=NeverAskPolicy(), confirmation_ui=SimpleConsoleUI())}
    )
    assert ConfirmationHook.from_dict(hook.to_dict()).to_dict() == hook.to_dict()
    assert SimpleConsoleUI().to_dict() == {
        "type": "hooks.human_in_the_loop.user_interfaces.SimpleConsoleUI",
        "init_parameters": {},
    }
    old = {"tool_call_id": "c", "tool_name": "add", "tool_params": {}, "requested_at": "2025-01-01T00:00:00Z"}
    assert PendingConfirmation.model_validate(old).confirmation_ui is None  # payloads from before the field


def test_blocking_strategy_asks_through_its_ui_outside_a_workflow():
    approver = Approver({"c1": ("reject", "too risky", None)})
    approver.current = "c1"
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ScriptedUI(approver))
    decision = strategy.run(tool_name="remove", tool_description="", tool_params={"path": "/"}, tool_call_id="c1")
    assert not decision.execute
    assert decision.feedback == "Tool execution for 'remove' was rejected by the user. With user feedback: too risky"
    approver.asked.clear()
    again = asyncio.run(
        strategy.run_async(tool_name="remove", tool_description="", tool_params={"path": "/"}, tool_call_id="c1")
    )
    assert again == decision and approver.asked == ["c1"]  # run_async asks through the UI as well


def test_sync_paths_refuse_to_run_inside_a_workflow(monkeypatch):
    state = our_state()
    state.set("messages", [our_reply([("c0", "add", {"a": 1, "b": 1})])])
    hook = ConfirmationHook(
        {"*": BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI())}
    )
    inside = SimpleNamespace(in_workflow=lambda: True)
    monkeypatch.setattr(hooks_module, "workflow", inside)
    with pytest.raises(RuntimeError, match=r"await hook.run_async\(state\)"):
        hook.run(state)
    monkeypatch.setattr(strategies_module, "workflow", inside)
    with pytest.raises(RuntimeError, match=r"await run_async"):
        hook.confirmation_strategies["*"].run(tool_name="add", tool_description="", tool_params={})


def test_local_run_with_a_durable_only_strategy_is_a_clear_error():
    state = our_state()
    state.set("messages", [our_reply([("c0", "add", {"a": 1, "b": 1})])])
    with pytest.raises(AttributeError, match="no sync run"):
        ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy())}).run(state)
    with pytest.raises(RuntimeError, match="inside an AgentWorkflow run"):
        asyncio.run(ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy())}).run_async(state))


# -- the console UIs, driven by the same standard input as Haystack's --------------------------

UI_INPUTS = [
    ("y\n", {"a": 1, "text": "hi"}),
    ("yes\n", {}),
    ("what\nn\n\n", {"a": 1}),
    ("no\nnot today\n", {"a": 1}),
    ("m\n5\nnew text\n", {"a": 1, "text": "hi"}),
    ("modify\n\n\n", {"a": 1, "text": "hi"}),  # Enter keeps each value
    ("m\n{bad\n[1, 2]\n", {"a": 1}),  # not JSON: asked again
    ("m\n", {}),
]


@pytest.mark.parametrize(("typed", "params"), UI_INPUTS)
def test_simple_console_ui_answers_as_haystacks(typed, params, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    ours = SimpleConsoleUI().get_user_confirmation("tool", "does things", params)
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    theirs = hhitl.SimpleConsoleUI().get_user_confirmation("tool", "does things", params)
    assert vars(ours) == vars(theirs)
    assert "tool" in capsys.readouterr().out


RICH_INPUTS = [
    ("\n", {"a": 1}),  # the default is y
    ("n\nreason\n", {"a": 1}),
    ("x\nm\n7\n\n", {"a": 1, "text": "hi"}),  # an invalid choice is asked again
    ("m\nnope\n3\n", {"a": 1}),
]


@pytest.mark.parametrize(("typed", "params"), RICH_INPUTS)
def test_rich_console_ui_answers_as_haystacks(typed, params, monkeypatch):
    from rich.console import Console

    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    screen = io.StringIO()
    ours = RichConsoleUI(console=Console(file=screen)).get_user_confirmation("tool", "[does] things", params)
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    theirs = hhitl.RichConsoleUI(console=Console(file=io.StringIO())).get_user_confirmation("tool", "x", params)
    assert vars(ours) == vars(theirs)
    assert "[does] things" in screen.getvalue()  # shown as text, not read as markup


def test_rich_console_ui_is_built_without_touching_a_terminal():
    ui = object_from_dict(RichConsoleUI().to_dict())
    assert isinstance(ui, RichConsoleUI) and ui.console is None
