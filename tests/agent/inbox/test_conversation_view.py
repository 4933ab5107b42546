"""What the conversation page shows of a run that continued as new (no server: the committed
history's input)."""

from __future__ import annotations

import pytest

from agent.conversations.inbox_pages import first_messages
from tests.agent.test_run_history_conversations import decoded

pytestmark = pytest.mark.unit


async def test_a_continued_session_shows_the_conversation_it_carried():
    first, last = await decoded("session_continue_as_new_first"), await decoded("session_continue_as_new_last")
    started = first_messages(first[0].run_input)
    carried = first_messages(last[0].run_input)
    assert [(s.role, s.text) for s in started] == [("user", "go")]
    # The last run starts from turns 1-7 of the first: each message and its answer.
    expected = [("user", "go"), ("assistant", "answer 1")]
    for n in range(2, 8):
        expected += [("user", f"q{n}"), ("assistant", f"answer {n}")]
    assert [(s.role, s.text) for s in carried] == expected
