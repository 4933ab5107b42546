"""``agent inbox``: the web approvals inbox (see :mod:`agent.inbox.app`)."""

from agent.inbox.app import InboxSettings, create_app
from agent.inbox.identity import IdentityConfig, IdentityConfigError, load_tokens
from agent.inbox.server import InboxServer

__all__ = ["IdentityConfig", "IdentityConfigError", "InboxServer", "InboxSettings", "create_app", "load_tokens"]
