"""Construction, serialisation, key resolution and message rewriting of the confirmation hook,
without a server; the rewriting is checked against Haystack's own (installed for reference)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
from hooks.human_in_the_loop.dataclasses import PendingConfirmation, ToolDecision
from hooks.human_in_the_loop.hooks import apply_decisions, with_unique_ids
from hooks.human_in_the_loop.registry import (
    DEFAULT_DECISION_LIMITS,
    MAX_FEEDBACK_CHARS,
    MAX_NEW_TOOL_PARAMS_BYTES,
    ConfirmationRegistry,
    DecisionError,
    DecisionLimits,
)
from hooks.human_in_the_loop.templates import (
    MODIFICATION_FEEDBACK_TEMPLATE,
    MODIFICATION_PREVIEW_CHARS,
    describe_timedelta,
)
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
        ({"reject_template": "no {tool}"}, r"reject_template may use only \{tool_name\}, but names \{tool\}"),
        ({"modify_template": "{tool_name} {}"}, r"modify_template may use only .* but names \{\}"),
        ({"user_feedback_template": "{feedback"}, "user_feedback_template is not a valid format string"),
        ({"reject_template": None}, "reject_template must be a string"),
        (
            {"notify_url": "https://x"},
            r"notify_url was removed: pass notifier=WebhookNotifier\(url, secret_env=\.\.\.\)",
        ),
        ({"max_new_tool_params_bytes": 0}, "max_new_tool_params_bytes must be a positive integer"),
        ({"max_feedback_chars": -1}, "max_feedback_chars must be a positive integer"),
    ],
)
def test_strategy_rejects_bad_configuration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DurableConfirmationStrategy(AlwaysAskPolicy(), **kwargs)


@pytest.mark.parametrize("strategies", [{}, {"": DurableConfirmationStrategy(AlwaysAskPolicy())}, {(): object()}])
def test_hook_rejects_bad_strategies(strategies):
    with pytest.raises(ValueError):
        ConfirmationHook(strategies)


def test_round_trip_with_tuple_keys():
    hook = ConfirmationHook(
        {
            ("add", "echo"): DurableConfirmationStrategy(
                AskOncePolicy(), timeout=timedelta(days=3), on_timeout="confirm"
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


# -- bounded decisions (an unbounded one would grow the history without limit) ----------------

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
ENVELOPE = len('{"text":""}')  # bytes of {"text": ...} around the text, as compact JSON


class OffWorkflowRegistry(ConfirmationRegistry):
    """A registry outside a workflow: advertising (search attribute, memo) needs one; validating does not."""

    def _advertise(self) -> None:
        pass


def registry_with(call_id: str = "c1", limits: DecisionLimits = DEFAULT_DECISION_LIMITS) -> ConfirmationRegistry:
    registry = OffWorkflowRegistry(search_attribute=None)
    request = PendingConfirmation(
        tool_call_id=call_id,
        tool_name="echo",
        tool_params={"text": "hi"},
        requested_at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    registry.publish(request, schema=ECHO_SCHEMA, limits=limits)
    return registry


def modify(text: str, **kwargs) -> ToolDecision:
    return ToolDecision(tool_call_id="c1", action="modify", new_tool_params={"text": text}, **kwargs)


def test_default_limits():
    assert (MAX_NEW_TOOL_PARAMS_BYTES, MAX_FEEDBACK_CHARS) == (64 * 1024, 4_000)
    assert DecisionLimits() == DecisionLimits(MAX_NEW_TOOL_PARAMS_BYTES, MAX_FEEDBACK_CHARS)


def test_registry_refuses_oversize_new_tool_params_with_size_and_limit():
    registry = registry_with()
    with pytest.raises(DecisionError, match=r"new_tool_params are 65,537 bytes as compact JSON; the limit is 65,536"):
        registry.validate(modify("x" * (MAX_NEW_TOOL_PARAMS_BYTES - ENVELOPE + 1)))
    with pytest.raises(DecisionError, match=r"3,000,011 bytes .* limit is 65,536 bytes"):
        registry.validate(modify("x" * 3_000_000))  # a 3 MB modify
    assert registry.pending()[0].tool_call_id == "c1"  # still waiting


def test_registry_accepts_new_tool_params_at_the_limit():
    registry = registry_with()
    assert registry.validate(modify("x" * (MAX_NEW_TOOL_PARAMS_BYTES - ENVELOPE))).tool_call_id == "c1"


def test_params_size_is_utf8_bytes_not_characters():
    registry = registry_with()
    text = "é" * ((MAX_NEW_TOOL_PARAMS_BYTES - ENVELOPE) // 2 + 1)  # fewer characters than the limit, more bytes
    assert len(text) < MAX_NEW_TOOL_PARAMS_BYTES
    with pytest.raises(DecisionError, match="65,537 bytes"):
        registry.validate(modify(text))


@pytest.mark.parametrize("action", ["confirm", "reject", "modify"])
def test_registry_refuses_oversize_feedback(action):
    registry = registry_with()
    params = {"new_tool_params": {"text": "x"}} if action == "modify" else {}
    fits = ToolDecision(tool_call_id="c1", action=action, feedback="f" * MAX_FEEDBACK_CHARS, **params)
    assert registry.validate(fits).tool_call_id == "c1"
    too_long = fits.model_copy(update={"feedback": "f" * (MAX_FEEDBACK_CHARS + 1)})
    with pytest.raises(DecisionError, match=r"feedback is 4,001 characters; the limit is 4,000 characters"):
        registry.validate(too_long)


def test_limits_are_per_request():
    registry = registry_with("c1", limits=DecisionLimits(max_new_tool_params_bytes=100, max_feedback_chars=10))
    with pytest.raises(DecisionError, match=r"are 111 bytes .* limit is 100 bytes; feedback is 11 .* limit is 10"):
        registry.validate(modify("x" * 100, feedback="f" * 11))


def test_strategy_limits_round_trip():
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), max_new_tool_params_bytes=1000, max_feedback_chars=50)
    assert strategy.limits == DecisionLimits(1000, 50)
    data = strategy.to_dict()
    assert data["init_parameters"]["max_new_tool_params_bytes"] == 1000
    assert data["init_parameters"]["max_feedback_chars"] == 50
    assert DurableConfirmationStrategy.from_dict(data).limits == DecisionLimits(1000, 50)


def _modify_text(params: dict, feedback: str | None = None) -> str:
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy())
    result = ConfirmationUIResult(action="modify", new_tool_params=params, feedback=feedback)
    return strategy._apply("echo", "c1", {"text": "hi"}, result).feedback


def _haystack_modify_text(params: dict, feedback: str | None = None) -> str:
    from haystack.hooks.human_in_the_loop import AlwaysAskPolicy as HAlwaysAsk
    from haystack.hooks.human_in_the_loop import BlockingConfirmationStrategy
    from haystack.hooks.human_in_the_loop import ConfirmationUIResult as HResult

    class Scripted:
        def get_user_confirmation(self, tool_name, tool_description, tool_params):
            return HResult(action="modify", new_tool_params=params, feedback=feedback)

    strategy = BlockingConfirmationStrategy(confirmation_policy=HAlwaysAsk(), confirmation_ui=Scripted())
    return strategy.run(tool_name="echo", tool_description="", tool_params={"text": "hi"}).feedback


@pytest.mark.parametrize("feedback", [None, "shorter, please"])
def test_small_modification_text_is_haystacks(feedback):
    params = {"text": "y" * (MODIFICATION_PREVIEW_CHARS - len("{'text': ''}"))}  # exactly at the preview limit
    assert len(str(params)) == MODIFICATION_PREVIEW_CHARS
    ours = _modify_text(params, feedback)
    assert ours == _haystack_modify_text(params, feedback)
    assert ours.startswith(MODIFICATION_FEEDBACK_TEMPLATE.format(tool_name="echo", final_tool_params=params))


def test_long_modification_text_is_a_bounded_preview():
    params = {"text": "z" * (MAX_NEW_TOOL_PARAMS_BYTES - ENVELOPE)}  # the biggest allowed
    whole = str(params)
    text = _modify_text(params, feedback="f" * MAX_FEEDBACK_CHARS)
    head = "The parameters for tool 'echo' were updated by the user to:\n"
    preview = f"{whole[:MODIFICATION_PREVIEW_CHARS]}… ({len(whole):,} characters in all)"
    assert text == f"{head}{preview} With user feedback: {'f' * MAX_FEEDBACK_CHARS}"
    assert len(text) < len(head) + MODIFICATION_PREVIEW_CHARS + 50 + len(" With user feedback: ") + MAX_FEEDBACK_CHARS
    assert len(_haystack_modify_text(params)) > len(whole)  # Haystack repeats the whole parameters


def test_custom_modify_template_gets_the_preview():
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), modify_template="{tool_name} now: {final_tool_params}")
    params = {"text": "q" * 5_000}
    result = ConfirmationUIResult(action="modify", new_tool_params=params)
    text = strategy._apply("echo", "c1", {"text": "hi"}, result).feedback
    assert text == f"echo now: {str(params)[:MODIFICATION_PREVIEW_CHARS]}… (5,012 characters in all)"
