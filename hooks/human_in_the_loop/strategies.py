"""``DurableConfirmationStrategy``: ask a person and wait for the answer in the workflow, for days.

Where Haystack's ``BlockingConfirmationStrategy`` blocks on a console prompt, this strategy
publishes a :class:`PendingConfirmation` on the run's desk (visible to the
``pending_confirmations`` query and the ``AgentWaitingForApproval`` search attribute), waits
with ``workflow.wait_condition`` for a decision delivered by the Signal ``tool_decision`` or
the Update ``submit_tool_decision``, and turns it into a ``ToolExecutionDecision`` with the
same templates and rules as Haystack. No process is held while it waits.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from core.serialization import default_to_dict, object_from_dict, object_to_dict
from core.wire import WAITING_FOR_APPROVAL
from hooks.context import current_run
from hooks.human_in_the_loop.dataclasses import (
    ApprovalNotification,
    ConfirmationUIResult,
    PendingConfirmation,
    ToolExecutionDecision,
    arguments_sha256,
)
from hooks.human_in_the_loop.desk import ConfirmationDesk
from hooks.human_in_the_loop.notifications import notify_approval_request
from hooks.human_in_the_loop.protocol import ConfirmationPolicy

REJECTION_FEEDBACK_TEMPLATE = "Tool execution for '{tool_name}' was rejected by the user."
MODIFICATION_FEEDBACK_TEMPLATE = (
    "The parameters for tool '{tool_name}' were updated by the user to:\n{final_tool_params}"
)
USER_FEEDBACK_TEMPLATE = "With user feedback: {feedback}"
TIMEOUT_FEEDBACK_TEMPLATE = "No one answered the confirmation request within {timeout}, so the call was not run."

NOTIFY_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(minutes=10)
)


def describe_timedelta(delta: timedelta) -> str:
    """``timedelta(days=3)`` -> ``"3 days"``; ``timedelta(hours=1, minutes=30)`` -> ``"1 hour 30 minutes"``."""
    seconds = int(delta.total_seconds())
    parts = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts) or f"{delta.total_seconds():g} seconds"


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
    :param notify_url: Optional webhook: the ``notify_approval_request`` activity POSTs each new
        request there (retried with backoff until the request is decided or expires; a failed
        notification never loses the request).
    :param search_attribute: Bool search attribute to upsert while the run waits (``agent pending``
        lists runs with it set); ``None`` for a server without it.
    :raises ValueError: For a non-positive ``timeout``, an unknown ``on_timeout``, or a template
        missing its placeholder.
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
    ) -> None:
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
            timeout = timedelta(seconds=timeout)
        if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
            raise ValueError(f"timeout must be a positive timedelta, got {timeout!r}.")
        if on_timeout not in ("reject", "confirm"):
            raise ValueError(f"on_timeout must be 'reject' or 'confirm', got {on_timeout!r}.")
        for name, template, needed in (
            ("reject_template", reject_template, ("{tool_name}",)),
            ("modify_template", modify_template, ("{tool_name}", "{final_tool_params}")),
            ("user_feedback_template", user_feedback_template, ("{feedback}",)),
        ):
            missing = [p for p in needed if p not in template]
            if missing:
                raise ValueError(f"{name} must contain {', '.join(missing)}: {template!r}.")
        if notify_url is not None and not notify_url.startswith(("http://", "https://")):
            raise ValueError(f"notify_url must be an http(s) URL, got {notify_url!r}.")
        self.confirmation_policy = confirmation_policy
        self.timeout = timeout
        self.on_timeout = on_timeout
        self.reject_template = reject_template
        self.modify_template = modify_template
        self.user_feedback_template = user_feedback_template
        self.notify_url = notify_url
        self.search_attribute = search_attribute

    async def run_async(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
    ) -> ToolExecutionDecision:
        """Ask (if the policy says so), wait for a decision or the timeout, and apply it.

        :param tool_name: The tool to be called.
        :param tool_description: Its description (shown in the request).
        :param tool_params: The arguments the model asked for.
        :param tool_call_id: The call's id; required (the hook always gives one).
        :param confirmation_strategy_context: The run's ``hook_context`` (unused here).
        :raises ValueError: Without a ``tool_call_id``, or outside an ``AgentWorkflow`` run.
        """
        if not self.confirmation_policy.should_ask(tool_name, tool_description, tool_params):
            return ToolExecutionDecision(
                tool_name=tool_name, execute=True, tool_call_id=tool_call_id, final_tool_params=tool_params
            )
        if not tool_call_id:
            raise ValueError("DurableConfirmationStrategy needs a tool_call_id to bind the decision to.")

        run = current_run()
        spec = run.agent.tool_spec(tool_name)
        desk = ConfirmationDesk.of_current_run(self.search_attribute)
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
        )
        desk.publish(request, schema=spec.parameters if spec is not None else None)
        notifying = self._start_notification(run.run_id, request)
        try:
            await workflow.wait_condition(
                lambda: desk.decision(tool_call_id) is not None,
                timeout=self.timeout,
                timeout_summary=f"confirmation of {tool_name} ({tool_call_id})",
            )
            decision, record = desk.decision(tool_call_id)  # type: ignore[misc]
            timed_out = False
        except TimeoutError:
            feedback = TIMEOUT_FEEDBACK_TEMPLATE.format(timeout=describe_timedelta(self.timeout))
            decision, record = desk.time_out(tool_call_id, self.on_timeout, feedback)
            timed_out = True
        finally:
            if notifying is not None and not notifying.done():
                notifying.cancel()
        desk.close(tool_call_id)

        result = ConfirmationUIResult(
            action=decision.action, feedback=decision.feedback, new_tool_params=decision.new_tool_params
        )
        if not timed_out:
            self.confirmation_policy.update_after_confirmation(tool_name, tool_description, tool_params, result)
        ted = self._apply(tool_name, tool_call_id, tool_params, result)
        return ted.model_copy(update={"record": record.model_dump(mode="json")})

    def _apply(
        self, tool_name: str, tool_call_id: str, tool_params: dict[str, Any], result: ConfirmationUIResult
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
            text = self.modify_template.format(tool_name=tool_name, final_tool_params=final)
            if result.feedback:
                text += " " + self.user_feedback_template.format(feedback=result.feedback)
            return ToolExecutionDecision(
                tool_name=tool_name, execute=True, tool_call_id=tool_call_id, feedback=text, final_tool_params=final
            )
        return ToolExecutionDecision(
            tool_name=tool_name, execute=True, tool_call_id=tool_call_id, final_tool_params=tool_params
        )

    def _start_notification(self, run_id: str, request: PendingConfirmation) -> asyncio.Task | None:
        if self.notify_url is None:
            return None
        notification = ApprovalNotification(url=self.notify_url, run_id=run_id, request=request)

        async def notify() -> None:
            try:
                await workflow.execute_activity(
                    notify_approval_request,
                    notification,
                    start_to_close_timeout=timedelta(seconds=30),
                    schedule_to_close_timeout=self.timeout,
                    retry_policy=NOTIFY_RETRY_POLICY,
                    summary=f"notify: {request.tool_name} awaits confirmation",
                )
            except ActivityError as err:  # the request stays pending; only the notification is lost
                workflow.logger.warning("Approval notification for %s failed: %s", request.tool_call_id, err)

        return asyncio.create_task(notify())

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
            notify_url=self.notify_url,
            search_attribute=self.search_attribute,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DurableConfirmationStrategy:
        """Rebuild from :meth:`to_dict`'s output."""
        params = dict(data.get("init_parameters", {}))
        params["confirmation_policy"] = object_from_dict(params["confirmation_policy"])
        if "timeout" in params:
            params["timeout"] = timedelta(seconds=params["timeout"])
        return cls(**params)

    def __repr__(self) -> str:
        return (
            f"DurableConfirmationStrategy({self.confirmation_policy!r}, timeout={self.timeout!r}, "
            f"on_timeout={self.on_timeout!r})"
        )
