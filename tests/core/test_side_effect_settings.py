"""core/url_prefixes.py and core/side_effects.py without a server: which URLs a prefix allows
(parsed parts, never a string prefix), the settings' errors, and that nothing is checked outside
a worker (a client building an ``Agent`` does not know the worker's settings)."""

from __future__ import annotations

import pytest

from core.settings import SettingsError, get_settings
from core.side_effects import SideEffectLimits, check_bucket, check_file_path, check_webhook_url, worker_limits
from core.url_prefixes import parse_prefixes, url_allowed
from hooks.audit import FileSystemAuditStore
from hooks.human_in_the_loop import WebhookNotifier
from hooks.tool_result_offloading import S3ToolResultStore

ALLOWED = parse_prefixes("https://ok.example.com/hooks, http://127.0.0.1:8080")


@pytest.mark.parametrize(
    "url",
    [
        "https://ok.example.com/hooks",
        "https://ok.example.com/hooks/",
        "https://OK.example.com:443/hooks/agent?x=1",
        "http://127.0.0.1:8080/anything",
    ],
)
def test_urls_under_a_prefix_are_allowed(url):
    assert url_allowed(url, ALLOWED)


@pytest.mark.parametrize(
    "url",
    [
        "https://ok.example.com.evil.org/hooks",  # a longer host
        "https://ok.example.com@evil.org/hooks",  # user info: the host is evil.org
        "https://ok.example.com:8443/hooks",  # another port
        "http://ok.example.com/hooks",  # another scheme (and port)
        "https://ok.example.com/hooksevil",  # not on a segment boundary
        "https://ok.example.com/hooks/../admin",  # climbs out
        "https://ok.example.com/hooks/%2e%2e/admin",  # climbs out, encoded
        "http://127.0.0.1/anything",  # port 80, not 8080
        "ftp://ok.example.com/hooks",
        "not a url",
    ],
)
def test_urls_that_only_look_like_a_prefix_are_refused(url):
    assert not url_allowed(url, ALLOWED)


def test_a_bad_prefix_is_a_settings_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("AGENT_WEBHOOK_URLS", "https://ok.example.com, ftp://files.example.com")
    with pytest.raises(SettingsError, match=r"AGENT_WEBHOOK_URLS=.*ftp://files\.example\.com"):
        get_settings()


def test_the_defaults_allow_only_the_workers_own_tool_results(monkeypatch, tmp_path):
    for name in ("AGENT_FILE_ROOTS", "AGENT_S3_BUCKETS", "AGENT_WEBHOOK_URLS", "TOOL_RESULTS_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOL_RESULTS_DIR", str(tmp_path / "results"))
    limits = SideEffectLimits.from_settings()
    assert limits.file_roots == (str(tmp_path / "results"),)
    assert limits.buckets == frozenset() and limits.webhook_urls == ()
    monkeypatch.setenv("TOOL_RESULTS_BUCKET", "tool-results")
    monkeypatch.setenv("AGENT_S3_BUCKETS", "audit, archive")
    assert SideEffectLimits.from_settings().buckets == {"tool-results", "audit", "archive"}


def test_a_client_checks_nothing(monkeypatch):
    """Outside a workflow and an activity there are no limits: a client builds and serialises
    what its workers will check."""
    monkeypatch.setenv("AGENT_FILE_ROOTS", "/nowhere")
    assert worker_limits() is None
    check_file_path("/etc", "x")
    check_bucket("any-bucket", "x")
    check_webhook_url("https://anything.example.com")
    for part in (
        FileSystemAuditStore("/etc/audit"),
        S3ToolResultStore("someone-elses"),
        WebhookNotifier("https://anything.example.com", secret_env="HOOK_SECRET"),
    ):
        assert type(part).from_dict(part.to_dict()).to_dict() == part.to_dict()


def test_a_notifier_names_its_secret_by_reference():
    notifier = WebhookNotifier("https://hooks.example.com/a", secret_env="HOOK_SECRET")
    assert notifier.to_dict()["init_parameters"] == {
        "url": "https://hooks.example.com/a",
        "secret_env": "HOOK_SECRET",
        "format": "standard",
    }
    with pytest.raises(ValueError, match="secret_env must be an environment variable name"):
        WebhookNotifier("https://hooks.example.com/a", secret_env="not a name")
    with pytest.raises(ValueError, match="needs secret_env"):
        WebhookNotifier("https://hooks.example.com/a")
