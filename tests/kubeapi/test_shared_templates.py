"""`kubeapi.SharedTemplates`: identical claims share one template call; what it remembers, for how long, and never a
failure."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from dra.cancellation import Deadline, EvaluationCancelled, deadline_scope
from kubeapi import LAST_USED_RESOLUTION, ApiServerError, ApiServerUnanswered, SharedTemplates, TemplateResult


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Writer:
    """Counts calls; `active_at` is what the API server is said to hold as the template's last use."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.calls: list[tuple[str, str]] = []
        self.fail: str | None = None
        self.unanswered = False  # fail with ApiServerUnanswered (a timeout) rather than an answered error
        self.active_at: float | None = None
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        self.calls.append((namespace, template["metadata"]["name"]))
        self.entered.set()
        gate = self.gate
        if gate is not None:
            assert gate.wait(30)
        if self.fail:
            raise (ApiServerUnanswered if self.unanswered else ApiServerError)(self.fail)
        active = self.clock.now if self.active_at is None else self.active_at
        return TemplateResult(template["metadata"]["name"], namespace, created=len(self.calls) == 1, active_at=active)

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        return {"metadata": {"name": name}}

    def reachable(self) -> tuple[bool, str]:
        return True, "in memory"


def template(name: str = "gpudra-a", count: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"spec": {"devices": {"requests": [{"count": count}]}}}}


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_identical_claims_share_one_call_while_it_is_recent(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, reuse_seconds=10, clock=clock)
    assert shared.ensure_template("team-a", template()).created
    clock.now += 9
    again = shared.ensure_template("team-a", template())
    assert not again.created and again.name == "gpudra-a" and again.namespace == "team-a"
    assert len(writer.calls) == 1
    clock.now += 1  # reuse_seconds after it was ensured: asked again, in the background
    assert not shared.ensure_template("team-a", template()).created
    assert shared.renewals.wait_idle(30)
    assert len(writer.calls) == 2
    clock.now += 9  # renewed 9 s ago: from memory again
    shared.ensure_template("team-a", template())
    assert shared.renewals.wait_idle(30)
    assert len(writer.calls) == 2


def test_a_renewal_never_holds_a_review_up(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, reuse_seconds=10, clock=clock)
    shared.ensure_template("team-a", template())
    clock.now += 11
    writer.gate = threading.Event()  # the renewal's call hangs (a loaded API server) until released
    writer.entered.clear()
    for _ in range(20):  # every caller meanwhile is answered from memory, and one call renews it
        assert not shared.ensure_template("team-a", template()).created
    assert writer.entered.wait(30)
    assert len(writer.calls) == 2 and shared.waiting == 0
    writer.gate.set()
    assert shared.renewals.wait_idle(30)
    assert len(writer.calls) == 2


def test_a_renewal_without_answer_keeps_the_template_until_its_last_use_bound(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, reuse_seconds=10, clock=clock)
    shared.ensure_template("team-a", template())
    writer.fail, writer.unanswered = "could not create ResourceClaimTemplate team-a/gpudra-a within 2s", True
    clock.now += 11
    shared.ensure_template("team-a", template())
    assert shared.renewals.wait_idle(30) and len(writer.calls) == 2
    clock.now += LAST_USED_RESOLUTION - 12  # still within a minute of its creation: from memory, renewing again
    assert not shared.ensure_template("team-a", template()).created
    assert shared.renewals.wait_idle(30) and len(writer.calls) == 3
    clock.now += 1  # a minute after the last use the server holds: the review asks, and gets the failure itself
    with pytest.raises(ApiServerError, match="within 2s"):
        shared.ensure_template("team-a", template())


def test_a_renewal_refused_forgets_the_template(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, reuse_seconds=10, clock=clock)
    shared.ensure_template("team-a", template())
    writer.fail = "ResourceClaimTemplate team-a/gpudra-a exists with a different spec"
    clock.now += 11
    shared.ensure_template("team-a", template())
    assert shared.renewals.wait_idle(30) and len(writer.calls) == 2
    with pytest.raises(ApiServerError, match="different spec"):  # asked at once, not handed out for 49 s more
        shared.ensure_template("team-a", template())


