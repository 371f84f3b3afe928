"""webhook.heap_trim: a trim once the connection table has shrunk by enough, never on every poll."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from webhook.heap_trim import HeapTrim


def test_it_trims_once_enough_connections_closed_and_the_table_is_quiet() -> None:
    table = [0]
    trim = HeapTrim(lambda: table[0], closed=10)
    for size in (50, 200, 195, 195):  # growing, then 5 closed and quiet: not enough
        table[0] = size
        trim()
    assert trim.trims == 0
    table[0] = 150  # 50 closed in all, still closing: wait for the end of the burst
    trim()
    assert trim.trims == 0
    table[0] = 140  # the burst's last ones
    trim()
    assert trim.trims == 0
    trim()  # quiet: what all of them held goes back in one trim
    assert trim.trims == 1
    trim()
    table[0] = 139  # one more close: not worth a trim
    trim()
    trim()
    assert trim.trims == 1


def test_a_burst_that_goes_on_is_trimmed_without_waiting_for_quiet() -> None:
    table = [1000]
    trim = HeapTrim(lambda: table[0], closed=10)
    trim()
    for size in range(990, 900, -10):  # 10 closed at every poll, never quiet
        table[0] = size
        trim()
    assert trim.trims == 1  # at 80 closed (8 x 10)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_malloc_trim_is_found_here() -> None:
    assert HeapTrim(lambda: 0)._trim is not None


def test_what_closed_connections_left_in_reference_cycles_is_collected_before_the_trim() -> None:
    """A closed connection's objects hold one another in cycles (asyncio's TLS protocol <-> its transport): the
    trim collects them first, even with automatic collection off (a quiet server, webhook.settled_heap)."""

    class Connection:
        def __init__(self) -> None:
            self.peer = self
            self.buffer = bytearray(64 * 1024)

    table = [100]
    trim = HeapTrim(lambda: table[0], closed=10)
    trim()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gone = [weakref.ref(Connection()) for _ in range(50)]
        assert all(ref() is not None for ref in gone)  # kept alive by their cycles alone
        table[0] = 50
        trim()
        trim()  # the table is quiet: the burst is over
        assert all(ref() is None for ref in gone)
    finally:
        if was_enabled:
            gc.enable()
