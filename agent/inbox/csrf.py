"""CSRF protection for the inbox's POST forms: a signed double-submit token.

Every page sets a cookie holding ``nonce.signature`` (HMAC-SHA256 of the nonce under the app's
secret) and puts the same value in each form's hidden ``csrf_token`` field. A POST is accepted
only when the field equals the cookie and the signature checks out. Another site can make the
browser send the cookie, but it cannot read it to fill in the field; the signature stops a
cookie planted by a sibling subdomain.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

#: Cookie and form field names.
CSRF_COOKIE = "inbox_csrf"
CSRF_FIELD = "csrf_token"


class CsrfTokens:
    """Makes and checks CSRF tokens under one secret.

    :param secret: HMAC key; a fresh random one per process when None (tokens then last as long
        as the process, which is what a page open in a browser needs).
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def new(self) -> str:
        """A fresh token ``nonce.signature``."""
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign(nonce)}"

    def valid(self, token: str | None) -> bool:
        """True when ``token`` was made by :meth:`new` under this secret."""
        if not token or "." not in token:
            return False
        nonce, _, signature = token.partition(".")
        return hmac.compare_digest(self._sign(nonce), signature)

    def check(self, cookie: str | None, field: str | None) -> bool:
        """True when the form's ``field`` equals the ``cookie`` and is a valid token."""
        if not cookie or not field:
            return False
        return hmac.compare_digest(cookie, field) and self.valid(cookie)
