"""Configuration from the environment, with the ecosystem's own variable names."""

from __future__ import annotations

import os
from datetime import timedelta

from pydantic import BaseModel

DEFAULT_TASK_QUEUE = "agent"
#: A run's workflow task timeout. A worker killed in the middle of a workflow task holds the run
#: this long before another worker takes the task over (Temporal's default is 10 s). It must stay
#: above the longest workflow task: a replay of a run's history after eviction (a run continues
#: as new at about 4,000 events) takes well under a second here.
DEFAULT_WORKFLOW_TASK_TIMEOUT = timedelta(seconds=4)


class Settings(BaseModel):
    """Where to find Temporal and which queue to use.

    Read with :meth:`from_env`: ``TEMPORAL_ADDRESS`` (default ``localhost:7233``),
    ``TEMPORAL_NAMESPACE`` (default ``default``), ``AGENT_TASK_QUEUE`` (default ``agent``).
    The model endpoint (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``) and S3 (boto3's own
    ``AWS_*`` names, ``TOOL_RESULTS_BUCKET``) are read where they are used.
    """

    temporal_address: str = "localhost:7233"
    temporal_namespace: str = "default"
    task_queue: str = DEFAULT_TASK_QUEUE

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            temporal_address=os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"),
            temporal_namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
            task_queue=os.environ.get("AGENT_TASK_QUEUE", DEFAULT_TASK_QUEUE),
        )
