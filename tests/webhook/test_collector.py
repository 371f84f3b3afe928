"""The byte-paced garbage collection of the webhook (`webhook.collector`)."""

from __future__ import annotations

import pytest

from webhook.collector import ByteBudgetCollector


def test_a_collection_runs_each_time_the_budget_of_body_bytes_is_read() -> None:
    runs: list[int] = []
    collector = ByteBudgetCollector(budget_bytes=1000, collect=lambda: runs.append(1))
    assert [collector.account(300) for _ in range(3)] == [False, False, False]
    assert collector.account(100) is True and runs == [1]  # 1,000 bytes read
    assert not collector.account(999) and collector.account(1) and collector.collections == 2


def test_small_reviews_never_pay_for_a_collection_alone() -> None:
    runs: list[int] = []
    collector = ByteBudgetCollector(collect=lambda: runs.append(1))
    for _ in range(1000):
        collector.account(4096)  # 4 MB of ordinary reviews: under the 32 MiB default
    assert runs == []


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0"):
        ByteBudgetCollector(budget_bytes=0)
