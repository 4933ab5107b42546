"""The inbox's conversation pages: the sessions waiting for a reply (``/replies``) and one run's
conversation (``/runs/{run}/conversation``) with a message box that posts through the run's
``send_message`` Update (``.../send``).

The messages shown come from the one history decoder (:mod:`agent.run_history`): the run's first
messages, each message people sent (with who sent it), each answer of the model and the turn
boundaries. The sender of a message is the request's identity (:mod:`agent.inbox.identity`),
never a form field; the form carries a CSRF token (:mod:`agent.inbox.csrf`); the run's validator
decides, and its refusal shows on the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from temporalio.service import RPCError

from agent.conversation import ConversationError, NotAcceptedError, new_message_id
from agent.conversations.waiting import list_waiting_for_reply
from agent.inbox.csrf import CSRF_COOKIE, CSRF_FIELD
from agent.inbox.live import SoFar, read_so_far
from agent.inbox.pages import InboxContext, PageError, no_such_run
from agent.inbox.run_view import is_not_found
from agent.run_endings import ending_of
from agent.run_history import read_history
from core.messages import ChatMessage
from core.payloads import AgentRunInput


@dataclass
class Said:
    """One line of a conversation as the page shows it.

    :param role: ``user``, ``assistant``, ``system`` or ``turn`` (a turn boundary).
    :param text: What was said (or the boundary, e.g. "turn 2 started").
    :param sender: Who sent a user message, when known.
    :param key: What the live events call this line (``m:<message id>``, ``t:<turn>:started``,
        ``r:<turn>:<step>``), so that the page does not show it twice; empty when none.
    """

    role: str
    text: str
    sender: str = ""
    key: str = ""


async def conversation_of(inbox: InboxContext, run_id: str) -> tuple[list[Said], str]:
    """The run's conversation so far and Temporal's status name, from its history.

    :raises PageError: 404 for an unknown run, 502 when Temporal does not answer.
    """
    handle = inbox.client.get_workflow_handle(run_id)
    said: list[Said] = []
    try:
        description = await handle.describe()
        async for item in read_history(handle, inbox.client.data_converter):
            if item.kind == "run_started" and item.run_input is not None:
                said.extend(first_messages(item.run_input))
            elif item.kind == "message_received" and item.user_message is not None:
                message = item.user_message
                key = f"m:{message.message_id}" if message.message_id else ""
                said.append(Said("user", message.text, message.sender or "", key))
            elif item.kind == "model_replied" and item.model_input is not None and item.model_input.purpose == "agent":
                message = item.model_output.message if item.model_output else None
                if message is not None and message.text:
                    said.append(Said("assistant", message.text))
            elif item.kind in ("turn_started", "turn_ended"):
                what = item.kind.removeprefix("turn_")
                said.append(Said("turn", f"turn {item.turn} {what}", key=f"t:{item.turn}:{what}"))
    except RPCError as err:
        if is_not_found(err):
            raise no_such_run(run_id) from err
        raise PageError(502, "Temporal did not answer", err.message) from err
    return said, description.status.name if description.status else "UNKNOWN"


def first_messages(run_input: AgentRunInput) -> list[Said]:
    """What the run started from: its input messages, or, for a run that continued as new, the
    conversation it carried in its snapshot (the earlier runs' turns)."""
    snapshot = run_input.snapshot
    if snapshot is None:
        messages = list(run_input.messages)
    else:
        messages = [ChatMessage.model_validate(m) for m in snapshot.state.get("messages") or []]
    return [
        Said(m.role.value, m.text or "", str(m.meta.get("sender") or ""))
        for m in messages
        if m.role.value in ("user", "assistant", "system") and m.text
    ]


def claim_finished_answer(said: list[Said], so_far: SoFar) -> None:
    """When the answer being written as the stream was read has ended by the time the history
    was read, the history's line is that answer: give it the answer's key (the stream's reply
    event then finds it shown) and show no half-written copy."""
    if not so_far.answer:
        return
    last = next((line for line in reversed(said) if line.role == "assistant"), None)
    if last is not None and not last.key and last.text.startswith(so_far.answer):
        last.key = f"r:{so_far.answer_key}"
        so_far.answer = ""


def routes(inbox: InboxContext) -> list[Route]:
    """The conversation pages' routes."""
    pages = ConversationPages(inbox)
    return [
        Route("/replies", pages.replies_page),
        Route("/runs/{run_id:path}/conversation", pages.conversation_page),
        Route("/runs/{run_id:path}/conversation/send", pages.send, methods=["POST"]),
    ]


class ConversationPages:
    """The reply list, one conversation, and sending a message."""

    def __init__(self, inbox: InboxContext) -> None:
        self.inbox = inbox

    async def replies_page(self, request: Request) -> Response:
        self.inbox.viewer(request)
        runs, truncated = await list_waiting_for_reply(self.inbox.client, limit=self.inbox.settings.list_limit)
        return self.inbox.render(request, "replies.html", runs=runs, truncated=truncated)

    async def conversation_page(self, request: Request) -> Response:
        self.inbox.viewer(request)
        return await self._conversation(request, request.path_params["run_id"])

    async def _conversation(
        self,
        request: Request,
        run_id: str,
        error: str | None = None,
        text: str = "",
        status: int = 200,
        message_id: str | None = None,
        live: bool = True,
    ) -> Response:
        # Before the history: the stream picks up from here.
        so_far = await read_so_far(self.inbox, run_id) if live else SoFar()
        said, run_status = await conversation_of(self.inbox, run_id)
        claim_finished_answer(said, so_far)
        return self.inbox.render(
            request,
            "conversation.html",
            status=status,
            run_id=run_id,
            said=said,
            run_status=run_status,
            error=error,
            text=text,
            # The form's message id: the same for a retry of this message, a new one after it is sent.
            message_id=message_id or new_message_id(),
            read_only=self.inbox.identity.read_only,
            so_far=so_far,
            live=live,
            ending=await ending_of(self.inbox.client, run_id, run_status),
        )

    async def send(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        form = await request.form()
        if not self.inbox.csrf.check(request.cookies.get(CSRF_COOKIE), str(form.get(CSRF_FIELD) or "")):
            raise PageError(
                403, "Form expired", "This form's security token is missing or wrong. Reload the page and try again."
            )
        if self.inbox.identity.read_only:
            raise PageError(403, "Read-only inbox", self.inbox.identity.how_to_sign_in())
        sender = self.inbox.identity.identify(request)
        if sender is None:
            raise PageError(401, "Who are you?", self.inbox.identity.how_to_sign_in())
        text = str(form.get("text") or "")
        message_id = str(form.get("message_id") or "")
        if not MESSAGE_ID.fullmatch(message_id):
            message_id = new_message_id()  # a form from before message ids: this send has its own
        timeout = self.inbox.settings.decision_timeout
        handle = self.inbox.handle(run_id)
        try:
            receipt = await handle.send_message(text, sender=sender, message_id=message_id, timeout=timeout)
        except NotAcceptedError as err:
            # The run is not asked again (a run that did not answer would hold the page past its
            # deadline): the page comes from the history alone, without its live stream.
            return await self._conversation(
                request,
                run_id,
                error=f"{err} Sending this form again is safe.",
                text=text,
                status=504,
                message_id=message_id,
                live=False,
            )
        except ConversationError as err:
            return await self._conversation(
                request, run_id, error=str(err), text=text, status=409, message_id=message_id
            )
        return RedirectResponse(f"/runs/{run_id}/conversation?sent={receipt.turn}", status_code=303)


#: A message id a form may carry (what :func:`agent.conversation.new_message_id` makes, or the like).
MESSAGE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
