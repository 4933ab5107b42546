"""The worker side's assembly: ``AgentPlugin`` collects the run loop's and the hook families'
activities, handlers and warm-ups. ``worker.create_worker`` is a thin wrapper over it."""

import sys

# httpx (under openai) imports its optional command line, and with it click, rich and pygments,
# whenever click is installed (uvicorn, for the inbox, brings it). A worker never runs httpx's
# CLI: a None entry makes that one import fail, so httpx keeps its stub `main` instead (about 80
# modules and 5 MiB less in every worker process). Set only if httpx is not imported yet.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)
