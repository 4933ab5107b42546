"""The README's agent: one tool, and a person confirms each call before it runs.

Serve it with ``agent dev --agent examples.quickstart:agent`` (the dev stack's worker then runs
``delete_file``) and start runs with the README's snippet. With no ``OPENAI_API_KEY``, ``agent
dev`` answers with its scripted model, which calls each offered tool once with the user's words
as the arguments and then summarises the results.
"""

from __future__ import annotations

from datetime import timedelta

from agent import Agent, tool
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy


@tool
def delete_file(path: str) -> str:
    """Delete the file at the given path."""
    # An example: it says what it would do instead of deleting anything.
    return f"Deleted {path}."


agent = Agent(
    model="gpt-4o-mini",
    tools=[delete_file],
    system_prompt="You tidy up servers.",
    hooks={
        "before_tool": [
            ConfirmationHook(
                {
                    "delete_file": DurableConfirmationStrategy(
                        confirmation_policy=AlwaysAskPolicy(), timeout=timedelta(days=3)
                    )
                }
            )
        ]
    },
)
