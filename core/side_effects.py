"""Where a run's input may make the worker write or send: the operator's limits, and their checks.

A run's input names its stores and notifiers as data (``FileSystemToolResultStore(root)``,
``S3AuditStore(bucket)``, ``WebhookNotifier(url)``, ``hook_context["tool_result_store"]``). Anyone
who can start a run chooses that data, so the worker writes and sends only where its operator
said it may:

- ``AGENT_FILE_ROOTS`` (``os.pathsep``-separated directories) and ``TOOL_RESULTS_DIR``: where
  file-system stores may write;
- ``AGENT_S3_BUCKETS`` (comma-separated) and ``TOOL_RESULTS_BUCKET``: the buckets stores may
  write to (the payloads bucket only when listed);
- ``AGENT_WEBHOOK_URLS`` (comma-separated URL prefixes, :mod:`core.url_prefixes`): where a
  ``WebhookNotifier`` may POST.

Each is checked twice on the worker: when the run's agent is rebuilt from its input (the stores'
and notifiers' ``from_dict``, in workflow code: the run fails at once), and in the activity that
writes or sends, just before the side effect (paths resolved there: ``realpath``, so neither
``..`` nor a symlink nor a client-chosen run id leaves the root). Outside a workflow or an
activity (a client building ``Agent(...)``) nothing is checked: the client does not know the
worker's settings.

Workflow code may not read settings, so a worker takes its limits once, when ``AgentPlugin``
configures it (:func:`use_worker_limits`), like its code: a run is checked against the limits of
the worker that runs it. An activity uses the same limits (or the settings when the process
configured no worker).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from temporalio import activity, workflow

from core.settings import Settings, env_name, get_settings
from core.url_prefixes import UrlPrefix, parse_prefixes, url_allowed

#: ``ApplicationError.type`` of a refused side effect (never retried).
SIDE_EFFECT_REFUSED = "SideEffectRefused"


class SideEffectRefused(ValueError):
    """A run asked the worker to write or send where its operator did not allow it; the message
    names the value and the setting that would allow it."""


@dataclass(frozen=True)
class SideEffectLimits:
    """One worker's limits.

    :param file_roots: Absolute directories (as configured, normalised; resolved when checked in an activity).
    :param buckets: S3 bucket names.
    :param webhook_urls: URL prefixes.
    :param cwd: The worker's working directory, against which relative store roots are taken in
        workflow code (which must not ask for it).
    """

    file_roots: tuple[str, ...] = ()
    buckets: frozenset[str] = frozenset()
    webhook_urls: tuple[UrlPrefix, ...] = ()
    cwd: str = "/"

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> SideEffectLimits:
        """The limits the settings give (relative directories are taken from the working directory).

        :raises core.settings.SettingsError: For a malformed setting.
        """
        settings = settings or get_settings()
        roots = [*(settings.file_roots or "").split(os.pathsep), settings.tool_results_dir]
        buckets = {b.strip() for b in (settings.s3_buckets or "").split(",") if b.strip()}
        if settings.tool_results_bucket:
            buckets.add(settings.tool_results_bucket)
        return cls(
            file_roots=tuple(dict.fromkeys(os.path.abspath(r.strip()) for r in roots if r.strip())),
            buckets=frozenset(buckets),
            webhook_urls=parse_prefixes(settings.webhook_urls),
            cwd=os.getcwd(),
        )


_worker_limits: SideEffectLimits | None = None


def use_worker_limits(limits: SideEffectLimits | None = None) -> SideEffectLimits:
    """Make ``limits`` (by default the current settings') those of this process's workers.
    ``AgentPlugin`` calls it when it configures a worker or a replayer.

    :raises core.settings.SettingsError: For a malformed setting.
    """
    global _worker_limits
    _worker_limits = limits if limits is not None else SideEffectLimits.from_settings()
    return _worker_limits


def worker_limits() -> SideEffectLimits | None:
    """The limits to check against here: the worker's in workflow code and activities, None
    elsewhere (a client, which does not know the worker's settings, checks nothing).

    :raises SideEffectRefused: In workflow code of a process whose worker has no limits (a worker
        built without ``AgentPlugin``): nothing from the input is trusted then.
    """
    if workflow.in_workflow():
        if _worker_limits is None:
            raise SideEffectRefused(
                "This worker has no side-effect limits (it was built without AgentPlugin / create_worker), "
                "so it takes no store or notifier from a run's input."
            )
        return _worker_limits
    if activity.in_activity():
        return _worker_limits or SideEffectLimits.from_settings()
    return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_file_path(path: str | os.PathLike[str], what: str) -> None:
    """Refuse ``path`` (a store's root, or a file it is about to write) outside the allowed directories.

    In workflow code the check is lexical (no I/O there); in an activity both sides are resolved
    with ``realpath`` first, so a symlink or ``..`` anywhere on the way counts where it leads.

    :param what: What names the path, for the message (``"FileSystemAuditStore root"``).
    :raises SideEffectRefused: Naming the path and ``AGENT_FILE_ROOTS``.
    """
    limits = worker_limits()
    if limits is None:
        return
    text, leads = os.fspath(path), ""
    if workflow.in_workflow():
        candidate, roots = os.path.normpath(os.path.join(limits.cwd, text)), limits.file_roots
    else:
        candidate, roots = os.path.realpath(text), tuple(os.path.realpath(r) for r in limits.file_roots)
        if candidate != os.path.abspath(text):
            leads = f" (which leads to '{candidate}')"
    if not any(_under(candidate, root) for root in roots):
        raise SideEffectRefused(
            f"{what} '{text}'{leads} is outside the directories this worker may write to: add a directory above it to "
            f"{env_name('file_roots')} on the workers (or use {env_name('tool_results_dir')})."
        )


def check_bucket(bucket: str, what: str) -> None:
    """Refuse an S3 bucket the worker's operator did not list.

    :raises SideEffectRefused: Naming the bucket and ``AGENT_S3_BUCKETS``.
    """
    limits = worker_limits()
    if limits is not None and bucket not in limits.buckets:
        raise SideEffectRefused(
            f"{what} bucket '{bucket}' is not one this worker may write to: list it in "
            f"{env_name('s3_buckets')} on the workers ({env_name('tool_results_bucket')} is allowed as well)."
        )


def check_webhook_url(url: str, what: str = "WebhookNotifier") -> None:
    """Refuse a URL under none of the allowed prefixes.

    :raises SideEffectRefused: Naming the URL and ``AGENT_WEBHOOK_URLS``.
    """
    limits = worker_limits()
    if limits is not None and not url_allowed(url, limits.webhook_urls):
        raise SideEffectRefused(
            f"{what} URL '{url}' is not one this worker may call: add a prefix of it (scheme, host, port, path) "
            f"to {env_name('webhook_urls')} on the workers."
        )
