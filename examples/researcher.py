"""A lead agent that delegates to a researcher sub-agent (``Agent.as_tool``), whose risky tool
needs a person's approval.

Each ``research`` call runs ``researcher`` as a child run of the lead's run, with the run id
``{lead's run id}/{tool call id}``. The researcher may search freely, but publishing asks first:
its confirmation waits in the child run (``agent pending`` lists it with the lead as PARENT, the
inbox shows it under the lead), and approving it there lets the lead go on.

Serve it with ``agent dev --agent examples.researcher:lead`` (the worker then serves the
researcher's tools too) and start a run with
``agent run --agent examples.researcher:lead "What changed in the Q3 numbers?"``. With no
``OPENAI_API_KEY`` the scripted model answers: it calls each offered tool once with the user's
words, then summarises the results.
"""

from __future__ import annotations

from datetime import timedelta

from agent import Agent, tool
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy


@tool
def search_notes(query: str) -> str:
    """Search the team's research notes for a query."""
    # An example: a canned finding instead of a real search.
    return f"Notes on {query!r}: revenue up 4%, costs flat."


@tool
def publish_report(title: str, body: str) -> str:
    """Publish a report on the company wiki, where everyone can read it."""
    # An example: it says what it would do instead of publishing anything.
    return f"Published the report {title!r} ({len(body)} characters)."


researcher = Agent(
    model="gpt-4o-mini",
    tools=[search_notes, publish_report],
    system_prompt="You research one question in the notes and publish a short report on it.",
    hooks={
        "before_tool": [
            ConfirmationHook(
                {"publish_report": DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(days=3))}
            )
        ]
    },
    max_agent_steps=10,
)

lead = Agent(
    model="gpt-4o",
    tools=[researcher.as_tool("research", "Research one question in the team's notes and publish a report")],
    system_prompt="You answer questions by delegating the research.",
    max_agent_steps=10,
)
