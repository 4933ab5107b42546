"""The bare floor: a hand-written Temporal agent loop that imports nothing of this project.

What a careful person writes by hand on temporalio alone: one model activity that POSTs the
message list (plain dicts) with httpx and reads the JSON, one tool activity that calls the
function, and a workflow that loops until the model answers text. Temporal's default data
converter, no hooks, no State, no stored conversation (the whole message list goes into each
model activity's input, so it pays with history instead of S3), no heartbeats.

The benchmarks run it on the same dev server and the same scripted model as our agent, in the same
worker process on its own task queue (:func:`bare_worker`), so the tables can split a step's cost
into the run loop's (``FloorWorkflow``: our activities, no agent logic) and the activities' own.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import httpx

#: The task queue suffix of the bare worker beside a bench worker's own queue.
QUEUE_SUFFIX = "-bare"
MODEL_ACTIVITY = "bare_model"
TOOL_ACTIVITY = "bare_tool"
#: The tool every bench offers, as the model sees it.
BIG_TEXT_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "big_text",
        "description": "Return ``size`` characters of text.",
        "parameters": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
    },
}


def big_text(size: int) -> str:
    """The bench tool: ``size`` characters of text (as bench.workloads.big_text)."""
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


TOOLS = {"big_text": big_text}


class BareActivities:
    """One httpx client for the worker's lifetime, as a hand-written worker keeps one.

    :param base_url: The OpenAI-compatible endpoint (``OPENAI_BASE_URL`` by default).
    """

    def __init__(self, base_url: str | None = None) -> None:
        self._base_url = (base_url or os.environ["OPENAI_BASE_URL"]).rstrip("/")
        self._http: httpx.AsyncClient | None = None

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """POST the whole message list; the reply's ``message`` dict."""
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=300)
        response = await self._http.post(
            f"{self._base_url}/chat/completions",
            json={"model": model, "messages": messages, "tools": tools},
            headers={"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', 'none')}"},
        )
        response.raise_for_status()
        return response.json()["choices"][0]["message"]

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Call the tool function."""
        return TOOLS[name](**arguments)


@workflow.defn(name="BareFloorWorkflow")
class BareFloorWorkflow:
    @workflow.run
    async def run(self, model: str, prompt: str) -> int:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        steps = 0
        while True:
            reply = await workflow.execute_activity(
                MODEL_ACTIVITY,
                args=[model, messages, [BIG_TEXT_SPEC]],
                start_to_close_timeout=timedelta(minutes=5),
                result_type=dict,
            )
            messages.append(reply)
            steps += 1
            if not reply.get("tool_calls"):
                return steps
            for call in reply["tool_calls"]:
                function = call["function"]
                result = await workflow.execute_activity(
                    TOOL_ACTIVITY,
                    args=[function["name"], json.loads(function["arguments"])],
                    start_to_close_timeout=timedelta(minutes=5),
                    result_type=str,
                )
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


async def bare_client(address: str) -> Client:
    """A client with Temporal's default data converter."""
    return await Client.connect(address)


def bare_worker(client: Client, task_queue: str) -> Worker:
    """The bare floor's worker: its workflow and two activities, the SDK's defaults otherwise."""
    activities = BareActivities()
    return Worker(
        client, task_queue=task_queue, workflows=[BareFloorWorkflow], activities=[activities.model, activities.tool]
    )


async def start_bare(client: Client, task_queue: str, run_id: str, model: str, prompt: str = "go") -> WorkflowHandle:
    """Start one bare run."""
    return await client.start_workflow(BareFloorWorkflow.run, args=[model, prompt], id=run_id, task_queue=task_queue)
