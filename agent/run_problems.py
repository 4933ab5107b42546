"""What is wrong with a run and how to fix it, worded once for ``agent status``, ``agent watch``
and the inbox's run page.

A workflow task that keeps failing does not fail the run: Temporal retries it until workers run
code that gets past the failure. :func:`failing_workflow_task` says so, with the attempt, the
last error, the fix, and, when the error is the sandbox refusing something or non-determinism,
what workflow code (a hook) uses instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.payloads import FailingWorkflowTask, RunHealth
from core.wire import CHAT_COMPLETION_ACTIVITY

#: What a hook that reads the clock or draws random numbers uses instead.
WORKFLOW_CODE_HINT = (
    "hooks are workflow code: use workflow.now() instead of datetime.now(), workflow.random() instead of random"
)

#: Failure kinds (the task failure's cause, application failure types) that mean workflow code
#: broke determinism or touched something the sandbox refuses.
_DETERMINISM_KINDS = frozenset(
    {
        "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR",
        "RestrictedWorkflowAccessError",
        "NondeterminismError",
    }
)
#: Texts of the same errors, for a failure whose kinds were not kept.
_DETERMINISM_TEXTS = ("from inside a workflow", "nondetermini", "tmprl1100")


def workflow_code_hint(error: str, kinds: Iterable[str] = ()) -> str | None:
    """:data:`WORKFLOW_CODE_HINT` when ``error`` is a sandbox restriction or non-determinism, else None.

    :param error: The failure's text.
    :param kinds: The failure's cause and application failure types, when known.
    """
    if _DETERMINISM_KINDS.intersection(kinds):
        return WORKFLOW_CODE_HINT
    lowered = error.lower()
    return WORKFLOW_CODE_HINT if any(text in lowered for text in _DETERMINISM_TEXTS) else None


def failing_workflow_task(
    attempt: int, error: str | None, task_queue: str, kinds: Iterable[str] = ()
) -> FailingWorkflowTask:
    """The failing workflow task as every view shows it.

    :param attempt: The pending workflow task's attempt (``describe()``).
    :param error: The last ``WorkflowTaskFailed`` event's failure, None when history has none.
    :param task_queue: The run's task queue.
    :param kinds: The failure's cause and application failure types.
    """
    text = error or "no failure message in the history"
    kinds = tuple(kinds)
    if "MissingPayloadKeyError" in kinds:  # core/codec.py: the code is fine, a key is missing
        fix = f"give the workers of task queue {task_queue} the key the error names (AGENT_PAYLOAD_KEYS)"
    else:
        fix = f"deploy fixed code to the workers of task queue {task_queue}"
    return FailingWorkflowTask(
        attempt=attempt,
        error=text,
        task_queue=task_queue,
        fix=f"{fix}; the run then resumes by itself",
        hint=workflow_code_hint(text, kinds),
    )


def failing_task_lines(run_id: str, task: FailingWorkflowTask) -> list[str]:
    """The failing task in lines: what fails (attempt, error), the fix and, when it applies, the hint."""
    lines = [
        f"run {run_id} is stuck: its workflow task keeps failing (attempt {task.attempt}): {task.error}",
        f"run {run_id}: to fix it, {task.fix}",
    ]
    if task.hint:
        lines.append(f"run {run_id}: hint: {task.hint}")
    return lines


def health_lines(run_id: str, health: RunHealth) -> list[str]:
    """One readable line per problem Temporal reports for the run (a failing workflow task takes
    its lines from :func:`failing_task_lines`)."""
    lines = []
    if health.failure:
        lines.append(f"run {run_id} {health.status.lower()}: {health.failure}")
    if health.failing_workflow_task is not None:
        lines.extend(failing_task_lines(run_id, health.failing_workflow_task))
    if CHAT_COMPLETION_ACTIVITY in health.waiting_activities:
        lines.append(
            f"run {run_id}: a model call is scheduled and waits to start: the model task queue's rate limit "
            "(AGENT_MODEL_CALLS_PER_SECOND) holds it, or no worker polls that queue (AGENT_MODEL_TASK_QUEUE)"
        )
    for retry in health.retrying_activities:
        lines.append(
            f"run {run_id}: {retry.activity_type} is being retried (attempt {retry.attempt}): {retry.last_error}"
        )
    return lines
