"""How a run's events fold into AG-UI events (agent.inbox.agui_events), without a server: ids per
turn and step, a retried model call, and what a re-attaching client is sent."""

from __future__ import annotations

from ag_ui.core import AssistantMessage, UserMessage

from agent.inbox.agui_events import AguiTranslator
from core.events import RunEvent


async def no_history(ids: set[str]) -> dict[str, str]:
    return {}


def ev(kind: str, turn: int = 1, step: int | None = 0, **data) -> RunEvent:
    return RunEvent(kind=kind, turn=turn, step=step, data=data)


async def fold(translator: AguiTranslator, events: list[RunEvent]) -> list:
    out = []
    for event in events:
        out += await translator.feed(event)
    return out


CONVERSATION = [
    ev("message_received", step=None, message_id="u1", text="hi"),
    ev("turn_started", step=None),
    ev("token", text="Hel", attempt=1),
    ev("token", text="lo.", attempt=1),
    ev("model_reply", text="Hello.", tool_calls=[]),
    ev("turn_ended", step=None),
    ev("message_received", turn=2, step=None, message_id="u2", text="again"),
    ev("turn_started", turn=2, step=None),
    ev("token", turn=2, text="Once ", attempt=1),
]


async def test_a_retried_model_call_ends_the_broken_text_and_writes_a_new_message():
    t = AguiTranslator("r", read_results=no_history)
    out = await fold(
        t,
        [
            ev("token", text="Brok", attempt=1),
            ev("model_retry", attempt=2),
            ev("token", text="Whole.", attempt=2),
            ev("token", text="late piece of attempt 1", attempt=1),
            ev("model_reply", text="Whole.", tool_calls=[]),
        ],
    )
    assert [(e.type.value, e.message_id, getattr(e, "delta", None)) for e in out] == [
        ("TEXT_MESSAGE_START", "r:1:0", None),
        ("TEXT_MESSAGE_CONTENT", "r:1:0", "Brok"),
        ("TEXT_MESSAGE_END", "r:1:0", None),
        ("TEXT_MESSAGE_START", "r:1:0#2", None),
        ("TEXT_MESSAGE_CONTENT", "r:1:0#2", "Whole."),
        ("TEXT_MESSAGE_END", "r:1:0#2", None),
    ]


async def test_a_client_holding_the_start_of_the_conversation_gets_the_rest_as_events():
    t = AguiTranslator("r", read_results=no_history)
    await fold(t, CONVERSATION)
    held = [
        UserMessage(id="u1", content="hi"),
        AssistantMessage(id="r:1:0", content="Hello."),
        UserMessage(id="u2", content="again"),
        AssistantMessage(id="r:2:0", content="On"),
    ]
    out = t.catch_up(held)
    assert [(e.type.value, getattr(e, "delta", None)) for e in out] == [
        ("TEXT_MESSAGE_START", None),
        ("TEXT_MESSAGE_CONTENT", "ce "),
    ]
    # and the message goes on live under the same id
    (more,) = await t.feed(ev("token", turn=2, text="more", attempt=1))
    assert more.message_id == "r:2:0" and more.delta == "more"


async def test_a_client_lacking_a_message_in_the_middle_gets_a_snapshot():
    t = AguiTranslator("r", read_results=no_history)
    await fold(t, CONVERSATION)
    out = t.catch_up([UserMessage(id="u1", content="hi"), UserMessage(id="u2", content="again")])
    assert out[0].type.value == "MESSAGES_SNAPSHOT"
    assert [(m.id, m.content) for m in out[0].messages] == [
        ("u1", "hi"),
        ("r:1:0", "Hello."),
        ("u2", "again"),
        ("r:2:0", "Once "),
    ]
    # the answer being written is opened again, so that it can go on
    assert [e.type.value for e in out[1:]] == ["TEXT_MESSAGE_START"]
