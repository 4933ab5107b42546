"""Examples the README and docs/ run (``agent dev --agent examples.quickstart:agent``)."""
