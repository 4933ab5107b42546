"""The worker side's assembly: ``AgentPlugin`` collects the run loop's and the hook families'
activities, handlers and warm-ups. ``worker.create_worker`` is a thin wrapper over it."""
