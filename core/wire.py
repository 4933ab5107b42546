"""The run loop's wire contract: the names a client and a worker must agree on, defined once.

The workflow registers its query and activities under these names; clients, the CLI and the inbox
send and query by them. Each hook family keeps its own names in its folder
(``hooks.human_in_the_loop.wire``, ``hooks.<family>.activities``). Changing one breaks running
workflows and deployed clients (DESIGN.md "Public contract").
"""

from __future__ import annotations

#: Workflow type of an agent run; the workflow id is the run id.
WORKFLOW_TYPE = "AgentWorkflow"

#: Query: where the run is (``RunStatus``).
RUN_STATUS_QUERY = "run_status"

#: Activity: one model call (``ModelCallInput`` -> ``ModelCallOutput``).
CHAT_COMPLETION_ACTIVITY = "chat_completion"
#: Activity: one tool call (``ToolInvocationInput`` -> ``ToolInvocationOutput``).
INVOKE_TOOL_ACTIVITY = "invoke_tool"

#: Visibility query of every open run, for namespaces without the search attribute.
RUNNING_RUNS_QUERY = f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"

#: ``ApplicationError.type`` of model failures retrying cannot fix (HTTP 400/401/403/404/422).
NON_RETRYABLE_MODEL_ERROR = "ModelClientError"
#: ``ApplicationError.type`` of the failure that ends a run whose hook raised (non-retryable).
HOOK_ERROR = "HookError"
#: ``ApplicationError.type`` of the failure that ends a run whose model call failed for good.
MODEL_CALL_FAILED = "ModelCallFailed"
#: ``ApplicationError.type`` of the failure that ends a run whose agent spec the worker cannot rebuild.
AGENT_SPEC_ERROR = "AgentSpecError"
#: ``ApplicationError.type`` of a tool call whose tool the worker does not serve (the run fails).
TOOL_NOT_SERVED = "ToolNotServed"

# -- conversations (DESIGN.md "Conversations") -------------------------------------------------

#: Update: a validated ``UserMessage`` into the run; returns its ``MessageReceipt``.
SEND_MESSAGE_UPDATE = "send_message"
#: Signal: a fire-and-forget ``UserMessage``; a refused one is logged and ignored.
USER_MESSAGE_SIGNAL = "user_message"
#: Update: end the run cleanly (``CancelRequest``); returns the ``RunStatus`` as the request left it.
CANCEL_RUN_UPDATE = "cancel_run"
#: Query: the ``TurnResult`` of a finished turn (``int`` turn number), or None while it runs.
TURN_RESULT_QUERY = "turn_result"
#: Bool search attribute set while a session waits for the user's next message.
WAITING_FOR_USER_ATTRIBUTE = "AgentWaitingForUser"
#: Visibility query of the sessions that wait for a user.
WAITING_FOR_USER_QUERY = f"{WAITING_FOR_USER_ATTRIBUTE} = true AND ExecutionStatus = 'Running'"
#: Memo key of a session waiting for its user (``{"turn", "since", "last_message"}``).
WAITING_FOR_USER_MEMO_KEY = "waiting_for_user"
#: ``ApplicationError.type`` of a message or cancel refused after its validator passed.
MESSAGE_REFUSED = "MessageRefused"
