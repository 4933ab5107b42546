"""What every inbox page shares: the settings, the page error, and :class:`InboxContext` (the
client, identity, CSRF tokens, templates, and the reads several pages make).

A family with pages in the inbox has a module with ``routes(inbox: InboxContext) -> list[Route]``;
:data:`agent.inbox.app.PAGES` lists those modules (one line a family).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse
from temporalio.client import Client
from temporalio.service import RPCError

from agent.approvals.decisions import (
    DEFAULT_TIMEOUT,
    ConfirmationError,
    RunNotAnsweringError,
    UnknownRunError,
    query_pending,
)
from agent.client import AgentRunHandle
from agent.inbox.csrf import CSRF_COOKIE, CSRF_FIELD, CsrfTokens
from agent.inbox.identity import IdentityConfig
from agent.inbox.present import pretty_json, relative, when
from agent.inbox.run_view import HistoryReader, RunRead, is_not_found
from hooks.human_in_the_loop.dataclasses import PendingConfirmation

HERE = Path(__file__).parent
#: Only our own files: no inline script, nothing from another origin.
CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'"


class InboxSettings:
    """Settings of one inbox app.

    :param poll_seconds: How often the waiting list asks for fresh rows.
    :param conversation_messages: How many of the last messages the call page shows.
    :param list_limit: At most this many waiting runs are listed (the page says when cut).
    :param query_timeout: How long the pages wait for a run to answer a query.
    :param decision_timeout: How long a decision waits for the run to accept it.
    """

    def __init__(
        self,
        poll_seconds: float = 1.5,
        conversation_messages: int = 12,
        list_limit: int = 500,
        query_timeout: timedelta = timedelta(seconds=5),
        decision_timeout: timedelta = DEFAULT_TIMEOUT,
    ) -> None:
        if poll_seconds <= 0 or conversation_messages < 1 or list_limit < 1:
            raise ValueError("poll_seconds must be > 0, conversation_messages and list_limit >= 1.")
        self.poll_seconds = poll_seconds
        self.conversation_messages = conversation_messages
        self.list_limit = list_limit
        self.query_timeout = query_timeout
        self.decision_timeout = decision_timeout


class PageError(Exception):
    """A page that cannot be shown; becomes an error page with ``status``."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


def no_such_run(run_id: str) -> PageError:
    """The 404 page of an unknown run."""
    return PageError(404, "No such run", f"No run '{run_id}' in this namespace.")


class InboxContext:
    """What the pages share: client, identity, settings, CSRF tokens and templates."""

    def __init__(self, client: Client, identity: IdentityConfig, settings: InboxSettings, csrf: CsrfTokens) -> None:
        self.client = client
        self.identity = identity
        self.settings = settings
        self.csrf = csrf
        self.reader = HistoryReader(client)
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]), enable_async=False
        )
        self.templates.filters.update(when=when, relative=relative, pretty_json=pretty_json)

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """Render ``template`` with the identity, the CSRF token (set as a cookie when new) and
        the security headers."""
        token = request.cookies.get(CSRF_COOKIE)
        fresh = not self.csrf.valid(token)
        if fresh:
            token = self.csrf.new()
        html = self.templates.get_template(template).render(
            request=request,
            me=self.identity.identify(request),
            identity_mode=self.identity.mode,
            csrf_field=CSRF_FIELD,
            csrf_token=token,
            poll_ms=int(self.settings.poll_seconds * 1000),
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        if fresh:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    def viewer(self, request: Request) -> str | None:
        """The identity of a page's viewer. When an identity source is configured, pages need
        one (401 otherwise); a read-only inbox shows pages to anyone who can reach it."""
        me = self.identity.identify(request)
        if me is None and not self.identity.read_only:
            raise PageError(401, "Who are you?", self.identity.how_to_sign_in())
        return me

    def handle(self, run_id: str) -> AgentRunHandle:
        return AgentRunHandle(self.client, run_id)

    async def pending_of(self, run_id: str) -> list[PendingConfirmation]:
        """The run's pending calls (``query_pending`` with the inbox's deadline, so that a run
        without a worker gives a clear page rather than a hung one).

        :raises PageError: 404 for an unknown run, 504 when the run does not answer in time,
            502 when the query fails.
        """
        try:
            return await query_pending(self.handle(run_id).workflow, timeout=self.settings.query_timeout)
        except UnknownRunError as err:
            raise no_such_run(run_id) from err
        except RunNotAnsweringError as err:
            raise PageError(504, "The run did not answer", str(err)) from err
        except ConfirmationError as err:
            raise PageError(502, "The run did not answer", str(err)) from err

    async def read_run(self, run_id: str) -> RunRead:
        """The run's history as the pages show it.

        :raises PageError: 404 for an unknown run, 502 when Temporal does not answer.
        """
        try:
            return await self.reader.read(run_id)
        except RPCError as err:
            if is_not_found(err):
                raise no_such_run(run_id) from err
            raise PageError(502, "Temporal did not answer", err.message) from err


class InboxPages:
    """Base of a group of inbox pages: the shared :class:`InboxContext` and, as attributes, what
    the pages' handlers use of it.

    :param inbox: The context every page of the inbox shares.
    """

    def __init__(self, inbox: InboxContext) -> None:
        self.inbox = inbox
        self.client = inbox.client
        self.settings = inbox.settings
        self.identity = inbox.identity
        self.csrf = inbox.csrf
        self.render = inbox.render
        self.viewer = inbox.viewer
        self.handle = inbox.handle
        self.pending_of = inbox.pending_of
        self.read_run = inbox.read_run
