"""The workers' side-effect limits in tests (``core/side_effects.py``).

A worker takes its limits from the environment when it is configured; the session's worker runs
in the test process, so a test that needs other limits sets the variables and reads the limits
again (:func:`worker_environment`), and gets the session's back when it ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from core.side_effects import SideEffectLimits, use_worker_limits

#: The variable the notification tests' notifiers name (``WebhookNotifier(url, secret_env=...)``).
WEBHOOK_SECRET_ENV = "TEST_WEBHOOK_SECRET"


@contextmanager
def worker_environment(**variables: str | None) -> Iterator[SideEffectLimits]:
    """Set ``variables`` (None: unset) for this process's workers and read their limits again;
    restore both when the block ends."""
    previous = {name: os.environ.get(name) for name in variables}
    try:
        _apply(variables)
        yield use_worker_limits()
    finally:
        _apply(previous)
        use_worker_limits()


def allow_webhook(url: str) -> None:
    """Add ``url`` to ``AGENT_WEBHOOK_URLS`` of this process's workers (inside :func:`worker_environment`,
    which restores it)."""
    os.environ["AGENT_WEBHOOK_URLS"] = f"{os.environ.get('AGENT_WEBHOOK_URLS', '')},{url}".strip(",")
    use_worker_limits()


def _apply(variables: dict[str, str | None]) -> None:
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
