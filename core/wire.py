"""The wire contract: every name a client and a worker must agree on, defined once.

Workflow code registers handlers and activities under these names; clients, the CLI and the
inbox send and query by them. Changing one breaks running workflows and deployed clients, so
each change needs a deprecation path (DESIGN.md "Public contract").
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

#: Workflow type of an agent run; the workflow id is the run id.
WORKFLOW_TYPE = "AgentWorkflow"

#: Query: where the run is (``RunStatus``).
RUN_STATUS_QUERY = "run_status"
#: Query: the tool calls waiting for a person (``list[PendingConfirmation]``).
PENDING_CONFIRMATIONS_QUERY = "pending_confirmations"
#: Signal: a fire-and-forget ``ToolDecision``; a bad one is logged and ignored.
TOOL_DECISION_SIGNAL = "tool_decision"
#: Update: a validated ``ToolDecision``; returns its ``DecisionRecord``.
SUBMIT_TOOL_DECISION_UPDATE = "submit_tool_decision"

#: Activity: one model call (``ModelCallInput`` -> ``ModelCallOutput``).
CHAT_COMPLETION_ACTIVITY = "chat_completion"
#: Activity: one tool call (``ToolInvocationInput`` -> ``ToolInvocationOutput``).
INVOKE_TOOL_ACTIVITY = "invoke_tool"
#: Activity: write one tool result to a ``ToolResultStore`` (returns its reference).
STORE_TOOL_RESULT_ACTIVITY = "store_tool_result"
#: Activity: POST a pending confirmation to a webhook.
NOTIFY_APPROVAL_REQUEST_ACTIVITY = "notify_approval_request"

#: Bool search attribute set while a run waits for a person (``agent pending`` lists them).
WAITING_FOR_APPROVAL = SearchAttributeKey.for_bool("AgentWaitingForApproval")
#: Visibility query of the runs that wait for a person.
WAITING_RUNS_QUERY = f"{WAITING_FOR_APPROVAL.name} = true AND ExecutionStatus = 'Running'"
#: Visibility query of every open run, for namespaces without the search attribute.
RUNNING_RUNS_QUERY = f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"
#: Memo key under which a run publishes its pending calls (a list of ``PendingSummary``).
PENDING_MEMO_KEY = "pending_confirmations"

#: ``ApplicationError.type`` of model failures retrying cannot fix (HTTP 400/401/403/404/422).
NON_RETRYABLE_MODEL_ERROR = "ModelClientError"
#: ``ApplicationError.type`` of store failures retrying cannot fix (bad key, another run's reference).
NON_RETRYABLE_STORE_ERROR = "ToolResultStoreRefused"
#: ``ApplicationError.type`` of the failure that ends a run whose hook raised (non-retryable).
HOOK_ERROR = "HookError"
#: ``ApplicationError.type`` of the failure that ends a run whose model call failed for good.
MODEL_CALL_FAILED = "ModelCallFailed"
#: ``ApplicationError.type`` of the failure that ends a run whose agent spec the worker cannot rebuild.
AGENT_SPEC_ERROR = "AgentSpecError"
#: ``ApplicationError.type`` of a decision refused after the validator passed (two decisions
#: for the same call in one workflow task).
DECISION_REFUSED = "DecisionRefused"
