"""A flood of one kind of log line writes a few a second, and the next line written says how many were left out."""

from __future__ import annotations

import logging

import pytest

from webhook.log_throttle import ThrottleFilter


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("gpudra.webhook", logging.WARNING, __file__, 1, msg, args, None)


def test_each_template_passes_its_allowance_then_counts_what_it_leaves_out() -> None:
    clock = _Clock()
    throttle = ThrottleFilter(per_second=3, clock=clock)
    passed = [throttle.filter(_record("%s review refused (%d): %s", "mutate", 503, i)) for i in range(1000)]
    assert sum(passed) == 3
    assert throttle.filter(_record("another template")) is True  # templates do not share an allowance
    clock.now += 1.0
    record = _record("%s review refused (%d): %s", "mutate", 503, "x")
    assert throttle.filter(record) is True
    assert "997 more like this left out of the log" in record.getMessage()


def test_the_table_of_templates_stays_bounded() -> None:
    throttle = ThrottleFilter(per_second=1, clock=_Clock())
    for i in range(5000):
        throttle.filter(_record(f"unique {i}"))
    assert len(throttle._tokens) <= 256


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0"):
        ThrottleFilter(per_second=0)
