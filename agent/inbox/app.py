"""The web approvals inbox: a Starlette app over a Temporal client.

Each family with pages in the inbox has a module with ``routes(inbox) -> list[Route]``, listed in
:data:`PAGES`: the approval pages (:mod:`agent.approvals.inbox_pages`: the waiting list, one
call, deciding it), the conversation pages (:mod:`agent.conversations.inbox_pages`: sessions
waiting for a reply, one conversation with its message box) and the run pages
(:mod:`agent.inbox.run_pages`: a run's timeline, an
offloaded result) and the live events that those pages subscribe to (:mod:`agent.inbox.live`). This module adds sign-in, the health check and the static files. Pages load
nothing from outside the app (no CDN), and the Content-Security-Policy says so.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client

from agent.approvals import inbox_pages as approval_pages
from agent.conversations import inbox_pages as conversation_pages
from agent.inbox import agui, dev_sign_in, live, run_pages
from agent.inbox.agui import AguiAgent
from agent.inbox.csrf import CsrfTokens
from agent.inbox.identity import TOKEN_COOKIE, IdentityConfig
from agent.inbox.pages import HERE, InboxContext, InboxSettings, PageError

#: The page modules, one a family: the one line to touch when a family adds inbox pages. The run
#: pages come last: their ``/runs/{run_id:path}`` matches any path under /runs/ (run ids may hold "/").
PAGES = (approval_pages, conversation_pages, live, run_pages, dev_sign_in)

__all__ = ["PAGES", "InboxSettings", "PageError", "create_app"]


def create_app(
    client: Client,
    *,
    identity: IdentityConfig | None = None,
    settings: InboxSettings | None = None,
    csrf_secret: bytes | None = None,
    agents: dict[str, AguiAgent] | None = None,
) -> Starlette:
    """The inbox app.

    :param client: A Temporal client with the project's data converter (``agent.connect``).
    :param identity: Where approvers' identities come from; None: read-only (decisions refused).
    :param settings: Poll interval, conversation length, list limit (defaults: :class:`InboxSettings`).
    :param csrf_secret: HMAC key for CSRF tokens (default: random per process).
    :param agents: The agents served at ``POST /ag-ui/{name}`` (AG-UI, :mod:`agent.inbox.agui`), by name.
    """
    inbox = InboxContext(client, identity or IdentityConfig(), settings or InboxSettings(), CsrfTokens(csrf_secret))

    async def page_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return inbox.render(request, "error.html", status=exc.status, title=exc.title, message=exc.message)

    async def login(request: Request) -> Response:
        token = request.query_params.get("token", "")
        name = inbox.identity.token_name(token)
        if not inbox.identity.tokens or name is None:
            raise PageError(401, "Sign-in failed", inbox.identity.how_to_sign_in())
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="lax", path="/")
        return response

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [route for pages in PAGES for route in pages.routes(inbox)] + agui.routes(inbox, agents or {})
    return Starlette(
        routes=[
            *routes,
            Route("/login", login),
            Route("/healthz", healthz),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        exception_handlers={PageError: page_error},
    )
