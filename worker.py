"""The agent worker: ``python worker.py`` runs one (``--help`` for its options).

The code lives in ``runtime/worker.py``; this file keeps the documented entry point and import
path (``from worker import create_worker``).
"""

from runtime.worker import create_worker, main, run_worker

__all__ = ["create_worker", "main", "run_worker"]

if __name__ == "__main__":
    main()
