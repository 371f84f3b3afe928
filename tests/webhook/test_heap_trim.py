"""webhook.heap_trim: a trim once the connection table has shrunk by enough, never on every poll."""

from __future__ import annotations

import sys

import pytest

from webhook.heap_trim import HeapTrim


def test_it_trims_after_enough_connections_closed_and_not_before() -> None:
    table = [0]
    trim = HeapTrim(lambda: table[0], closed=10)
    for size in (50, 200, 195):  # growing, then 5 closed: not yet
        table[0] = size
        trim()
    assert trim.trims == 0 or trim._trim is None
    table[0] = 150  # 50 closed since the peak of 200
    trim()
    table[0] = 149  # one more: the peak was reset to 150 at the trim
    trim()
    expected = 1 if trim._trim is not None else 0
    assert trim.trims == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_malloc_trim_is_found_here() -> None:
    assert HeapTrim(lambda: 0)._trim is not None
