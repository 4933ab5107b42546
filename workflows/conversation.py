"""A run's conversation with people: the inbox of messages sent into it, their receipts, the
session's turns, and what the run publishes while it waits for the user.

Workflow code (deterministic): message ids come from ``workflow.uuid4()``, time from
``workflow.now()``. ``AgentWorkflow`` owns one :class:`Conversation` and calls it from its
``send_message``/``user_message`` handlers and at each step boundary (DESIGN.md "Conversations").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from core.messages import ChatMessage
    from core.payloads import (
        MAX_NAME_CHARS,
        MAX_USER_MESSAGE_CHARS,
        MessageReceipt,
        SessionSnapshot,
        TurnResult,
        UserMessage,
    )
    from core.wire import WAITING_FOR_USER_ATTRIBUTE, WAITING_FOR_USER_MEMO_KEY

#: How many receipts a run keeps for de-duplication (the oldest are forgotten first).
MAX_RECEIPTS = 1_000
#: How many finished turns a run keeps for the ``turn_result`` query.
MAX_TURN_RESULTS = 50
#: Characters of the last message a waiting session shows in its memo.
MEMO_PREVIEW_CHARS = 200

WAITING_FOR_USER = SearchAttributeKey.for_bool(WAITING_FOR_USER_ATTRIBUTE)


class MessageRefused(ValueError):
    """A message the run refuses (closed run, empty or too long text, sender not allowed)."""


class Conversation:
    """Inbox, receipts and turns of one run.

    :param participants: The agent's allowed senders (None: anyone).
    :param session: True when the run waits for the user after each turn (``wait_for_user``).
    :param snapshot: What the previous run of a continue-as-new carried.
    """

    def __init__(self, participants: list[str] | None, session: bool, snapshot: SessionSnapshot | None) -> None:
        self.participants = participants
        self.session = session
        snapshot = snapshot or SessionSnapshot()
        self.turn = snapshot.turn
        self.between_turns = snapshot.between_turns
        self.inbox: list[tuple[UserMessage, MessageReceipt]] = list(snapshot.inbox)
        self.receipts: OrderedDict[str, MessageReceipt] = OrderedDict(snapshot.receipts)
        self.turn_results: list[TurnResult] = list(snapshot.turn_results)
        self.message_count = snapshot.message_count
        #: The turn loop is running steps (a message now is delivered into this turn).
        self.in_turn = False
        #: The current turn has begun (a message now goes to the next one unless it is still running).
        self.turn_begun = bool(self.turn_results and self.turn_results[-1].turn == self.turn)
        #: The run accepts no more messages (finished, or a run without a session past its turn).
        self.closed = False
        self.waiting_for_user = False
        self._advertised = False
        #: Called with each newly accepted message and its receipt (the run's live events).
        self.on_accept: Callable[[UserMessage, MessageReceipt], None] | None = None

    # -- accepting ---------------------------------------------------------------------------

    def check(self, message: UserMessage) -> MessageReceipt | None:
        """Refuse a bad message before anything is recorded; the earlier receipt of a repeated id.

        :returns: The first receipt when ``message_id`` was seen (nothing more is added), else None.
        :raises MessageRefused: The run is closed (finished, cancelled, or a run without
            ``wait_for_user`` that has finished its turn), the text is empty or over
            :data:`MAX_USER_MESSAGE_CHARS`, the sender or message id is over :data:`MAX_NAME_CHARS`,
            or the agent names ``participants`` and the sender is not one.
        """
        for what, value in (("sender", message.sender), ("message_id", message.message_id)):
            if value is not None and len(value) > MAX_NAME_CHARS:
                raise MessageRefused(f"The {what} is {len(value):,} characters; the limit is {MAX_NAME_CHARS:,}.")
        if message.message_id is not None and message.message_id in self.receipts:
            return self.receipts[message.message_id]
        if self.closed:
            raise MessageRefused(
                f"Run {workflow.info().workflow_id} accepts no more messages: it has finished its turn "
                "(start it with wait_for_user=... for a session that waits for the next message)."
            )
        if not message.text.strip():
            raise MessageRefused("The message text is empty.")
        if len(message.text) > MAX_USER_MESSAGE_CHARS:
            raise MessageRefused(
                f"The message is {len(message.text):,} characters; the limit is {MAX_USER_MESSAGE_CHARS:,}."
            )
        if self.participants is not None and message.sender not in self.participants:
            who = f"Sender '{message.sender}'" if message.sender else "A message without a sender"
            raise MessageRefused(f"{who} may not write to this run: participants are {', '.join(self.participants)}.")
        return None

    def accept(self, message: UserMessage) -> MessageReceipt:
        """Check, then queue the message for the next step boundary; returns its receipt.

        :raises MessageRefused: As :meth:`check`.
        """
        earlier = self.check(message)
        if earlier is not None:
            return earlier
        self.message_count += 1
        message_id = message.message_id or str(workflow.uuid4())
        receipt = MessageReceipt(message_id=message_id, turn=self.turn if self.in_turn else self.next_turn())
        self.inbox.append((message.model_copy(update={"message_id": message_id}), receipt))
        self.receipts[message_id] = receipt
        while len(self.receipts) > MAX_RECEIPTS:
            self.receipts.popitem(last=False)
        if self.on_accept is not None:
            self.on_accept(self.inbox[-1][0], receipt)
        return receipt

    def next_turn(self) -> int:
        """The turn a message accepted outside a running turn goes to: the next one once the current
        turn has begun (it may be in its ``after_run``), else the current one (before the first turn)."""
        return self.turn + 1 if self.turn_begun else self.turn

    # -- delivering --------------------------------------------------------------------------

    def take(self) -> list[ChatMessage]:
        """The queued messages as user messages (sender and id in ``meta``), in arrival order."""
        taken = [
            ChatMessage.from_user(
                message.text,
                meta={k: v for k, v in (("sender", message.sender), ("message_id", receipt.message_id)) if v},
            )
            for message, receipt in self.inbox
        ]
        self.inbox.clear()
        return taken

    def finish_turn(self, result: TurnResult) -> None:
        """Record a finished turn (the ``turn_result`` query answers it from now on)."""
        self.turn_results.append(result)
        del self.turn_results[:-MAX_TURN_RESULTS]

    def result_of(self, turn: int) -> TurnResult | None:
        """The finished turn ``turn``, or None (still running, not begun, or forgotten)."""
        return next((r for r in self.turn_results if r.turn == turn), None)

    # -- waiting -----------------------------------------------------------------------------

    def set_waiting(self, waiting: bool, last_message: ChatMessage | None = None) -> None:
        """Publish whether the session waits for its user: the Bool search attribute and a memo
        entry (turn, since when, a preview of the last message), so listings need no query."""
        self.waiting_for_user = waiting
        if waiting == self._advertised:
            return
        self._advertised = waiting
        workflow.upsert_search_attributes([WAITING_FOR_USER.value_set(waiting)])
        memo: dict[str, Any] | None = None
        if waiting:
            preview = (last_message.text or "")[:MEMO_PREVIEW_CHARS] if last_message is not None else ""
            memo = {"turn": self.turn, "since": workflow.now().isoformat(), "last_message": preview}
        workflow.upsert_memo({WAITING_FOR_USER_MEMO_KEY: memo})

    def snapshot(self, between_turns: bool) -> SessionSnapshot:
        """What the next run of a continue-as-new needs."""
        return SessionSnapshot(
            turn=self.turn,
            between_turns=between_turns,
            inbox=list(self.inbox),
            receipts=dict(self.receipts),
            turn_results=list(self.turn_results),
            message_count=self.message_count,
        )


def cancelled_tool_results(
    messages: list[ChatMessage], finished: dict[str, ChatMessage], reason: str
) -> list[ChatMessage]:
    """Results for every tool call in ``messages`` that has none: the one its activity returned
    before the cancel when there is one (``finished``, by call id), else an error result saying
    the call was cancelled, so the conversation stays valid for any provider.

    :param messages: The conversation as the cancel left it.
    :param finished: Results of calls whose activity completed in the interrupted step.
    :param reason: Why the run was cancelled (quoted in the error results).
    """
    answered = {m.tool_call_result.origin.id for m in messages if m.tool_call_result is not None}
    out = []
    for message in messages:
        for call in message.tool_calls:
            if call.id is None or call.id in answered:
                continue
            answered.add(call.id)
            out.append(
                finished.get(call.id)
                or ChatMessage.from_tool(
                    f"Tool call '{call.tool_name}' was cancelled: the run was cancelled ({reason}).",
                    origin=call,
                    error=True,
                )
            )
    return out