def test_other_namespaces_names_and_specs_are_their_own(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, clock=clock)
    shared.ensure_template("team-a", template())
    shared.ensure_template("team-b", template())
    shared.ensure_template("team-a", template("gpudra-b"))
    shared.ensure_template("team-a", template(count=2))  # same name, another spec: never taken as the same
    assert len(writer.calls) == 4


def test_never_handed_out_past_the_last_use_the_server_holds(clock: Clock) -> None:
    # A reused template whose stamp is 55 s old is not re-stamped (KubeSideEffects); remembering it for the full
    # reuse_seconds would hand it out 65 s after its last use, past what the collector's idle floor is built on.
    writer = Writer(clock)
    writer.active_at = clock.now - (LAST_USED_RESOLUTION - 5)
    shared = SharedTemplates(writer, reuse_seconds=10, clock=clock)
    shared.ensure_template("team-a", template())
    clock.now += 4
    shared.ensure_template("team-a", template())
    assert len(writer.calls) == 1
    clock.now += 1
    shared.ensure_template("team-a", template())
    assert len(writer.calls) == 2


def test_a_failure_is_not_remembered(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, clock=clock)
    writer.fail = "API server answered 500"
    with pytest.raises(ApiServerError, match="500"):
        shared.ensure_template("team-a", template())
    writer.fail = None
    assert shared.ensure_template("team-a", template()).name == "gpudra-a"
    assert len(writer.calls) == 2


def test_an_unknown_last_use_is_not_remembered(clock: Clock) -> None:
    class Unknown(Writer):
        def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
            super().ensure_template(namespace, template)
            return TemplateResult(template["metadata"]["name"], namespace, created=True)

    writer = Unknown(clock)
    shared = SharedTemplates(writer, clock=clock)
    shared.ensure_template("team-a", template())
    shared.ensure_template("team-a", template())
    assert len(writer.calls) == 2


def _concurrent(shared: SharedTemplates, writer: Writer, callers: int) -> list[TemplateResult | BaseException]:
    """`callers` threads ask for one template while the first call is held open; their outcomes."""
    writer.gate = threading.Event()
    outcomes: list[TemplateResult | BaseException] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            result: TemplateResult | BaseException = shared.ensure_template("team-a", template())
        except BaseException as exc:
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=call) for _ in range(callers)]
    threads[0].start()
    assert writer.entered.wait(30)
    for thread in threads[1:]:
        thread.start()
    while shared.waiting < callers - 1:  # every other caller is waiting for the first call
        threading.Event().wait(0.01)
    writer.gate.set()
    for thread in threads:
        thread.join(30)
    return outcomes


def test_concurrent_callers_wait_for_the_one_call(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, clock=clock)
    outcomes = _concurrent(shared, writer, 8)
    assert len(writer.calls) == 1
    assert all(isinstance(o, TemplateResult) for o in outcomes)
    assert sum(1 for o in outcomes if isinstance(o, TemplateResult) and o.created) == 1


def test_concurrent_callers_share_its_answered_failure(clock: Clock) -> None:
    writer = Writer(clock)
    writer.fail = "could not create ResourceClaimTemplate team-a/gpudra-a: API server answered 403 Forbidden"
    shared = SharedTemplates(writer, clock=clock)
    outcomes = _concurrent(shared, writer, 5)
    assert len(writer.calls) == 1
    assert len(outcomes) == 5 and all(isinstance(o, ApiServerError) and "403" in str(o) for o in outcomes)


def test_callers_waiting_for_a_call_without_answer_ask_once_more_themselves(clock: Clock) -> None:
    writer = Writer(clock)
    writer.fail, writer.unanswered = "could not create ResourceClaimTemplate team-a/gpudra-a within 2s", True
    shared = SharedTemplates(writer, clock=clock)
    first = writer.ensure_template

    def then_answer(namespace: str, template: dict[str, Any]) -> TemplateResult:
        try:
            return first(namespace, template)
        finally:
            writer.fail, writer.gate = None, None  # the next call is answered, at once

    writer.ensure_template = then_answer  # type: ignore[method-assign]
    outcomes = _concurrent(shared, writer, 5)
    # The first caller's own call timed out: it is refused. The four that waited asked once more, one call for all.
    assert len(writer.calls) == 2
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], ApiServerUnanswered) and "within 2s" in str(refused[0])
    assert sum(1 for o in outcomes if isinstance(o, TemplateResult)) == 4


