"""Confirmation strategies: ask a person and wait for the answer in the workflow, for days.

Where Haystack's ``BlockingConfirmationStrategy`` blocks on a console prompt,
``DurableConfirmationStrategy`` publishes a :class:`PendingConfirmation` in the run's ``ConfirmationRegistry``
(visible to the ``pending_confirmations`` query and the ``AgentWaitingForApproval`` search
attribute), waits with ``workflow.wait_condition`` for a decision delivered by the Signal
``tool_decision`` or the Update ``submit_tool_decision``, and turns it into a
``ToolExecutionDecision`` with the same templates and rules as Haystack. No process is held while
it waits.

``BlockingConfirmationStrategy`` is Haystack's name and constructor on the same durable wait: in
a workflow it waits exactly as ``DurableConfirmationStrategy`` does and names its
``ConfirmationUI`` in each request, so ``agent approve --interactive`` asks the person through
that UI; outside a workflow (a local, non-durable run) it asks through the UI directly, as
Haystack's does.

A policy that learns from answers (it overrides ``update_after_confirmation``, as
``AskOncePolicy`` does) sees the calls of one tool in the order the model made them, as in
Haystack, where calls are asked one after another: the second call of a tool in a step is put to
the policy (and asked, if the policy still says so) only once the first is decided. So two
identical calls under ``AskOncePolicy`` make one request when the first is confirmed. Calls of
different tools, and every call under a policy that does not learn, wait concurrently.

What a person sends is bounded (:mod:`hooks.human_in_the_loop.registry`), and so is what the model
is told of a modification: shown whole only while short, a preview otherwise (:func:`modification_feedback`).

Who may decide: ``approvers=[...]`` names the people whose decisions the run accepts (each request
carries the list in ``PendingConfirmation.approvers``; the Update's validator and the Signal's
handler check it, see :mod:`hooks.human_in_the_loop.registry`). ``ConfirmationHook(approvers=...)``
replaces the list for chosen tools. A timeout still decides (on behalf of no one). A local,
non-durable run (``BlockingConfirmationStrategy.run``) asks whoever is at its console and has no
approver to check.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any, Literal, Unpack

from temporalio import workflow

from core.serialization import default_to_dict, object_from_dict, object_to_dict
from core.tool_records import arguments_sha256
from hooks.context import current_run
from hooks.human_in_the_loop.dataclasses import (
    ConfirmationUIResult,
    PendingConfirmation,
    ToolExecutionDecision,
)
from hooks.human_in_the_loop.escalation import Escalation, escalation_steps, wait_for_decision
from hooks.human_in_the_loop.notifications import ApprovalOutbox
from hooks.human_in_the_loop.notifiers import ApprovalEventType, WebhookNotifier
from hooks.human_in_the_loop.protocol import (
    NOTIFIER_SLOT,
    POLICY_SLOT,
    UI_SLOT,
    ConfirmationCall,
    ConfirmationPolicy,
    ConfirmationUI,
    confirmation_call,
)
from hooks.human_in_the_loop.registry import (
    MAX_FEEDBACK_CHARS,
    MAX_NEW_TOOL_PARAMS_BYTES,
    ConfirmationRegistry,
    DecisionLimits,
    approver_list,
)
from hooks.human_in_the_loop.templates import (
    MODIFICATION_FEEDBACK_TEMPLATE,
    REJECTION_FEEDBACK_TEMPLATE,
    TIMEOUT_FEEDBACK_TEMPLATE,
    USER_FEEDBACK_TEMPLATE,
    as_ui_result,
    check_template,
    describe_timedelta,
    modification_feedback,
)
from hooks.human_in_the_loop.wire import WAITING_FOR_APPROVAL


def policy_learns(policy: Any) -> bool:
    """Whether ``policy``'s later answers may depend on earlier ones: it overrides
    ``update_after_confirmation`` (``AskOncePolicy`` does; ``AlwaysAskPolicy`` and ``NeverAskPolicy``
    do not)."""
    method = getattr(type(policy), "update_after_confirmation", None)
    return method is not None and method is not ConfirmationPolicy.update_after_confirmation


class DurableConfirmationStrategy:
    """Ask a person through the run's Signal/Update/Query handlers and wait durably.

    :param confirmation_policy: Decides whether a call needs asking at all.
    :param timeout: How long to wait for a decision (days are fine: it is a durable timer).
    :param on_timeout: ``"reject"`` (default: the model is told no one answered in time) or
        ``"confirm"`` (the call runs as requested).
    :param reject_template: Rejection text; ``{tool_name}`` placeholder.
    :param modify_template: Text of the user message explaining a modification;
        ``{tool_name}`` and ``{final_tool_params}`` placeholders.
    :param user_feedback_template: Appended when the person gave feedback; ``{feedback}``.
    :param notify_url: Removed: passing it is a ``ValueError`` that points to ``notifier``.
    :param notifier: Optional :class:`~hooks.human_in_the_loop.notifiers.WebhookNotifier`: signed
        ``approval_requested``/``escalated``/``decided``/``expired`` events with one-time links
        (delivered by an activity with retries; a failed notification never loses the request).
    :param escalation: :class:`~hooks.human_in_the_loop.escalation.Escalation` steps, as many as
        wanted: at each ``after`` that passes undecided, the call's approvers become the step's.
    :param search_attribute: Bool search attribute to upsert while the run waits (``agent pending``
        lists runs with it set); ``None`` for a server without it.
    :param max_new_tool_params_bytes: A modify whose ``new_tool_params`` take more UTF-8 bytes as
        compact JSON is refused (the Update with the size and the limit; the Signal is ignored).
    :param max_feedback_chars: A decision whose ``feedback`` has more characters is refused.
    :param approvers: Who may decide this strategy's calls: a decision's ``approver`` must equal
        one of these names (case and all), or it is refused (the Update with the reason, the Signal
        is ignored with a log line). None (default): anyone may. ``ConfirmationHook(approvers=...)``
        replaces the list for chosen tools.
    :raises ValueError: For a non-positive ``timeout`` or limit, an unknown ``on_timeout``, a
        template that is not a string or names a placeholder other than its own (see
        :func:`check_template`; a template without its placeholders is fine, as in Haystack), or
        ``approvers`` that is not a non-empty list of non-blank names, ``notify_url``, or an
        ``escalation`` step at or after ``timeout`` (see :func:`~hooks.human_in_the_loop.escalation.escalation_steps`).
    """

    def __init__(
        self,
        confirmation_policy: ConfirmationPolicy,
        timeout: timedelta = timedelta(days=7),
        on_timeout: Literal["reject", "confirm"] = "reject",
        reject_template: str = REJECTION_FEEDBACK_TEMPLATE,
        modify_template: str = MODIFICATION_FEEDBACK_TEMPLATE,
        user_feedback_template: str = USER_FEEDBACK_TEMPLATE,
        notify_url: str | None = None,
        search_attribute: str | None = WAITING_FOR_APPROVAL.name,
        max_new_tool_params_bytes: int = MAX_NEW_TOOL_PARAMS_BYTES,
        max_feedback_chars: int = MAX_FEEDBACK_CHARS,
        approvers: list[str] | None = None,
        notifier: WebhookNotifier | None = None,
        escalation: list[Escalation] | None = None,
    ) -> None:
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
            timeout = timedelta(seconds=timeout)
        if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
            raise ValueError(f"timeout must be a positive timedelta, got {timeout!r}.")
        if on_timeout not in ("reject", "confirm"):
            raise ValueError(f"on_timeout must be 'reject' or 'confirm', got {on_timeout!r}.")
        check_template("reject_template", reject_template, ("tool_name",))
        check_template("modify_template", modify_template, ("tool_name", "final_tool_params"))
        check_template("user_feedback_template", user_feedback_template, ("feedback",))
        if notify_url is not None:
            raise ValueError(
                "notify_url was removed: pass notifier=WebhookNotifier(url, secret_env=...) instead "
                "(signed events with one-time approve/reject links; docs/approvals.md)."
            )
        if notifier is not None and not isinstance(notifier, WebhookNotifier):
            raise ValueError(f"notifier must be a WebhookNotifier, got {notifier!r}.")
        self.escalation = escalation_steps(escalation, timeout)
        self.notifier = notifier
        self.limits = DecisionLimits(max_new_tool_params_bytes, max_feedback_chars)
        self.approvers = approver_list(approvers) if approvers is not None else None
        self.confirmation_policy = confirmation_policy
        self.timeout = timeout
        self.on_timeout = on_timeout
        self.reject_template = reject_template
        self.modify_template = modify_template
        self.user_feedback_template = user_feedback_template
        self.search_attribute = search_attribute
        # Per tool, the ids of this strategy's calls being decided, in call order (learning policies only).
        self._in_tool_order: dict[str, list[str]] = {}

    @property
    def max_new_tool_params_bytes(self) -> int:
        """Limit on a modify's ``new_tool_params`` (UTF-8 bytes of compact JSON)."""
        return self.limits.max_new_tool_params_bytes

    @property
    def max_feedback_chars(self) -> int:
        """Limit on a decision's ``feedback`` (characters)."""
        return self.limits.max_feedback_chars

    async def run_async(
        self, *, approvers: list[str] | None = None, **call: Unpack[ConfirmationCall]
    ) -> ToolExecutionDecision:
        """Ask (if the policy says so), wait for a decision or the timeout, and apply it.

        :param approvers: Who may decide this call, instead of the strategy's ``approvers``
            (``ConfirmationHook`` passes its per-tool list); None: the strategy's.
        :param call: The call (:class:`~hooks.human_in_the_loop.protocol.ConfirmationCall`); its
            ``tool_call_id`` is required when the policy asks (the hook always gives one).
        :raises TypeError: For a missing or unknown keyword in ``call``.
        :raises ValueError: Without a ``tool_call_id`` when the policy asks, or for ``approvers``
            that is not a non-empty list of non-blank names.
        :raises RuntimeError: Outside an ``AgentWorkflow`` run, when the policy asks.
        """
        call = confirmation_call(call, f"{type(self).__name__}.run_async")
        allowed = approver_list(approvers, "approvers for this call") if approvers is not None else self.approvers
        tool_name, tool_call_id = call["tool_name"], call.get("tool_call_id")
        if not tool_call_id or not policy_learns(self.confirmation_policy):
            return await self._ask_and_wait(call, allowed)
        # A learning policy sees this tool's calls in call order (see the module docstring).
        queue = self._in_tool_order.setdefault(tool_name, [])
        queue.append(tool_call_id)
        try:
            if queue[0] != tool_call_id and workflow.in_workflow():
                await workflow.wait_condition(lambda: queue[0] == tool_call_id)
            return await self._ask_and_wait(call, allowed)
        finally:
            queue.remove(tool_call_id)
            if not queue:
                del self._in_tool_order[tool_name]

    async def _ask_and_wait(self, call: ConfirmationCall, approvers: list[str] | None) -> ToolExecutionDecision:
        """Ask the policy; if it says ask, publish the request (with who may decide it), wait for
        its decision and apply it."""
        tool_name, tool_description, tool_params = call["tool_name"], call["tool_description"], call["tool_params"]
        tool_call_id = call.get("tool_call_id")
        if not self.confirmation_policy.should_ask(tool_name, tool_description, tool_params):
            return self._unasked(tool_name, tool_call_id, tool_params)
        if not tool_call_id:
            raise ValueError("DurableConfirmationStrategy needs a tool_call_id to bind the decision to.")
        if not workflow.in_workflow():
            raise RuntimeError(
                f"{type(self).__name__} waits for a decision inside an AgentWorkflow run; for a local, "
                "non-durable run use BlockingConfirmationStrategy and ConfirmationHook.run(state)."
            )

        run = current_run()
        spec = run.agent.tool_spec(tool_name)
        registry = ConfirmationRegistry.of_current_run(self.search_attribute)
        now = workflow.now()
        request = PendingConfirmation(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            tool_params=tool_params,
            tool_description=tool_description,
            requested_at=now,
            expires_at=now + self.timeout,
            arguments_sha256=arguments_sha256(tool_params),
            on_timeout=self.on_timeout,
            approvers=approvers,
            # Not the run id alone: run ids are reused (Agent.send, rewind), executions are not.
            request_id=f"{workflow.info().run_id}/{workflow.info().get_current_history_length()}",
            **self._request_extras(),
        )
        registry.publish(request, schema=spec.parameters if spec is not None else None, limits=self.limits)
        run.publish_event(
            "approval_requested", {"tool_call_id": tool_call_id, "tool_name": tool_name, "arguments": tool_params}
        )
        notifying = [self._notify("approval_requested", request, within=self.timeout)]

        def escalated(request: PendingConfirmation, number: int) -> None:
            notifying.append(self._notify("approval_escalated", request, within=self.timeout, sequence=number))
            run.publish_event(
                "approval_escalated",
                {"tool_call_id": tool_call_id, "tool_name": tool_name, "approvers": list(request.approvers or [])},
            )

        try:
            timed_out = not await wait_for_decision(registry, request, self.timeout, self.escalation, escalated)
            if timed_out:
                feedback = TIMEOUT_FEEDBACK_TEMPLATE.format(timeout=describe_timedelta(self.timeout))
                decision, record = registry.time_out(tool_call_id, self.on_timeout, feedback)
            else:
                decision, record = registry.decision(tool_call_id)  # type: ignore[misc]
        finally:
            for task in notifying:
                if task is not None and not task.done():
                    task.cancel()
        registry.close(tool_call_id)
        self._notify("approval_expired" if timed_out else "approval_decided", request, record=record)
        run.publish_event(
            "decision",
            {
                "tool_call_id": tool_call_id,
                "tool_name": tool_name,
                "action": decision.action,
                "approver": record.approver,
                "feedback": decision.feedback,
                "via": record.via,
            },
        )

        result = ConfirmationUIResult(
            action=decision.action, feedback=decision.feedback, new_tool_params=decision.new_tool_params
        )
        if not timed_out:
            self.confirmation_policy.update_after_confirmation(tool_name, tool_description, tool_params, result)
        ted = self._apply(tool_name, tool_call_id, tool_params, result)
        return dataclasses.replace(ted, record=record.model_dump(mode="json"))

    def _notify(self, type: ApprovalEventType, request: PendingConfirmation, **options: Any) -> Any:
        """Start sending ``type`` through the notifier (None without one)."""
        if self.notifier is None:
            return None
        return ApprovalOutbox.of_current_run().send(self.notifier, type, request, **options)

    def _request_extras(self) -> dict[str, Any]:
        """Further fields of each :class:`PendingConfirmation` this strategy publishes (none here)."""
        return {}

    @staticmethod
    def _unasked(tool_name: str, tool_call_id: str | None, tool_params: dict[str, Any]) -> ToolExecutionDecision:
        """The decision for a call the policy lets run without asking."""
        return ToolExecutionDecision(
            tool_name=tool_name, execute=True, tool_call_id=tool_call_id, final_tool_params=tool_params
        )

    def _apply(
        self, tool_name: str, tool_call_id: str | None, tool_params: dict[str, Any], result: ConfirmationUIResult
    ) -> ToolExecutionDecision:
        """Haystack's rules: reject -> not run, with the rejection (and feedback) text; modify -> run
        with the new parameters, with an explanation; confirm -> run as requested."""
        if result.action == "reject":
            text = self.reject_template.format(tool_name=tool_name)
            if result.feedback:
                text += " " + self.user_feedback_template.format(feedback=result.feedback)
            return ToolExecutionDecision(tool_name=tool_name, execute=False, tool_call_id=tool_call_id, feedback=text)
        if result.action == "modify" and result.new_tool_params:
            final = dict(result.new_tool_params)
            text = modification_feedback(self.modify_template, tool_name, final)
            if result.feedback:
                text += " " + self.user_feedback_template.format(feedback=result.feedback)
            return ToolExecutionDecision(
                tool_name=tool_name, execute=True, tool_call_id=tool_call_id, feedback=text, final_tool_params=final
            )
        return ToolExecutionDecision(
            tool_name=tool_name, execute=True, tool_call_id=tool_call_id, final_tool_params=tool_params
        )

    def search_attributes(self) -> dict[str, str]:
        """The Bool attribute this strategy sets while a run waits (none when ``search_attribute=None``)."""
        return {self.search_attribute: "Bool"} if self.search_attribute else {}

    # -- memory across continue-as-new, serialisation ----------------------------------------

    def snapshot(self) -> Any:
        """The policy's memory (JSON-able)."""
        return self.confirmation_policy.snapshot()

    def restore(self, data: Any) -> None:
        """Give the policy back its memory."""
        self.confirmation_policy.restore(data)

    def to_dict(self) -> dict[str, Any]:
        """Serialise (the timeout as seconds, the policy by reference)."""
        return default_to_dict(
            self,
            confirmation_policy=object_to_dict(self.confirmation_policy),
            timeout=self.timeout.total_seconds(),
            on_timeout=self.on_timeout,
            reject_template=self.reject_template,
            modify_template=self.modify_template,
            user_feedback_template=self.user_feedback_template,
            notifier=object_to_dict(self.notifier) if self.notifier is not None else None,
            escalation=[step.to_dict() for step in self.escalation] or None,
            search_attribute=self.search_attribute,
            max_new_tool_params_bytes=self.max_new_tool_params_bytes,
            max_feedback_chars=self.max_feedback_chars,
            approvers=list(self.approvers) if self.approvers is not None else None,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DurableConfirmationStrategy:
        """Rebuild from :meth:`to_dict`'s output."""
        return cls(**cls._init_parameters(dict(data.get("init_parameters", {}))))

    @classmethod
    def _init_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        """``__init__``'s keyword arguments from serialised ``init_parameters``."""
        params["confirmation_policy"] = object_from_dict(params["confirmation_policy"], POLICY_SLOT)
        if "timeout" in params:
            params["timeout"] = timedelta(seconds=params["timeout"])
        if params.get("notifier") is not None:
            params["notifier"] = object_from_dict(params["notifier"], NOTIFIER_SLOT)
        if params.get("escalation") is not None:
            params["escalation"] = [Escalation.from_dict(step) for step in params["escalation"]]
        return params

    def __repr__(self) -> str:
        who = f", approvers={self.approvers!r}" if self.approvers is not None else ""
        return (
            f"DurableConfirmationStrategy({self.confirmation_policy!r}, timeout={self.timeout!r}, "
            f"on_timeout={self.on_timeout!r}{who})"
        )


#: The serialised defaults of :class:`DurableConfirmationStrategy`'s options that Haystack's
#: ``BlockingConfirmationStrategy`` does not have (left out of its ``to_dict`` when unchanged).
_DURABLE_DEFAULTS: dict[str, Any] = {
    "timeout": timedelta(days=7).total_seconds(),
    "on_timeout": "reject",
    "notifier": None,
    "escalation": None,
    "search_attribute": WAITING_FOR_APPROVAL.name,
    "max_new_tool_params_bytes": MAX_NEW_TOOL_PARAMS_BYTES,
    "max_feedback_chars": MAX_FEEDBACK_CHARS,
    "approvers": None,
}


class BlockingConfirmationStrategy(DurableConfirmationStrategy):
    """Haystack's ``BlockingConfirmationStrategy(*, confirmation_policy, confirmation_ui)``, durable.

    - **In an ``AgentWorkflow`` run** (``run_async``, which ``ConfirmationHook`` awaits) it waits
      exactly as :class:`DurableConfirmationStrategy` does: nothing blocks, the run survives
      restarts and may wait for days, and a decision arrives by Update or Signal. Each request it
      publishes names ``confirmation_ui`` (``PendingConfirmation.confirmation_ui``, its
      ``to_dict()``), and ``agent approve --interactive`` asks the person through that UI.
    - **Outside a workflow** (a local, non-durable run: ``ConfirmationHook.run(state)`` in your own
      process) it asks through ``confirmation_ui`` directly and blocks until answered, as
      Haystack's does.

    Every parameter is keyword-only, as in Haystack.

    :param confirmation_policy: Decides whether a call needs asking at all.
    :param confirmation_ui: How the person is asked, e.g. ``SimpleConsoleUI()`` or
        ``RichConsoleUI()``; it must be serialisable by import path (a module-level class).
    :param options: :class:`DurableConfirmationStrategy`'s other parameters (``timeout``, 7 days by
        default, where Haystack's waits forever; ``on_timeout``; the three templates, as in
        Haystack; ``notifier``; ``escalation``; ``search_attribute``; the decision limits; ``approvers``, who
        may decide in a durable run).
    :raises ValueError: As :class:`DurableConfirmationStrategy`.
    """

    def __init__(
        self, *, confirmation_policy: ConfirmationPolicy, confirmation_ui: ConfirmationUI, **options: Any
    ) -> None:
        super().__init__(confirmation_policy, **options)
        # Not checked here, as in Haystack: a local run fails when it asks through a UI without
        # get_user_confirmation; `agent approve --interactive` falls back to SimpleConsoleUI.
        self.confirmation_ui = confirmation_ui

    def run(self, **call: Unpack[ConfirmationCall]) -> ToolExecutionDecision:
        """Ask through ``confirmation_ui`` in this process (a local run) and apply the answer.

        :param call: The call (:class:`~hooks.human_in_the_loop.protocol.ConfirmationCall`).
        :raises TypeError: For a missing or unknown keyword in ``call``.
        :raises RuntimeError: Inside a workflow, where a prompt would block the worker: there the
            strategy waits durably through :meth:`run_async`.
        """
        if workflow.in_workflow():
            raise RuntimeError(
                "BlockingConfirmationStrategy.run() prompts in this process, which a workflow must never do; "
                "inside an AgentWorkflow run the strategy waits durably: await run_async(...) "
                "(ConfirmationHook.run_async does)."
            )
        call = confirmation_call(call, "BlockingConfirmationStrategy.run")
        tool_name, tool_description, tool_params = call["tool_name"], call["tool_description"], call["tool_params"]
        tool_call_id = call.get("tool_call_id")
        if not self.confirmation_policy.should_ask(tool_name, tool_description, tool_params):
            return self._unasked(tool_name, tool_call_id, tool_params)
        answer = self.confirmation_ui.get_user_confirmation(tool_name, tool_description, tool_params)
        result = as_ui_result(answer)
        self.confirmation_policy.update_after_confirmation(tool_name, tool_description, tool_params, result)
        return self._apply(tool_name, tool_call_id, tool_params, result)

    async def run_async(
        self, *, approvers: list[str] | None = None, **call: Unpack[ConfirmationCall]
    ) -> ToolExecutionDecision:
        """In a workflow: wait durably (:meth:`DurableConfirmationStrategy.run_async`, where
        ``approvers`` replaces the strategy's list for this call); elsewhere: :meth:`run` (a local
        run asks whoever is at the console, so no approver is checked)."""
        if workflow.in_workflow():
            return await super().run_async(approvers=approvers, **call)
        return self.run(**call)

    def _request_extras(self) -> dict[str, Any]:
        """Each request names the UI the approver's side should ask through."""
        return {"confirmation_ui": object_to_dict(self.confirmation_ui)}

    def to_dict(self) -> dict[str, Any]:
        """Serialise (the policy and the UI by reference) in Haystack's shape: its five keys, then
        only the durable options set to something other than their default, so with none set
        Haystack's ``BlockingConfirmationStrategy.from_dict`` reads the output."""
        data = super().to_dict()
        params = data["init_parameters"]
        haystack_keys = ("confirmation_policy", "reject_template", "modify_template", "user_feedback_template")
        data["init_parameters"] = {
            "confirmation_policy": params["confirmation_policy"],
            "confirmation_ui": object_to_dict(self.confirmation_ui),
            **{key: params[key] for key in haystack_keys[1:]},
            **{
                key: value
                for key, value in params.items()
                if key not in haystack_keys and value != _DURABLE_DEFAULTS.get(key)
            },
        }
        return data

    @classmethod
    def _init_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        params = super()._init_parameters(params)
        params["confirmation_ui"] = object_from_dict(params["confirmation_ui"], UI_SLOT)
        return params

    def __repr__(self) -> str:
        return (
            f"BlockingConfirmationStrategy(confirmation_policy={self.confirmation_policy!r}, "
            f"confirmation_ui={self.confirmation_ui!r}, "
            f"timeout={self.timeout!r}, on_timeout={self.on_timeout!r}"
            + (f", approvers={self.approvers!r})" if self.approvers is not None else ")")
        )
