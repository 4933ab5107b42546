"""Human-in-the-loop's wire names: what a client, the CLI, the inbox and the workflow's handlers
must agree on (the run loop's own names are in ``core.wire``; the webhook activity's name is with
it in ``activities.py``). Changing one breaks running workflows and deployed clients.
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

#: Query: the tool calls waiting for a person (``list[PendingConfirmation]``).
PENDING_CONFIRMATIONS_QUERY = "pending_confirmations"
#: Signal: a fire-and-forget ``ToolDecision``; a bad one is logged and ignored.
TOOL_DECISION_SIGNAL = "tool_decision"
#: Update: a validated ``ToolDecision``; returns its ``DecisionRecord``.
SUBMIT_TOOL_DECISION_UPDATE = "submit_tool_decision"

#: Bool search attribute set while a run waits for a person (``agent pending`` lists them).
WAITING_FOR_APPROVAL = SearchAttributeKey.for_bool("AgentWaitingForApproval")
#: Visibility query of the runs that wait for a person.
WAITING_RUNS_QUERY = f"{WAITING_FOR_APPROVAL.name} = true AND ExecutionStatus = 'Running'"
#: Memo key under which a run publishes its pending calls (a list of ``PendingSummary``).
PENDING_MEMO_KEY = "pending_confirmations"

#: Summary prefixes of a confirmation's durable timers (``agent watch`` reads them from history):
#: a fired confirmation timer is a timeout (``on_timeout`` applied, on behalf of no one), a fired
#: escalation timer an escalation.
CONFIRMATION_TIMER_PREFIX = "confirmation of "
ESCALATION_TIMER_PREFIX = "escalation of "

#: ``ApplicationError.type`` of a decision refused after the validator passed (two decisions
#: for the same call in one workflow task).
DECISION_REFUSED = "DecisionRefused"
