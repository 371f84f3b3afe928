"""The connection gate's rules, on its own: per-source caps and rates, who is evicted first, trust."""

from __future__ import annotations

import pytest

from webhook.gate import ConnectionGate, Entry, GateLimits, State


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Conns:
    """Connections opened through a gate, remembering which ones the gate aborted."""

    def __init__(self, gate: ConnectionGate) -> None:
        self.gate = gate
        self.aborted: list[str] = []

    def open(self, source: str, name: str = "") -> Entry | None:
        return self.gate.open(source, lambda: self.aborted.append(name or source))


def test_an_untrusted_source_is_capped_and_other_sources_are_not_affected() -> None:
    conns = _Conns(ConnectionGate(GateLimits(max_connections=100, per_source=3)))
    assert all(conns.open("10.0.0.9") for _ in range(3))
    assert conns.open("10.0.0.9") is None
    assert conns.gate.stats.refused_per_source == 1
    assert conns.open("10.0.0.1") is not None
    assert conns.aborted == []
    assert conns.gate.stats.opened == 4  # the refused one is not counted


def test_a_trusted_source_is_not_capped_per_source() -> None:
    conns = _Conns(ConnectionGate(GateLimits(max_connections=100, per_source=3)))
    conns.gate.trust("10.0.0.1")
    assert all(conns.open("10.0.0.1") for _ in range(10))
    assert conns.gate.held_by("10.0.0.1") == 10


def test_a_verified_certificate_trusts_its_source() -> None:
    gate = ConnectionGate(GateLimits(max_connections=100, per_source=1))
    entry = gate.open("10.0.0.1", lambda: None)
    assert entry is not None and not gate.trusted("10.0.0.1")
    gate.verify(entry)
    assert entry.verified and gate.trusted("10.0.0.1")
    assert gate.open("10.0.0.1", lambda: None) is not None


def test_an_untrusted_source_that_reopens_too_fast_is_refused_until_its_bucket_refills() -> None:
    clock = _Clock()
    gate = ConnectionGate(GateLimits(max_connections=100, opens_per_second=10, open_burst=5), clock=clock)
    for _ in range(5):
        entry = gate.open("10.0.0.9", lambda: None)
        assert entry is not None
        gate.close(entry)
    assert gate.open("10.0.0.9", lambda: None) is None
    assert gate.stats.refused_open_rate == 1
    clock.now += 0.1  # one token back
    assert gate.open("10.0.0.9", lambda: None) is not None


def test_near_the_limit_the_largest_untrusted_sources_idle_connection_goes_first() -> None:
    conns = _Conns(ConnectionGate(GateLimits(max_connections=16, per_source=100, headroom=2)))
    conns.gate.trust("apiserver")
    api = [conns.open("apiserver", f"api{i}") for i in range(4)]
    for entry in api:
        assert entry is not None
        conns.gate.set_state(entry, State.IDLE)
    for i in range(6):
        assert conns.open("tenant-a", f"a{i}") is not None
    for i in range(4):
        assert conns.open("tenant-b", f"b{i}") is not None
    assert len(conns.gate) == 14 and conns.aborted == []  # 16 - 2: the soft limit is reached
    assert conns.open("apiserver", "api-new") is not None
    assert conns.aborted == ["a0"]  # tenant-a holds the most; its oldest goes
    assert len(conns.gate) == 14
    assert conns.gate.stats.evicted == {"untrusted-idle": 1}


def test_a_busy_untrusted_connection_goes_only_at_the_hard_limit_and_a_trusted_one_last() -> None:
    conns = _Conns(ConnectionGate(GateLimits(max_connections=4, per_source=100, headroom=0)))
    conns.gate.trust("apiserver")
    idle_api = conns.open("apiserver", "api-idle")
    assert idle_api is not None
    conns.gate.set_state(idle_api, State.IDLE)
    for i in range(3):
        entry = conns.open("tenant", f"t{i}")
        assert entry is not None
        conns.gate.set_state(entry, State.BUSY)
    assert conns.open("apiserver", "api2") is not None
    assert conns.aborted == ["t0"]
    # Only busy tenants and trusted connections left: busy untrusted ones go before a trusted idle one.
    assert conns.open("apiserver", "api3") is not None
    assert conns.aborted == ["t0", "t1"]


def test_the_table_refuses_a_new_connection_when_nothing_can_be_evicted() -> None:
    conns = _Conns(ConnectionGate(GateLimits(max_connections=2, per_source=100, headroom=0)))
    conns.gate.trust("apiserver")
    for name in ("a", "b"):
        entry = conns.open("apiserver", name)
        assert entry is not None
        conns.gate.set_state(entry, State.BUSY)
    assert conns.open("tenant") is None
    assert conns.gate.stats.refused_full == 1 and conns.aborted == []


def test_close_is_idempotent_and_frees_the_source_count() -> None:
    gate = ConnectionGate(GateLimits(max_connections=10, per_source=1))
    entry = gate.open("10.0.0.9", lambda: None)
    assert entry is not None
    gate.close(entry)
    gate.close(entry)
    assert len(gate) == 0 and gate.held_by("10.0.0.9") == 0
    gate.set_state(entry, State.IDLE)  # a late state change of a closed entry is ignored
    assert len(gate) == 0
    assert gate.open("10.0.0.9", lambda: None) is not None


@pytest.mark.parametrize(
    "limits",
    [
        {"max_connections": 0},
        {"per_source": 0},
        {"opens_per_second": 0},
        {"open_burst": 0},
        {"headroom": -1},
    ],
)
def test_limits_are_checked(limits: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        GateLimits(**limits)  # type: ignore[arg-type]


def test_every_connection_that_ends_is_counted_once_closed_evicted_or_refused() -> None:
    """`ended` (what webhook.heap_trim counts) grows by each close, eviction and refusal, never twice for one."""
    gate = ConnectionGate(GateLimits(max_connections=8, per_source=2, headroom=0))
    conns = _Conns(gate)
    first, second = conns.open("10.0.0.2"), conns.open("10.0.0.2")
    assert first is not None and second is not None and gate.ended == 0
    assert conns.open("10.0.0.2") is None  # past the per-source cap
    assert gate.ended == 1
    gate.close(first)
    gate.close(first)  # idempotent
    assert gate.ended == 2
    for i in range(7):
        assert conns.open(f"10.0.1.{i}") is not None
    assert len(gate) == 8
    assert conns.open("10.0.2.1") is not None  # at the limit: an idle untrusted connection is evicted for it
    assert len(conns.aborted) == 1 and gate.ended == 3
