"""Agents and scripts for the sub-agent tests (``Agent.as_tool``): a lead whose step calls two
sub-agents at once, one of which asks a person before its tool runs."""

from __future__ import annotations

from agent import Agent
from agent.approvals.decisions import UnknownRunError
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests import tools as t
from tests.support.hitl_helpers import call, calls
from tests.support.polling import eventually


def team(model: str, parent_hooks: dict | None = None) -> tuple[Agent, Agent, Agent]:
    """``(lead, researcher, summarizer)``: the researcher's ``add`` needs approval, the summarizer's
    ``echo`` does not; each agent has its own model name (``model``, ``model-r``, ``model-s``)."""
    researcher = Agent(
        model=f"{model}-r",
        tools=[t.add],
        hooks={"before_tool": [ConfirmationHook({"add": DurableConfirmationStrategy(AlwaysAskPolicy())})]},
    )
    summarizer = Agent(model=f"{model}-s", tools=[t.echo])
    lead = Agent(
        model=model,
        tools=[
            researcher.as_tool("research", "Research one question"),
            summarizer.as_tool("summarize", "Summarize a text"),
        ],
        hooks=parent_hooks or {},
    )
    return lead, researcher, summarizer


def script_team(scripted, model: str, lead_answer: str = "Both are done.") -> None:
    """The lead calls both sub-agents in one step (ids ``r1`` and ``s1``), then answers."""
    scripted.script(
        model,
        [
            calls(call("research", id="r1", input="what is 2+3?"), call("summarize", id="s1", input="a long text")),
            {"text": lead_answer},
        ],
    )
    scripted.script(f"{model}-r", [calls(call("add", id="a1", a=2, b=3)), {"text": "2+3 is 5."}])
    scripted.script(f"{model}-s", [calls(call("echo", id="e1", text="short")), {"text": "Summary: short."}])


async def wait_child_pending(handle, timeout: float = 30.0):
    """Query a child run until it asks for a confirmation (it may not have started yet); returns them."""
    return await eventually(
        handle.pending_confirmations,
        bool,
        timeout=timeout,
        ignoring=(UnknownRunError,),
        message=f"the child {handle.run_id} never asked for a confirmation",
    )
