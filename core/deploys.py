"""Deploys (DESIGN.md "Deploys"): the names and payloads of the replay probe, which a worker of one
build runs to tell whether its code replays a run's history before ``agent deploy move`` pins the
run to that build.

A probe is a workflow pinned (by a versioning override at start) to the build being checked, so
its task and its one activity run on that build's workers, with that build's code: the answer
comes from the code the run would move to, not from whatever the operator has installed.
"""

from __future__ import annotations

from pydantic import BaseModel

#: Workflow type of a replay probe (``ReplayProbeInput`` -> ``ReplayProbeResult``).
REPLAY_PROBE_WORKFLOW = "AgentReplayProbe"
#: Activity: replay one run's history with this worker's code (``ReplayProbeInput`` -> ``ReplayProbeResult``).
REPLAY_HISTORY_ACTIVITY = "agent_replay_history"
#: Workflow id prefix of replay probes (``{prefix}{run id}/{probe id}``).
REPLAY_PROBE_ID_PREFIX = "agent-replay-probe/"


class ReplayProbeInput(BaseModel):
    """Which history to replay.

    :param run_id: The run id (workflow id).
    :param temporal_run_id: Temporal's run id of the execution to replay (its latest run).
    """

    run_id: str
    temporal_run_id: str


class ReplayProbeResult(BaseModel):
    """What the replay found.

    :param build_id: The build id of the worker that replayed (None: an unversioned worker).
    :param events: Events in the replayed history.
    :param mismatch: None when the history replayed; else the first mismatch in one line.
    """

    build_id: str | None = None
    events: int = 0
    mismatch: str | None = None
