"""Who is asking: the approver's identity for the inbox, never taken from a form field.

Three sources, chosen when the inbox starts (``agent inbox`` options):

- a trusted header that the user's reverse proxy sets (``--identity-header X-Forwarded-User``);
- a token table (``--tokens FILE``): the browser sends ``Authorization: Bearer TOKEN``, or logs
  in once with ``/login?token=TOKEN``, which sets an HttpOnly cookie;
- ``--insecure-dev-identity NAME``: everyone is NAME (for ``agent dev`` on one's own machine),
  unless they choose another name in the page's header (``POST /dev/sign-in``, a cookie), so that a
  call only ``ann`` may decide can be tried as ann.

With none of them, the inbox is read-only: every decision is refused.
"""

from __future__ import annotations

import hmac
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request

#: Cookie that holds a token after ``/login?token=...``.
TOKEN_COOKIE = "inbox_token"
#: Cookie that holds the name chosen in a dev inbox (``--insecure-dev-identity``).
DEV_NAME_COOKIE = "inbox_dev_as"
#: A name a dev inbox accepts: letters, digits and ``._@-``, up to 64 characters.
DEV_NAME = re.compile(r"[A-Za-z0-9._@-]{1,64}")


class IdentityConfigError(ValueError):
    """The identity options are inconsistent, or the token file cannot be read."""


def load_tokens(path: str | Path) -> dict[str, str]:
    """Read a token table: a JSON object ``{"token": "name", ...}`` or ``token = name`` lines
    (blank lines and lines starting with ``#`` are skipped).

    :param path: The file.
    :raises IdentityConfigError: If the file is missing, empty, malformed, or names a token twice.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise IdentityConfigError(f"--tokens {path}: cannot read it: {exc.strerror or exc}") from exc
    tokens: dict[str, str] = {}
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IdentityConfigError(f"--tokens {path}: not valid JSON: {exc}") from exc
        for token, name in data.items():
            if not isinstance(name, str) or not name.strip() or not token.strip():
                raise IdentityConfigError(f"--tokens {path}: each entry must map a token to a non-empty name.")
            tokens[token.strip()] = name.strip()
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            token, sep, name = line.partition("=")
            if not sep or not token.strip() or not name.strip():
                raise IdentityConfigError(f"--tokens {path}, line {number}: expected 'token = name'.")
            if token.strip() in tokens:
                raise IdentityConfigError(f"--tokens {path}, line {number}: token listed twice.")
            tokens[token.strip()] = name.strip()
    if not tokens:
        raise IdentityConfigError(f"--tokens {path}: the file names no tokens.")
    return tokens


@dataclass(frozen=True)
class IdentityConfig:
    """Where the inbox takes the approver's identity from (at most one of the first two, or the
    dev identity alone).

    :param header: A request header the reverse proxy sets to the signed-in user's name.
    :param tokens: Token -> name.
    :param insecure_dev_identity: Everyone is this name (local development only).
    :raises IdentityConfigError: If more than one source is given, or the header name is empty.
    """

    header: str | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    insecure_dev_identity: str | None = None

    def __post_init__(self) -> None:
        sources = [bool(self.header), bool(self.tokens), bool(self.insecure_dev_identity)]
        if sum(sources) > 1:
            raise IdentityConfigError(
                "Give one identity source: --identity-header, --tokens or --insecure-dev-identity."
            )
        if self.header is not None and not self.header.strip():
            raise IdentityConfigError("--identity-header needs a header name, e.g. X-Forwarded-User.")

    @property
    def read_only(self) -> bool:
        """True when no source is configured: nobody can decide."""
        return not (self.header or self.tokens or self.insecure_dev_identity)

    @property
    def mode(self) -> str:
        """``header``, ``tokens``, ``insecure-dev`` or ``read-only`` (shown in the page footer)."""
        if self.header:
            return "header"
        if self.tokens:
            return "tokens"
        if self.insecure_dev_identity:
            return "insecure-dev"
        return "read-only"

    def token_name(self, token: str | None) -> str | None:
        """The name of ``token``, compared in constant time; None for an unknown token."""
        if not token:
            return None
        found = None
        for known, name in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = name
        return found

    def identify(self, request: Request) -> str | None:
        """The identity of ``request``'s sender, or None when it has none (or an unknown token)."""
        if self.insecure_dev_identity:
            chosen = request.cookies.get(DEV_NAME_COOKIE, "")
            return chosen if DEV_NAME.fullmatch(chosen) else self.insecure_dev_identity
        if self.header:
            value = request.headers.get(self.header, "").strip()
            return value or None
        if self.tokens:
            auth = request.headers.get("authorization", "")
            if auth.lower().startswith("bearer "):
                return self.token_name(auth[7:].strip())
            return self.token_name(request.cookies.get(TOKEN_COOKIE))
        return None

    def how_to_sign_in(self) -> str:
        """One sentence telling a person without an identity what to do."""
        if self.header:
            return f"This inbox takes your identity from the '{self.header}' header set by the reverse proxy; none came with this request. Open the inbox through the proxy."
        if self.tokens:
            return "Sign in with your token: open /login?token=YOUR_TOKEN once, or send 'Authorization: Bearer YOUR_TOKEN'. The token given is missing or unknown."
        return "This inbox is read-only: it was started without an identity source. Start it with --identity-header, --tokens or (on your own machine) --insecure-dev-identity NAME."
