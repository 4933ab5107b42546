"""``ConfirmationHook``: confirm, modify or reject the pending tool calls before they run."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from temporalio import workflow

from core.messages import ChatMessage, ToolCall
from core.serialization import default_to_dict, object_from_dict, object_to_dict
from core.state import State, replace_values
from core.tool_records import CONFIRMATION_KEY
from core.tools import ToolSpec
from hooks._tool_keys import (
    WILDCARD,
    ToolKey,
    decode_tool_key,
    encode_tool_key,
    lookup_by_tool,
    validate_tool_keys,
)
from hooks.context import current_run_or_none
from hooks.human_in_the_loop.dataclasses import ToolExecutionDecision
from hooks.human_in_the_loop.notifications import ApprovalOutbox
from hooks.human_in_the_loop.protocol import STRATEGY_SLOT, ConfirmationCall, ConfirmationStrategy
from hooks.human_in_the_loop.registry import approver_list
from hooks.human_in_the_loop.rules import RulePolicy
from hooks.human_in_the_loop.strategies import DurableConfirmationStrategy
from hooks.human_in_the_loop.templates import (
    MODIFICATION_FEEDBACK_TEMPLATE,
    REJECTION_FEEDBACK_TEMPLATE,
    modification_feedback,
)
from hooks.protocol import HasMemory, NeedsSearchAttributes


class ConfirmationHook:
    """A ``before_tool`` hook that applies confirmation strategies to the pending tool calls.

    Keys of ``confirmation_strategies`` are a tool name, a tuple of tool names sharing one
    strategy, or ``"*"`` for every tool without a more specific key (a tool's own key beats a
    tuple, a tuple beats ``"*"``). A tool with no matching key runs unasked; so does a call of an
    unknown tool (the run loop answers it with an error).

    In a run (``run_async``, which the run loop awaits) the calls of one step are decided
    independently and wait concurrently, except that a policy which learns from answers
    (``AskOncePolicy``) sees the calls of one tool in call order, as in Haystack (see
    :mod:`hooks.human_in_the_loop.strategies`). ``run`` is the local, non-durable
    path: it asks through each strategy's sync ``run``, one call after another, as Haystack does.
    The messages are then rewritten as in Haystack: the last (assistant) message is replaced by, in
    order, an assistant/tool message pair per rejected call (the tool message has ``error=True``
    and the rejection text), a user message per modified call explaining the change, and the
    assistant message with the confirmed and modified calls (modified ones carrying the new
    arguments), which is last, so the run loop runs exactly those. When every call is rejected,
    the last message is a tool message and nothing runs.

    Call ids, as in Haystack: the conversation keeps each call's id as the model gave it, None
    included. Two calls with the same id, or two id-less calls of one tool, are a ``ValueError``
    (Haystack's message), raised before anyone is asked. A person's decision must name the call it
    decides, so in ``run_async`` an id-less call is asked, and its strategy called, under
    ``hitl-s{step}-c{index}`` (``index`` is its position in the message); that id is in the pending
    request and the decision's record, never in the messages. ``run`` passes the model's id (None).

    Who may decide: each ``DurableConfirmationStrategy`` may name ``approvers``; ``approvers`` here
    gives a tool its own list, which **replaces** (does not add to) its strategy's list for that
    tool's calls, so one strategy can serve tools with different approvers. Keys follow the same
    rules as ``confirmation_strategies`` (own name beats a tuple, a tuple beats ``"*"``); a tool no
    key matches keeps its strategy's list. Lists apply in durable runs (``run_async``); a local run
    (``run``) asks whoever is at its console.

    :param confirmation_strategies: Tool name (or tuple of names, or ``"*"``) -> strategy, e.g.
        ``DurableConfirmationStrategy(AlwaysAskPolicy())``.
    :param approvers: Keyword-only, not in Haystack. Tool name (or tuple of names, or ``"*"``) ->
        who may decide its calls, e.g. ``{"transfer_money": ["alice", "bob"]}``; None (default) or
        ``{}``: each strategy's own list. ``to_dict`` has an ``approvers`` key only when it is set.
    :raises ValueError: If the mapping is empty or a key is not a non-empty string or tuple of
        strings (a ``"*"`` inside a tuple is accepted, and a strategy is not checked, as in
        Haystack: one without ``run_async``/``run`` fails when a call needs it); if ``approvers`` is
        not a dict, has a malformed key (a tuple holding ``"*"`` included) or a list that is not a non-empty list of non-blank names, names a tool no
        strategy covers (its calls are never asked, so the list could never apply), or covers a tool
        whose strategy is not a ``DurableConfirmationStrategy`` (which alone checks approvers).
    """

    allowed_hook_points = ("before_tool",)

    def __init__(
        self,
        confirmation_strategies: dict[ToolKey, ConfirmationStrategy],
        *,
        approvers: dict[ToolKey, list[str]] | None = None,
    ) -> None:
        if not confirmation_strategies:
            raise ValueError("ConfirmationHook needs at least one confirmation strategy.")
        validate_tool_keys(confirmation_strategies, "confirmation_strategies")
        self.confirmation_strategies = dict(confirmation_strategies)
        self.approvers = self._checked_approvers(approvers)

    def _checked_approvers(self, approvers: Any) -> dict[ToolKey, list[str]] | None:
        """``approvers`` checked against the strategies (see the class docstring); None for none."""
        if approvers is None:
            return None
        if not isinstance(approvers, dict):
            raise ValueError(
                f"approvers must be a dict of tool name -> list of approver names, got {type(approvers).__name__}: "
                f"{approvers!r}."
            )
        validate_tool_keys(approvers, "approvers")
        checked: dict[ToolKey, list[str]] = {}
        for key, names in approvers.items():
            if isinstance(key, tuple) and WILDCARD in key:
                # Strategy keys accept this, as Haystack does; a list of approvers for no tool is a mistake.
                raise ValueError(f"approvers keys must be a tool name, a tuple of tool names, or '*', got {key!r}.")
            checked[key] = approver_list(names, f"approvers[{key!r}]")
            if key == WILDCARD:
                covered = list(self.confirmation_strategies.items())
            else:
                covered = []
                for tool in key if isinstance(key, tuple) else (key,):
                    strategy = lookup_by_tool(tool, self.confirmation_strategies)
                    if strategy is None:
                        keys = ", ".join(repr(k) for k in self.confirmation_strategies)
                        raise ValueError(
                            f"approvers[{key!r}] names tool {tool!r}, which no confirmation strategy covers "
                            f"(strategy keys: {keys}): its calls are never asked, so the list could never apply."
                        )
                    covered.append((tool, strategy))
            for tool, strategy in covered:
                if not isinstance(strategy, DurableConfirmationStrategy):
                    raise ValueError(
                        f"approvers[{key!r}] covers {tool!r}, whose strategy {strategy!r} does not check approvers; "
                        "use DurableConfirmationStrategy or BlockingConfirmationStrategy for it."
                    )
        return checked or None

    def check_tool_arguments(self, schemas: dict[str, dict[str, Any]], every_tool_known: bool) -> None:
        """Check each ``RulePolicy`` rule against the arguments of the tools its key covers
        (``hooks.protocol.ChecksToolArguments``; called when the ``Agent`` is built).

        A tool key covers the tools it names (those ``schemas`` has: an MCP tool is listed only
        when a run starts); ``"*"`` covers every tool without a more specific key, and is checked
        only when ``every_tool_known``.

        :raises ValueError: For a rule that reads an argument no tool it covers takes, naming the
            rule, the tool(s) and their arguments.
        """
        for key, strategy in self.confirmation_strategies.items():
            policy = getattr(strategy, "confirmation_policy", None)
            if not isinstance(policy, RulePolicy):
                continue
            if key == WILDCARD:
                if not every_tool_known:
                    continue
                covered = [name for name in schemas if lookup_by_tool(name, self.confirmation_strategies) is strategy]
            else:
                covered = [name for name in (key if isinstance(key, tuple) else (key,)) if name in schemas]
            problem = policy.argument_problem(key, {name: schemas[name] for name in covered})
            if problem is not None:
                raise ValueError(problem)

    def run(self, state: State) -> None:
        """A local, non-durable run: ask for each pending call in turn through its strategy's sync
        ``run`` (``BlockingConfirmationStrategy`` asks through its ``ConfirmationUI`` in this
        process), then rewrite ``messages`` as :meth:`run_async` does.

        :param state: As :meth:`run_async`.
        :raises RuntimeError: Inside a workflow, where nothing may block on a person: the run loop
            awaits :meth:`run_async`, which waits durably.
        :raises AttributeError: For a strategy that has no sync ``run`` (``DurableConfirmationStrategy``
            only waits inside a run), when a call needs it.
        :raises ValueError: For two calls with one id, or two id-less calls of one tool.
        """
        if workflow.in_workflow():
            raise RuntimeError(
                "ConfirmationHook.run() asks in this process and blocks; inside an AgentWorkflow run use "
                "`await hook.run_async(state)`, which waits for decisions durably (the run loop calls it)."
            )
        pending = self._pending(state)
        if pending is None:
            return
        last, _, tools, context = pending
        decisions = []
        # No one names a call from another process here, so strategies get the ids as the model gave them.
        for call in last.tool_calls:
            asked = self._strategy_inputs(call, tools, context)
            if asked is None:
                decisions.append(_passthrough(call))
                continue
            strategy, inputs = asked
            run = getattr(strategy, "run", None)
            if not callable(run):
                # AttributeError, as Haystack's hook raises calling a strategy's missing run().
                raise AttributeError(
                    f"{strategy!r} has no sync run(), so it cannot ask in a local run; use "
                    "BlockingConfirmationStrategy there, or run the agent with Agent.start (durable)."
                )
            decisions.append(_bound(run(**inputs), call))
        self._rewrite(state, last, decisions)

    async def run_async(self, state: State) -> None:
        """Ask for every pending call at once, wait for all decisions, rewrite ``messages``.

        :param state: The run's State: reads ``messages`` (pending calls on the last message),
            ``tools``, ``step_count`` and ``hook_context``; writes ``messages``.
        :raises ValueError: For two calls with one id, or two id-less calls of one tool, before
            anyone is asked.
        """
        pending = self._pending(state)
        if pending is None:
            return
        last, calls, tools, context = pending
        decisions = await asyncio.gather(*(self._decide(call, tools, context) for call in calls))
        self._rewrite(state, last, list(decisions))

    @staticmethod
    def _pending(
        state: State,
    ) -> tuple[ChatMessage, list[ToolCall], dict[str, ToolSpec], dict[str, Any] | None] | None:
        """The last message, its calls with the ids they are asked under (see the class docstring),
        the tools by name and the hook context; None when the last message has no tool calls.

        :raises ValueError: For two calls with one id, or two id-less calls of one tool (Haystack's rule).
        """
        messages: list[ChatMessage] = state.data.get("messages") or []
        if not messages or not messages[-1].tool_calls:
            return None
        last = messages[-1]
        check_call_ids(last.tool_calls)
        calls = with_unique_ids(last.tool_calls, state.data.get("step_count", 0))
        tools: dict[str, ToolSpec] = {t.name: t for t in state.data.get("tools") or []}
        return last, calls, tools, state.data.get("hook_context")

    @staticmethod
    def _rewrite(state: State, last: ChatMessage, decisions: list[ToolExecutionDecision]) -> None:
        """Replace ``last`` by what ``decisions`` (one per call, in call order) make of it; the
        calls keep the ids the model gave them."""
        messages: list[ChatMessage] = state.data["messages"]
        replacement = replace_decided(last, decisions)
        state.set("messages", messages[:-1] + replacement, handler_override=replace_values)

    def _strategy_inputs(
        self, call: ToolCall, tools: dict[str, ToolSpec], context: dict[str, Any] | None
    ) -> tuple[ConfirmationStrategy, ConfirmationCall] | None:
        """The call's strategy and its keyword arguments; None for a call that runs unasked (no key
        matches its tool, the tool is unknown, or its arguments did not parse)."""
        spec = tools.get(call.tool_name)
        strategy = lookup_by_tool(call.tool_name, self.confirmation_strategies)
        if spec is None or strategy is None or (call.extra and "invalid_arguments" in call.extra):
            return None
        inputs = ConfirmationCall(
            tool_name=call.tool_name,
            tool_description=spec.description,
            tool_params=dict(call.arguments),
            tool_call_id=call.id,
            confirmation_strategy_context=context,
        )
        return strategy, inputs

    async def _decide(
        self, call: ToolCall, tools: dict[str, ToolSpec], context: dict[str, Any] | None
    ) -> ToolExecutionDecision:
        asked = self._strategy_inputs(call, tools, context)
        if asked is None:
            return _passthrough(call)
        strategy, inputs = asked
        run_async = getattr(strategy, "run_async", None)
        # A per-tool list replaces the strategy's own (validated at construction: the strategy takes it).
        override = lookup_by_tool(call.tool_name, self.approvers) if self.approvers else None
        if run_async is None:
            decision = strategy.run(**inputs)
        elif override is not None:
            decision = await run_async(approvers=list(override), **inputs)
        else:
            decision = await run_async(**inputs)
        return _bound(decision, call)

    async def close_async(self) -> None:
        """At the run's end, wait for the approval_decided/expired notifications still under way
        (:meth:`~hooks.human_in_the_loop.notifications.ApprovalOutbox.drain`; none without a notifier)."""
        # Not on a workflow being evicted from the cache: its run context is gone, and nothing is sent then.
        if workflow.in_workflow() and current_run_or_none() is not None:
            await ApprovalOutbox.of_current_run().drain()

    def search_attributes(self) -> dict[str, str]:
        """The search attributes the strategies set while a run waits for a person."""
        out: dict[str, str] = {}
        for strategy in self.confirmation_strategies.values():
            if isinstance(strategy, NeedsSearchAttributes):
                out.update(strategy.search_attributes())
        return out

    # -- memory across continue-as-new -------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Strategies' memory (e.g. ``AskOncePolicy``'s confirmed calls), keyed by encoded key."""
        return {
            encode_tool_key(key): strategy.snapshot()
            for key, strategy in self.confirmation_strategies.items()
            if isinstance(strategy, HasMemory)
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Give strategies back what :meth:`snapshot` returned."""
        for raw_key, memory in (data or {}).items():
            strategy = self.confirmation_strategies.get(decode_tool_key(raw_key))
            if isinstance(strategy, HasMemory):
                strategy.restore(memory)

    # -- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialise; tuple keys (of both mappings) become JSON-array strings. ``approvers`` is
        present only when set."""
        params: dict[str, Any] = {
            "confirmation_strategies": {
                encode_tool_key(key): object_to_dict(strategy) for key, strategy in self.confirmation_strategies.items()
            }
        }
        # Only when set, so a hook without approvers serialises exactly as Haystack's does.
        if self.approvers is not None:
            params["approvers"] = {encode_tool_key(key): list(names) for key, names in self.approvers.items()}
        return default_to_dict(self, **params)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationHook:
        """Rebuild from :meth:`to_dict`'s output."""
        params = data.get("init_parameters", {})
        raw = params.get("confirmation_strategies", {})
        approvers = params.get("approvers")
        return cls(
            {decode_tool_key(key): object_from_dict(value, STRATEGY_SLOT) for key, value in raw.items()},
            approvers=(
                {decode_tool_key(key): names for key, names in approvers.items()}
                if isinstance(approvers, dict)
                else approvers
            ),
        )

    def __repr__(self) -> str:
        who = f", approvers={self.approvers!r}" if self.approvers is not None else ""
        return f"ConfirmationHook({self.confirmation_strategies!r}{who})"


def _passthrough(call: ToolCall) -> ToolExecutionDecision:
    """Run ``call`` as the model asked, unasked."""
    return ToolExecutionDecision(
        tool_name=call.tool_name, execute=True, tool_call_id=call.id, final_tool_params=dict(call.arguments)
    )


def _bound(decision: Any, call: ToolCall) -> ToolExecutionDecision:
    """A strategy's decision as a :class:`ToolExecutionDecision` bound to ``call``, whatever id and
    tool name the strategy put in it."""
    if not isinstance(decision, ToolExecutionDecision):
        decision = ToolExecutionDecision.from_dict(decision.to_dict() if hasattr(decision, "to_dict") else decision)
    return dataclasses.replace(decision, tool_call_id=call.id, tool_name=call.tool_name)


def check_call_ids(calls: list[ToolCall]) -> None:
    """Haystack's rule for matching decisions to calls: each id at most once, and at most one
    id-less call per tool (an id-less call is matched by its tool's name).

    :raises ValueError: With Haystack's message, naming the first call that cannot be matched.
    """
    seen_ids: set[str] = set()
    idless_tools: set[str] = set()
    for call in calls:
        if call.id:
            clash = call.id in seen_ids
            seen_ids.add(call.id)
        else:
            clash = call.tool_name in idless_tools
            idless_tools.add(call.tool_name)
        if clash:
            raise ValueError(
                f"No unused ToolExecutionDecision matches tool call {call.tool_name!r} with ID {call.id!r}. "
                "Set tool_call_id to match decisions to tool calls reliably."
            )


def with_unique_ids(calls: list[ToolCall], step: int) -> list[ToolCall]:
    """The calls, each with an id unique in the step: an id-less call gets ``hitl-s{step}-c{index}``,
    a repeated id gets ``-{index}`` appended (deterministic, so replay gives the same ids)."""
    seen: set[str] = set()
    out = []
    for index, call in enumerate(calls):
        call_id = call.id or f"hitl-s{step}-c{index}"
        if call_id in seen:
            call_id = f"{call_id}-{index}"
        seen.add(call_id)
        out.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return out


def apply_decisions(message: ChatMessage, decisions: list[ToolExecutionDecision]) -> list[ChatMessage]:
    """The messages that replace ``message`` (the assistant message with the pending calls), each
    call decided by the decision bound to its id.

    :raises ValueError: If a call has no decision bound to its id.
    """
    by_id = {d.tool_call_id: d for d in decisions}
    ordered = []
    for call in message.tool_calls:
        decision = by_id.pop(call.id, None)
        if decision is None:
            raise ValueError(f"No decision is bound to tool call {call.tool_name!r} with id {call.id!r}.")
        ordered.append(decision)
    return replace_decided(message, ordered)


def replace_decided(message: ChatMessage, decisions: list[ToolExecutionDecision]) -> list[ChatMessage]:
    """The messages that replace ``message``, ``decisions[i]`` deciding its ``i``-th call: in order,
    an assistant/tool message pair per rejected call, a user message per modified call, and the
    assistant message with the calls that run. Calls keep their own ids.

    :raises ValueError: If there is not one decision per call.
    """
    if len(decisions) != len(message.tool_calls):
        raise ValueError(
            f"Expected one ToolExecutionDecision for each tool call, but received {len(decisions)} "
            f"decisions for {len(message.tool_calls)} tool calls."
        )
    rejections: list[ChatMessage] = []
    explanations: list[ChatMessage] = []
    kept: list[ToolCall] = []
    for call, decision in zip(message.tool_calls, decisions, strict=True):
        extra = dict(call.extra or {})
        if decision.record is not None:
            extra[CONFIRMATION_KEY] = decision.record
        if not decision.execute:
            origin = call.model_copy(update={"extra": extra or None})
            text = decision.feedback or REJECTION_FEEDBACK_TEMPLATE.format(tool_name=call.tool_name)
            meta = {CONFIRMATION_KEY: decision.record} if decision.record is not None else {}
            rejections += [
                message.with_updates(tool_calls=[origin]),
                ChatMessage.from_tool(text, origin=origin, error=True, meta=meta),
            ]
            continue
        final = dict(decision.final_tool_params or {})
        if final != call.arguments:
            explanations.append(
                ChatMessage.from_user(
                    decision.feedback or modification_feedback(MODIFICATION_FEEDBACK_TEMPLATE, call.tool_name, final)
                )
            )
        kept.append(call.model_copy(update={"arguments": final, "extra": extra or None}))
    tail = [message.with_updates(tool_calls=kept)] if kept else []
    return rejections + explanations + tail
