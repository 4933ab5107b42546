"""``agent chat``'s view of one turn: the answer printed as its tokens arrive, with the turn's tool
calls, approvals and decisions, read from the run's live events (``AgentRunHandle.events``)."""

from __future__ import annotations

from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError

from agent.client import AgentRunHandle
from agent.live_view import LiveTranscript, PlainScreen

#: What a failed read of the live events raises.
STREAM_ERRORS = (RPCError, WorkflowQueryFailedError, WorkflowUpdateFailedError)


class LiveEventsUnavailable(Exception):
    """The run's live events could not be read (a run started by code that publishes none, or
    the stream broke); ``printed`` says whether some of the turn was shown already."""

    def __init__(self, message: str, printed: bool) -> None:
        super().__init__(message)
        self.printed = printed


class ChatStream:
    """Follows one session across the turns of a chat, remembering where its events stopped.

    :param handle: The session.
    :param screen: Where lines go (default: stdout).
    """

    def __init__(self, handle: AgentRunHandle, screen: PlainScreen | None = None) -> None:
        self.handle = handle
        self.screen = screen or PlainScreen()
        self.transcript = LiveTranscript(self.screen, handle.run_id, lambda _n: "assistant: ", whole_answers=True)
        #: The offset of the first event not read yet.
        self.next_offset = 0

    async def follow_turn(self, turn: int) -> str:
        """Print turn ``turn``'s events as they arrive until it ends; earlier turns' events are
        skipped. Returns the turn's exit reason (the run's, when the run ends first).

        :raises LiveEventsUnavailable: The events could not be read.
        """
        printed = False
        try:
            async for event in self.handle.events(from_offset=self.next_offset):
                self.next_offset = event.offset + 1
                if event.kind == "run_ended":
                    self.screen.end_partial()
                    return str(event.data.get("exit_reason"))
                if event.turn < turn:
                    continue
                if event.kind == "turn_ended" and event.turn == turn:
                    self.screen.end_partial()
                    return str(event.data.get("exit_reason"))
                self.transcript.show(event)
                printed = True
        except STREAM_ERRORS as err:
            self.screen.end_partial()
            raise LiveEventsUnavailable(str(err), printed) from err
        self.screen.end_partial()
        raise LiveEventsUnavailable("the run's events ended before its turn did", printed)
