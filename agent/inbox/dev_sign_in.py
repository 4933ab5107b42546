"""Choosing who one is in a dev inbox (``--insecure-dev-identity``, ``agent dev``): the header's
name field posts here, and the name is kept in a cookie. Development only: anyone who reaches the
inbox may be anyone, as with the dev identity itself; other identity sources have no such route.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from agent.inbox.csrf import CSRF_COOKIE, CSRF_FIELD
from agent.inbox.identity import DEV_NAME, DEV_NAME_COOKIE
from agent.inbox.pages import InboxContext, PageError


def routes(inbox: InboxContext) -> list[Route]:
    """``POST /dev/sign-in``."""

    async def sign_in(request: Request) -> Response:
        if inbox.identity.mode != "insecure-dev":
            raise PageError(
                404, "Not a dev inbox", "Only an inbox with --insecure-dev-identity lets you choose a name."
            )
        form = await request.form()
        if not inbox.csrf.check(request.cookies.get(CSRF_COOKIE), str(form.get(CSRF_FIELD) or "")):
            raise PageError(403, "Form expired", "This form's security token is missing or wrong. Reload the page.")
        name = str(form.get("name") or "").strip()
        if not DEV_NAME.fullmatch(name):
            raise PageError(400, "Not a name", "A name is 1 to 64 letters, digits or . _ @ - (e.g. ann).")
        back = str(form.get("next") or "/")
        response = RedirectResponse(back if back.startswith("/") and not back.startswith("//") else "/", 303)
        response.set_cookie(DEV_NAME_COOKIE, name, httponly=True, samesite="strict", path="/")
        return response

    return [Route("/dev/sign-in", sign_in, methods=["POST"])]
