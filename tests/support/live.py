"""What the live tests (CLI and inbox) script the model with: an answer streamed slowly enough
that a subscriber sees its first words long before the model call ends."""

from __future__ import annotations

from typing import Any

#: The answer the slow model streams.
ANSWER = "The deploy of checkout finished: 3 of 3 replicas up, no errors in the last 10 minutes."


def slowly(text: str, **extra: Any) -> dict[str, Any]:
    """A script entry that streams ``text`` 4 characters a chunk, a chunk every 0.2 s (about 4.5 s
    for :data:`ANSWER`); ``extra`` adds keys (e.g. ``break_after``)."""
    return {"text": text, "chunk_chars": 4, "pace": 0.2, **extra}


async def parked_for_rewind(client: Any, task_queue: str, scripted: Any, model: str, run_id: str) -> Any:
    """A run whose step 0 asks for ``add`` and waits for approval; rewound to step 0, the model
    answers ``REWOUND_ANSWER`` instead (the scripted model's next reply). Returns its handle."""
    from agent import Agent, ChatMessage
    from tests import tools as t
    from tests.support.hitl_helpers import ask_all, call, calls

    scripted.script(model, [calls(call("add", id="a1", a=1, b=2)), {"text": REWOUND_ANSWER}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [ask_all()]})
    return await agent.start(client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=task_queue)


#: What the model answers in the run :func:`parked_for_rewind` starts, once rewound.
REWOUND_ANSWER = "NEW answer, after the rewind"
#: The reason those tests rewind with.
REWIND_REASON = "the question was misread"
