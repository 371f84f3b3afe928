"""The review-source check (webhook.review_sources): a tenant pod's address may not send reviews; nothing else
changes."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from webhook.connections import _TrustOnAnswer
from webhook.gate import ConnectionGate, GateLimits
from webhook.review_sources import ReviewSources, canonical_address


class Lookups:
    """A pod index by address, counting the calls; `gate` holds every call until set (for the single-flight test)."""

    def __init__(self, pods: dict[str, list[tuple[str, str]]]) -> None:
        self.pods = pods
        self.calls: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.error: Exception | None = None

    def __call__(self, address: str) -> list[tuple[str, str]]:
        self.calls.append(address)
        self.gate.wait(30)
        if self.error is not None:
            raise self.error
        return self.pods.get(address, [])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def verdict(sources: ReviewSources, source: str) -> Any:
    return asyncio.run(sources.verdict(source))


def test_a_tenant_pods_address_is_refused_naming_the_pod() -> None:
    sources = ReviewSources(Lookups({"10.1.0.7": [("team-a", "attacker")]}))
    refused = verdict(sources, "10.1.0.7")
    assert not refused.allowed
    assert "team-a/attacker" in refused.reason and "kube-system" in refused.reason
    assert sources.counts == {"allowed": 0, "refused": 1, "unchecked": 0}


def test_addresses_no_tenant_pod_holds_are_allowed() -> None:
    lookups = Lookups({"10.1.0.9": [("kube-system", "konnectivity-agent-x")]})
    sources = ReviewSources(lookups)
    assert verdict(sources, "10.1.0.9").allowed  # the API server's tunnel agent (GKE, AKS)
    assert verdict(sources, "192.168.0.10").allowed  # a control-plane node: no pod-network pod holds it
    assert sources.counts["allowed"] == 2 and sources.counts["refused"] == 0


def test_the_trusted_namespaces_are_configurable() -> None:
    pods = {"10.1.0.9": [("konnectivity", "agent")]}
    assert not verdict(ReviewSources(Lookups(pods)), "10.1.0.9").allowed
    assert verdict(ReviewSources(Lookups(pods), trusted_namespaces=["konnectivity"]), "10.1.0.9").allowed


def test_an_address_held_by_a_trusted_and_a_tenant_pod_is_refused() -> None:
    pods = {"10.1.0.9": [("kube-system", "agent"), ("team-b", "x")]}
    assert not verdict(ReviewSources(Lookups(pods)), "10.1.0.9").allowed


def test_an_ipv4_mapped_peer_is_looked_up_by_its_ipv4_address() -> None:
    lookups = Lookups({"10.1.0.7": [("team-a", "p")]})
    assert canonical_address("::ffff:10.1.0.7") == "10.1.0.7"
    assert canonical_address("unknown") == "unknown"
    assert not verdict(ReviewSources(lookups), "::ffff:10.1.0.7").allowed
    assert lookups.calls == ["10.1.0.7"]


def test_verdicts_are_remembered_and_looked_up_again_when_they_expire() -> None:
    clock = Clock()
    lookups = Lookups({"10.1.0.7": [("team-a", "p")]})
    sources = ReviewSources(lookups, allowed_seconds=300, refused_seconds=30, clock=clock)

    async def run() -> None:
        for _ in range(5):
            assert not (await sources.verdict("10.1.0.7")).allowed
            assert (await sources.verdict("10.2.0.1")).allowed
        assert lookups.calls == ["10.1.0.7", "10.2.0.1"]
        clock.now += 31  # a refused address may be another pod's now: looked up again; an allowed one is not
        lookups.pods.clear()
        assert (await sources.verdict("10.1.0.7")).allowed
        assert (await sources.verdict("10.2.0.1")).allowed
        assert lookups.calls == ["10.1.0.7", "10.2.0.1", "10.1.0.7"]
        clock.now += 300
        await sources.verdict("10.2.0.1")
        assert lookups.calls[-1] == "10.2.0.1" and len(lookups.calls) == 4

    asyncio.run(run())


def test_connections_waiting_on_one_address_share_one_lookup() -> None:
    lookups = Lookups({"10.1.0.7": [("team-a", "p")]})
    lookups.gate.clear()
    sources = ReviewSources(lookups)

    async def run() -> list[bool]:
        waiting = [asyncio.create_task(sources.verdict("10.1.0.7")) for _ in range(50)]
        while not lookups.calls:  # the one lookup has started in its thread
            await asyncio.sleep(0.01)
        waiting[0].cancel()  # a connection that goes away does not cancel the lookup for the others
        lookups.gate.set()
        done = await asyncio.gather(*waiting[1:])
        return [v.allowed for v in done]

    assert asyncio.run(run()) == [False] * 49
    assert lookups.calls == ["10.1.0.7"]


def test_a_failed_lookup_lets_the_source_through_unchecked_and_is_retried_soon() -> None:
    clock = Clock()
    lookups = Lookups({})
    lookups.error = OSError("connection refused")
    sources = ReviewSources(lookups, unchecked_seconds=5, clock=clock)
    first = verdict(sources, "10.1.0.7")
    assert first.allowed and not first.checked and "OSError" in first.reason
    assert sources.counts["unchecked"] == 1
    clock.now += 6
    lookups.error = None
    lookups.pods["10.1.0.7"] = [("team-a", "p")]
    assert not verdict(sources, "10.1.0.7").allowed


def test_a_lookup_past_its_deadline_lets_the_source_through_unchecked() -> None:
    lookups = Lookups({"10.1.0.7": [("team-a", "p")]})
    lookups.gate.clear()
    sources = ReviewSources(lookups, lookup_seconds=0.05)
    try:
        late = verdict(sources, "10.1.0.7")
    finally:
        lookups.gate.set()
    assert late.allowed and not late.checked and "Timeout" in late.reason


def test_the_remembered_verdicts_are_bounded() -> None:
    sources = ReviewSources(Lookups({}))

    async def run() -> None:
        for i in range(5000):
            await sources.verdict(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")

    asyncio.run(run())
    assert len(sources._known) <= 4096


# -- the connection's wrapper: a tenant pod's review is answered 403 and its connection closed ---------------------


def _post(app: Any, sources: ReviewSources | None, source: str, gate: ConnectionGate) -> tuple[int, dict[str, Any]]:
    reached: list[bool] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    wrapped = _TrustOnAnswer(inner, gate, source, sources)
    asyncio.run(wrapped({"type": "http", "method": "POST", "path": "/mutate"}, receive, send))
    status = sent[0]["status"]
    headers = dict(sent[0]["headers"])
    body = json.loads(sent[1]["body"])
    if status == 403:
        assert headers[b"connection"] == b"close" and not reached
    return status, body


def test_a_review_from_a_tenant_pod_is_refused_before_admission_and_its_source_stays_untrusted() -> None:
    gate = ConnectionGate(GateLimits())
    sources = ReviewSources(Lookups({"10.1.0.7": [("team-a", "attacker")]}))
    status, body = _post(None, sources, "10.1.0.7", gate)
    assert status == 403 and "team-a/attacker" in body["error"]
    assert not gate.trusted("10.1.0.7")
    status, _ = _post(None, sources, "192.168.0.10", gate)  # the API server's address
    assert status == 200 and gate.trusted("192.168.0.10")


def test_without_the_check_any_source_is_answered() -> None:
    gate = ConnectionGate(GateLimits())
    status, _ = _post(None, None, "10.1.0.7", gate)
    assert status == 200


@pytest.mark.parametrize("value", ["off", "yes", ""])
def test_serve_refuses_an_unknown_review_sources_mode(value: str) -> None:
    import typer

    from gpudra.commands.serve import ServeOptions, serve_settings

    with pytest.raises(typer.BadParameter, match="--review-sources"):
        serve_settings(ServeOptions(review_sources=value))
    settings = serve_settings(ServeOptions(review_source_namespaces=["konnectivity", "kube-system"]))
    assert settings.review_sources == "auto" and settings.review_source_namespaces == ("konnectivity", "kube-system")


def test_a_refusal_is_known_without_a_lookup_while_it_is_remembered() -> None:
    """What webhook.connections reads at accept: no lookup of its own, only verdicts already reached."""
    clock = Clock()
    lookups = Lookups({"10.1.0.7": [("team-a", "p")]})
    sources = ReviewSources(lookups, refused_seconds=30, clock=clock)
    assert not sources.refused("10.1.0.7") and lookups.calls == []  # never looked up: not known
    verdict(sources, "10.1.0.7")
    verdict(sources, "10.2.0.1")
    assert sources.refused("10.1.0.7") and sources.refused("::ffff:10.1.0.7")
    assert not sources.refused("10.2.0.1")  # allowed
    clock.now += 31
    assert not sources.refused("10.1.0.7")  # expired: the address may be another pod's now
    assert lookups.calls == ["10.1.0.7", "10.2.0.1"]
