"""The in-flight byte budget: takers wait first come first served, within their deadline, and nothing leaks."""

from __future__ import annotations

import asyncio

import pytest

from webhook.body import BodyBudget, BodyRefused


def test_a_taker_waits_for_room_and_gets_it_when_bytes_are_given_back() -> None:
    async def run() -> tuple[int, int]:
        share = BodyBudget(small_bytes=100, large_bytes=100).large
        await share.take(80, 0)
        waiter = asyncio.create_task(share.take(50, 60))
        while share.waiting == 0:
            await asyncio.sleep(0)
        assert not waiter.done()
        share.give(80)
        await waiter
        return share.held, share.waiting

    assert asyncio.run(run()) == (50, 0)


def test_a_taker_that_finds_no_room_within_its_wait_is_refused_503_and_leaves_the_queue() -> None:
    async def run() -> tuple[BodyRefused, int, int]:
        share = BodyBudget(small_bytes=100, large_bytes=100).large
        await share.take(80, 0)
        with pytest.raises(BodyRefused) as refused:
            await share.take(50, 0.01)
        return refused.value, share.held, share.waiting

    refused, held, waiting = asyncio.run(run())
    assert refused.status == 503 and "waited 0.01 s" in refused.reason
    assert (held, waiting) == (80, 0)


def test_takers_are_served_in_arrival_order_so_a_large_one_is_not_starved_by_small_ones() -> None:
    async def run() -> list[str]:
        share = BodyBudget(small_bytes=100, large_bytes=100).large
        order: list[str] = []
        await share.take(60, 0)

        async def taker(name: str, size: int) -> None:
            await share.take(size, 60)
            order.append(name)

        large = asyncio.create_task(taker("large", 90))
        while share.waiting < 1:
            await asyncio.sleep(0)
        small = asyncio.create_task(taker("small", 30))  # would fit now (60 + 30), but the large one came first
        while share.waiting < 2:
            await asyncio.sleep(0)
        assert order == []
        share.give(60)
        await large
        share.give(90)
        await small
        return order

    assert asyncio.run(run()) == ["large", "small"]


def test_a_cancelled_waiter_holds_nothing_and_lets_the_next_one_through() -> None:
    async def run() -> tuple[int, int]:
        share = BodyBudget(small_bytes=100, large_bytes=100).large
        await share.take(60, 0)
        first = asyncio.create_task(share.take(90, 60))
        while share.waiting < 1:
            await asyncio.sleep(0)
        second = asyncio.create_task(share.take(40, 60))
        while share.waiting < 2:
            await asyncio.sleep(0)
        first.cancel()
        await second  # 60 + 40 fits once the 90 ahead of it has left
        with pytest.raises(asyncio.CancelledError):
            await first
        return share.held, share.waiting

    assert asyncio.run(run()) == (100, 0)


def test_large_turns_are_counted_refused_after_the_wait_and_never_below_one() -> None:
    async def run() -> tuple[int, BodyRefused, int]:
        budget = BodyBudget(large_bodies=2)
        await budget.take_large_turn(0, 1000)
        await budget.take_large_turn(0, 1000)
        with pytest.raises(BodyRefused) as refused:
            await budget.take_large_turn(0.01, 1000)
        both = budget.large_in_flight
        budget.give_large_turn()
        await budget.take_large_turn(0, 1000)  # a turn given back is taken again at once
        return both, refused.value, budget.large_in_flight

    both, refused, after = asyncio.run(run())
    assert both == 2 and after == 2
    assert refused.status == 503 and "bodies above 1000 bytes are read and decided 2 at a time" in refused.reason
    with pytest.raises(ValueError, match="at least one large body"):
        BodyBudget(large_bodies=0)


def test_a_large_turn_given_back_rests_so_large_bodies_keep_to_their_share_of_the_time() -> None:
    """With a share of a half, a turn held for a while is not free again at once: a taker that cannot wait is
    refused, and one that can gets it once the turn has rested. The ordinary reviews' cores are what the rest is
    for."""

    async def run() -> tuple[BodyRefused, int]:
        budget = BodyBudget(large_share=0.5)
        await budget.take_large_turn(0, 1000)
        budget.give_large_turn(held_seconds=0.05)
        with pytest.raises(BodyRefused) as refused:
            await budget.take_large_turn(0, 1000)  # still resting
        await budget.take_large_turn(60, 1000)  # rested: taken
        return refused.value, budget.large_in_flight

    refused, in_flight = asyncio.run(run())
    assert refused.status == 503 and in_flight == 1


def test_with_the_whole_time_for_large_bodies_a_turn_given_back_is_free_at_once() -> None:
    async def run() -> int:
        budget = BodyBudget(large_share=1.0)
        await budget.take_large_turn(0, 1000)
        budget.give_large_turn(held_seconds=5.0)
        await budget.take_large_turn(0, 1000)
        return budget.large_in_flight

    assert asyncio.run(run()) == 1


def test_the_rest_is_in_proportion_to_the_turn_and_bounded() -> None:
    quarter = BodyBudget(large_share=0.25)
    assert quarter.rest_after(0.04) == pytest.approx(0.12)  # 0.04 s of 0.16: a quarter of the time
    assert quarter.rest_after(30.0) == 0.5  # a client that held its turn for long does not stall the next for long
    assert quarter.rest_after(-1.0) == 0.0
    assert BodyBudget(large_share=1.0).rest_after(3.0) == 0.0
    for share in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="share of the time"):
            BodyBudget(large_share=share)
