"""The replay probe (``core/deploys.py``): a workflow that runs one activity, the replay of a run's
history, on the workers of the build it is pinned to. Deterministic workflow code only."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from core.deploys import REPLAY_HISTORY_ACTIVITY, REPLAY_PROBE_WORKFLOW, ReplayProbeInput, ReplayProbeResult

#: How long one replay may take (a run's history is at most a few thousand events).
REPLAY_TIMEOUT = timedelta(minutes=2)


@workflow.defn(name=REPLAY_PROBE_WORKFLOW)  # pinned by its start's versioning override
class ReplayProbeWorkflow:
    """Replay a run's history on this build's workers; returns what the replay found."""

    @workflow.run
    async def run(self, request: ReplayProbeInput) -> ReplayProbeResult:
        return await workflow.execute_activity(
            REPLAY_HISTORY_ACTIVITY,
            request,
            result_type=ReplayProbeResult,
            start_to_close_timeout=REPLAY_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