def test_callers_ask_again_only_once(clock: Clock) -> None:
    writer = Writer(clock)
    writer.fail, writer.unanswered = "could not create ResourceClaimTemplate team-a/gpudra-a within 2s", True
    shared = SharedTemplates(writer, clock=clock)
    outcomes = _concurrent(shared, writer, 3)
    assert 2 <= len(writer.calls) <= 3  # the leader's, then at most one each for the two that waited
    assert len(outcomes) == 3 and all(isinstance(o, ApiServerUnanswered) for o in outcomes)


def test_a_waiter_stops_at_its_review_deadline(clock: Clock) -> None:
    writer = Writer(clock)
    writer.gate = threading.Event()
    shared = SharedTemplates(writer, clock=clock)
    leader = threading.Thread(target=shared.ensure_template, args=("team-a", template()))
    leader.start()
    assert writer.entered.wait(30)
    deadline = Deadline(30)
    deadline.cancel()  # its review was answered already
    with deadline_scope(deadline), pytest.raises(EvaluationCancelled):
        shared.ensure_template("team-a", template())
    writer.gate.set()
    leader.join(30)
    assert len(writer.calls) == 1


def test_bounded_in_entries(clock: Clock) -> None:
    writer = Writer(clock)
    shared = SharedTemplates(writer, max_entries=2, clock=clock)
    for name in ("a", "b", "c"):
        shared.ensure_template("team-a", template(name))
    assert len(shared) == 2
    shared.ensure_template("team-a", template("a"))  # the least recently used went first
    assert len(writer.calls) == 4


def test_concurrent_namespace_misses_share_one_read() -> None:
    from kubeapi import NamespaceCache

    gate, entered = threading.Event(), threading.Event()
    reads: list[str] = []

    class Slow(Writer):
        def get_namespace(self, name: str) -> dict[str, Any] | None:
            reads.append(name)
            entered.set()
            assert gate.wait(30)
            if name == "unreachable":
                raise ApiServerError("could not read Namespace unreachable within 2s")
            return None if name == "gone" else {"metadata": {"name": name, "labels": {"a": "b"}}}

    cache = NamespaceCache(Slow(Clock()))
    for name in ("team-a", "gone", "unreachable"):
        gate.clear()
        entered.clear()
        results: list[Any] = []

        def get(name: str = name, results: list[Any] = results) -> None:
            try:
                results.append(cache.get(name))
            except ApiServerError as exc:
                results.append(str(exc))

        threads = [threading.Thread(target=get) for _ in range(5)]
        threads[0].start()
        assert entered.wait(30)
        for thread in threads[1:]:
            thread.start()
        while cache.waiting < 4:
            threading.Event().wait(0.01)
        gate.set()
        for thread in threads:
            thread.join(30)
        assert len(results) == 5 and all(r == results[0] for r in results), results
    assert reads == ["team-a", "gone", "unreachable"]


@pytest.mark.parametrize(("call_seconds", "calls"), [(60.0, 1), (1.0, 2)])
def test_a_waiter_asks_again_only_with_room_for_a_whole_call_before_its_deadline(
    clock: Clock, call_seconds: float, calls: int
) -> None:
    writer = Writer(clock)
    writer.fail, writer.unanswered = "could not create ResourceClaimTemplate team-a/gpudra-a within 2s", True
    writer.gate = threading.Event()
    shared = SharedTemplates(writer, clock=clock, call_seconds=call_seconds)
    led: list[BaseException] = []

    def lead() -> None:
        try:
            shared.ensure_template("team-a", template())
        except ApiServerError as exc:
            led.append(exc)

    leader = threading.Thread(target=lead)
    leader.start()
    assert writer.entered.wait(30)
    outcome: list[BaseException] = []

    def wait() -> None:
        with deadline_scope(Deadline(30)):  # 30 s left: no room for a 60 s call, room for a 1 s one and 1 s spare
            try:
                shared.ensure_template("team-a", template())
            except ApiServerError as exc:
                outcome.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    while shared.waiting < 1:
        threading.Event().wait(0.01)
    writer.gate.set()
    leader.join(30)
    waiter.join(30)
    # Either way it ends with the API server's reason, not a bare deadline: shared at once, or after its own call.
    assert len(writer.calls) == calls and len(led) == 1
    assert len(outcome) == 1 and isinstance(outcome[0], ApiServerUnanswered) and "within 2s" in str(outcome[0])
