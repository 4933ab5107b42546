"""``eventually``, the suite's one poll loop: it returns the first accepted value, and a condition
that never holds fails with what was awaited and what was seen last."""

from __future__ import annotations

import pytest

from tests.support.polling import eventually


async def test_returns_the_first_value_the_condition_accepts_from_a_plain_probe():
    seen = iter(range(100))
    assert await eventually(lambda: next(seen), lambda n: n >= 3, interval=0.001) == 3


async def test_awaits_an_async_probe_and_takes_any_truthy_value_by_default():
    calls: list[int] = []

    async def probe() -> list[int]:
        calls.append(1)
        return calls if len(calls) >= 2 else []

    assert await eventually(probe, interval=0.001) == [1, 1]


async def test_a_condition_that_never_holds_names_the_wait_and_the_last_value():
    with pytest.raises(AssertionError, match=r"the door never opened \(waited 0.05 s\); last seen: 'shut'"):
        await eventually(lambda: "shut", lambda state: state == "open", timeout=0.05, message="the door never opened")


async def test_ignored_exceptions_mean_not_yet_and_are_reported_last():
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("not up yet")
        return "up"

    assert await eventually(flaky, interval=0.001, ignoring=(ConnectionError,)) == "up"
    with pytest.raises(AssertionError, match=r"last seen: ConnectionError\('down'\)"):
        await eventually(
            lambda: (_ for _ in ()).throw(ConnectionError("down")), timeout=0.05, ignoring=(ConnectionError,)
        )


async def test_other_exceptions_propagate_at_once():
    def broken() -> None:
        raise KeyError("a bug in the probe")

    with pytest.raises(KeyError):
        await eventually(broken, timeout=10, ignoring=(ConnectionError,))


@pytest.mark.parametrize("bad", [{"timeout": 0}, {"interval": -1.0}])
async def test_a_non_positive_timeout_or_interval_is_refused(bad):
    with pytest.raises(ValueError, match="must be positive seconds"):
        await eventually(lambda: True, **bad)
