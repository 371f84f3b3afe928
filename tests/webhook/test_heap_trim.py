"""webhook.heap_trim: a trim once enough connections have ended and the burst is over, never on every poll."""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Iterator

import pytest

from webhook.gate import ConnectionGate, GateLimits
from webhook.heap_trim import HeapTrim


class _Connection:
    """What a closed connection leaves: objects that hold one another in a cycle, and a buffer."""

    def __init__(self) -> None:
        self.peer = self
        self.buffer = bytearray(64 * 1024)


@pytest.fixture
def no_automatic_collection() -> Iterator[None]:
    """A quiet server's heap (webhook.settled_heap): young collections so rare that they do not run here."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def test_it_trims_once_enough_connections_ended_and_the_burst_is_over() -> None:
    ended = [0]
    trim = HeapTrim(lambda: ended[0], closed=10)
    for total in (0, 3, 5, 5):  # 5 ended, then quiet: not enough
        ended[0] = total
        trim()
    assert trim.trims == 0
    ended[0] = 50  # 50 ended in all, still ending: wait for the end of the burst
    trim()
    assert trim.trims == 0
    ended[0] = 60  # the burst's last ones
    trim()
    assert trim.trims == 0
    trim()  # quiet: what all of them held goes back in one trim
    assert trim.trims == 1
    trim()
    ended[0] = 61  # one more: not worth a trim
    trim()
    trim()
    assert trim.trims == 1


def test_a_burst_that_goes_on_is_trimmed_without_waiting_for_quiet() -> None:
    ended = [1000]
    trim = HeapTrim(lambda: ended[0], closed=10)  # what ended before it was made is not counted
    trim()
    assert trim.trims == 0
    for _ in range(9):  # 10 ended at every poll, never quiet
        ended[0] += 10
        trim()
    assert trim.trims == 1  # at 80 ended (8 x 10)


def test_a_count_that_goes_back_is_an_error() -> None:
    ended = [5]
    trim = HeapTrim(lambda: ended[0])
    ended[0] = 4
    with pytest.raises(ValueError, match="went back from 5 to 4"):
        trim()
    with pytest.raises(ValueError, match="closed must be at least 1"):
        HeapTrim(lambda: 0, closed=0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_malloc_trim_is_found_here() -> None:
    assert HeapTrim(lambda: 0)._trim is not None


@pytest.mark.usefixtures("no_automatic_collection")
def test_what_closed_connections_left_in_reference_cycles_is_collected_before_the_trim() -> None:
    """A closed connection's objects hold one another in cycles (asyncio's TLS protocol <-> its transport): the
    trim collects them first, even with automatic collection off."""
    gate = ConnectionGate()
    trim = HeapTrim(lambda: gate.ended, closed=10)
    entries = [gate.open("10.0.0.9", lambda: None) for _ in range(50)]
    gone = [weakref.ref(_Connection()) for _ in range(50)]
    trim()
    assert all(ref() is not None for ref in gone)  # kept alive by their cycles alone
    for entry in entries:
        assert entry is not None
        gate.close(entry)
    trim()
    trim()  # nothing more ended: the burst is over
    assert all(ref() is None for ref in gone)


@pytest.mark.usefixtures("no_automatic_collection")
def test_a_burst_refused_as_fast_as_it_comes_is_trimmed_though_the_table_never_changed_size() -> None:
    """Issue 37 row 8 through the API server: a tenant's half-sent bodies are answered 403 by the review-source check
    and reset within milliseconds, so between two polls 140 connections a worker come and go and the table is the
    same size at every poll (the API server's own connections). What they left must still be collected."""
    gate = ConnectionGate(GateLimits(per_source=4))
    held = [gate.open("10.0.0.1", lambda: None) for _ in range(3)]  # the API server's keep-alive connections
    held += [gate.open("10.244.0.8", lambda: None) for _ in range(4)]  # a tenant at its per-source cap
    assert all(entry is not None for entry in held)
    trim = HeapTrim(lambda: gate.ended)
    trim()
    gone = []
    for _ in range(140):
        entry = gate.open("10.244.0.7", lambda: None)
        assert entry is not None
        gone.append(weakref.ref(_Connection()))
        gate.close(entry)
    assert gate.open("10.244.0.8", lambda: None) is None  # refused at accept: ended too
    assert len(gate) == len(held)
    trim()  # 141 ended since the last poll: past eight times the threshold, at once
    assert trim.trims == 1
    assert all(ref() is None for ref in gone)
