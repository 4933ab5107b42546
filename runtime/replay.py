"""Replaying runs' histories against the code installed here: the replayer ``agent replay-check``
uses, the one-line form of a replay failure, and the replay probe's activity (``core/deploys.py``),
which a worker of one build runs for ``agent deploy move``."""

from __future__ import annotations

import re

from temporalio import activity
from temporalio.runtime import Runtime, TelemetryConfig
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from core.deploys import REPLAY_HISTORY_ACTIVITY, ReplayProbeInput, ReplayProbeResult
from runtime.plugin import AgentPlugin
from workflows.agent_workflow import AgentWorkflow


def first_mismatch(failure: BaseException) -> str:
    """The replay failure in one line: the message core puts inside the activation failure
    (``[TMPRL1100] Nondeterminism error: Timer machine does not handle this event: ...``) as
    ``non-determinism [TMPRL1100]: Timer machine ...``; any other failure as ``Type: message``."""
    text = str(failure)
    found = re.search(r'message: "(.*?)"(?:, source:|\s*\})', text, re.S)
    inner = found.group(1).replace('\\"', '"') if found else text
    code = re.match(r"\[(TMPRL\d+)\]\s*", inner)
    if code:
        inner = inner[code.end() :]
    inner = re.sub(r"^Nondeterminism error:\s*", "", inner, flags=re.I)
    nondeterminism = isinstance(failure, NondeterminismError) or "nondetermin" in text.lower()
    kind = "non-determinism" if nondeterminism else type(failure).__name__
    return f"{kind}{f' [{code.group(1)}]' if code else ''}: {' '.join(inner.split())}"


def replayer() -> Replayer:
    """A replayer with the project's plugin: the data converter, external storage, sandbox and
    interceptors a worker of this installation uses. Its own runtime logs nothing: core would print
    each mismatch as a warning on stdout, and the callers report them."""
    return Replayer(
        workflows=[AgentWorkflow], plugins=[AgentPlugin()], runtime=Runtime(telemetry=TelemetryConfig(logging=None))
    )


class ReplayProbeActivities:
    """The replay probe's activity, on a worker of build ``build_id`` (None: unversioned).

    :param build_id: Reported back, so the caller sees which build answered.
    """

    def __init__(self, build_id: str | None) -> None:
        self.build_id = build_id

    @activity.defn(name=REPLAY_HISTORY_ACTIVITY)
    async def replay_history(self, request: ReplayProbeInput) -> ReplayProbeResult:
        """Fetch the run's history (through this worker's client) and replay it with this worker's code."""
        handle = activity.client().get_workflow_handle(request.run_id, run_id=request.temporal_run_id)
        history = await handle.fetch_history()
        result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
        failure = result.replay_failure
        return ReplayProbeResult(
            build_id=self.build_id,
            events=len(history.events),
            mismatch=None if failure is None else first_mismatch(failure),
        )
