"""URL prefixes an operator allows (``AGENT_WEBHOOK_URLS``), and the check of a URL against them.

A prefix matches a URL when the scheme, the host and the port are the same (the scheme's default
port when none is written) and the URL's path is the prefix's path or lies below it, segment by
segment. Comparing parsed parts, not strings, is what keeps ``https://ok.example.com.evil.org/``,
``https://ok.example.com@evil.org/`` and ``https://ok.example.com:8443/`` out of a prefix
``https://ok.example.com``; a path with ``.``/``..`` segments (plain or percent-encoded) never
matches, so ``/hooks/../admin`` cannot climb out of ``/hooks``.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote, urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


class UrlPrefix(NamedTuple):
    """One allowed prefix, parsed: ``scheme``, lower-case ``host``, ``port``, ``path`` without a trailing ``/``."""

    scheme: str
    host: str
    port: int
    path: str

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.path or '/'}"


def _parts(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of an http(s) URL.

    :raises ValueError: For another scheme, no host, user info, a bad port, or a ``.``/``..`` path segment.
    """
    split = urlsplit(url.strip())
    scheme = split.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not split.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL with a host")
    if split.username is not None or split.password is not None or "@" in split.netloc:
        raise ValueError(f"{url!r} has user info before its host")
    try:
        port = split.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise ValueError(f"{url!r} has a bad port: {exc}") from None
    if any(segment in (".", "..") for segment in unquote(split.path).split("/")):
        raise ValueError(f"{url!r} has a '.' or '..' path segment")
    return scheme, split.hostname.lower(), port, split.path


def parse_prefix(text: str) -> UrlPrefix:
    """One allowed prefix from its text (no query or fragment).

    :raises ValueError: For anything but an http(s) URL with a host and a plain path.
    """
    if urlsplit(text.strip()).query or urlsplit(text.strip()).fragment or text.strip().endswith(("?", "#")):
        raise ValueError(f"{text!r} has a query or fragment; a prefix is scheme, host, port and path")
    scheme, host, port, path = _parts(text)
    return UrlPrefix(scheme, host, port, path.rstrip("/"))


def parse_prefixes(text: str | None) -> tuple[UrlPrefix, ...]:
    """The prefixes of a comma- or space-separated list (empty for None or blank text).

    :raises ValueError: For the first entry :func:`parse_prefix` refuses.
    """
    return tuple(parse_prefix(entry) for entry in (text or "").replace(",", " ").split())


def url_allowed(url: str, prefixes: tuple[UrlPrefix, ...]) -> bool:
    """Whether ``url`` lies under one of ``prefixes`` (False for a URL :func:`_parts` refuses)."""
    try:
        scheme, host, port, path = _parts(url)
    except ValueError:
        return False
    return any(
        (scheme, host, port) == (p.scheme, p.host, p.port)
        and (path.rstrip("/") == p.path or path.startswith(p.path + "/"))
        for p in prefixes
    )
