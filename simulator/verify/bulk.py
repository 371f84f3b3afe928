"""The whole sample through a real control plane in bulk, kube-scheduler's own queue deciding: events in simulated
time order, every event of one second applied at once (departures first: the pods deleted; then arrivals: the pods
created, as gpudra's webhook admitted them), then the cluster left to settle before the clock moves on.

Settled means the API server and kube-scheduler agree that nothing is left to do: every departed pod and its claims
gone (or deallocated), every pod either bound with its claims allocated or marked Unschedulable, and on the
scheduler's /metrics no pod in its active, backoff or gated queues and exactly the pods still pending parked as
unschedulable (so none is being tried or bound), after its informers handled every deletion and binding and every
claim the replay's watch saw. Claim deallocations reach the scheduler on the claim informer, whose updates cannot be
counted: after departures a barrier claim (used by no pod) is created, and the scheduler having handled as many claim
additions as the watch saw claims means it handled everything on that informer before the barrier.

A pod bound while the clock stands at t started at t, and leaves at t + its duration. The run ends once the last
arrival has settled: pods still pending then are unplaced (`timeline.figures` cuts the model's run there too)."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cluster import ClusterSpec, NodeSpec
from ..workload import SimPod
from .api import ApiError
from .controlplane import ControlPlane
from .objects import RESOURCE_API, Admitted, admit
from .replay import ARRIVE, DEPART, LiveCluster, ReplayError, allocation_results, claim_names, pod_name
from .schedmetrics import SchedulerMetrics, SchedulerState

if TYPE_CHECKING:
    from policyengine import PolicySet

__all__ = ["WholeRun", "run_whole"]

POLL_FIRST, POLL_MOST = 0.01, 0.2  # seconds between reads of kube-scheduler's /metrics while it works


@dataclass(frozen=True, slots=True)
class WholeRun:
    """One bulk run: the second each pod first ran (by simulated pod name), the pods the policies denied, the
    departures, the cut (last arrival), kube-scheduler's attempts by result, the clock steps and the wall time."""

    starts: dict[str, float]
    denied: tuple[str, ...]
    departures: int
    cut: float
    attempts: dict[str, int]
    steps: int
    wall_seconds: float
    metrics_reads: int = 0  # reads of kube-scheduler's /metrics until it settled, over every step


def barrier_claim(index: int, namespace: str) -> dict[str, Any]:
    """A ResourceClaim no pod uses: its addition, once kube-scheduler handled it, orders the claim informer."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": {"name": f"gpudra-barrier-{index}", "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    }


@dataclass(slots=True)
class _Bulk:
    live: LiveCluster
    metrics: SchedulerMetrics
    policies: PolicySet
    progress: Callable[[int, int], None] | None
    pending: dict[str, tuple[SimPod, Admitted]] = field(default_factory=dict)  # cluster name -> not yet bound
    running: dict[str, list[str]] = field(default_factory=dict)  # cluster name -> its claims
    starts: dict[str, float] = field(default_factory=dict)
    denied: list[str] = field(default_factory=list)
    events: list[tuple[float, int, int, Any]] = field(default_factory=list)
    seq: int = 0
    deleted_bound: int = 0
    bound_total: int = 0
    barriers: int = 0
    departures: int = 0
    steps: int = 0
    reads: int = 0

    def push(self, when: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, kind, self.seq, payload))

    def apply(self, now: float) -> None:
        """Every event at `now`: departures first, then arrivals; then settle and note the pods bound meanwhile."""
        leaving: list[tuple[str, list[str]]] = []
        while self.events and self.events[0][0] == now:
            _, kind, _, payload = heapq.heappop(self.events)
            if kind == DEPART:
                claims = self.running.pop(payload)
                self.live.delete(payload)
                leaving.append((payload, claims))
                self.deleted_bound += 1
                self.departures += 1
            else:
                self.arrive(payload)
        if leaving:
            self.live.wait(lambda: self.gone(leaving), f"{len(leaving)} departed pods and their claims to go")
            self.barriers += 1
            barrier = barrier_claim(self.barriers, self.live.namespace)
            self.live.create_claim(barrier)
            name = barrier["metadata"]["name"]
            self.live.wait(lambda: True if name in self.live.claims else None, f"barrier claim {name}")
        self.settle(now)
        self.steps += 1

    def arrive(self, sim: SimPod) -> None:
        name = pod_name(sim.name, 1)
        admitted = admit(sim, self.policies, name, self.live.namespace)
        if admitted is None:
            self.denied.append(sim.name)
            return
        self.live.submit(admitted)
        self.pending[name] = (sim, admitted)

    def gone(self, leaving: list[tuple[str, list[str]]]) -> bool | None:
        for name, claims in leaving:
            if name in self.live.pods:
                return None
            for claim_name in claims:
                claim = self.live.claims.get(claim_name)
                if claim is not None and allocation_results(claim) is not None:
                    return None
        return True

    def decided(self) -> dict[str, str | None] | None:
        """Each pending pod -> its node once bound (None: marked Unschedulable); None while one is undecided."""
        out: dict[str, str | None] = {}
        for name, (_, admitted) in self.pending.items():
            found = self.live.outcome(name, len(admitted.claims))
            if found is None:
                return None
            out[name] = found[0]
        return out

    def quiet(self, state: SchedulerState, unschedulable: int) -> bool:
        return (
            state.idle_with(unschedulable)
            and state.handled_of("AssignedPodDelete") >= self.deleted_bound
            and state.handled_of("AssignedPodAdd") >= self.bound_total + (len(self.pending) - unschedulable)
            and state.handled_of("ResourceClaimAdd") >= self.live.claims.seen
        )

    def settle(self, now: float) -> None:
        deadline = time.monotonic() + self.live.timeout
        poll = POLL_FIRST
        while True:
            outcome = self.live.wait(self.decided, f"{len(self.pending)} pending pods to be bound or Unschedulable")
            unschedulable = sum(1 for node in outcome.values() if node is None)
            state = self.metrics.read()
            self.reads += 1
            if self.quiet(state, unschedulable) and self.decided() == outcome:
                break
            if time.monotonic() > deadline:
                raise ReplayError(
                    f"kube-scheduler did not settle at simulated second {now:g} within {self.live.timeout:.0f}s: "
                    f"queues {state.queues}, {unschedulable} pods Unschedulable, handled {state.handled}, "
                    f"{self.live.claims.seen} claims seen\n{self.live.cp.logs(20)}"
                )
            time.sleep(poll)  # kube-scheduler's queues have no watch: read again shortly
            poll = min(POLL_MOST, poll * 2)
        for name, node in outcome.items():
            if node is None:
                continue
            sim, _ = self.pending.pop(name)
            self.starts[sim.name] = now
            self.bound_total += 1
            self.running[name] = claim_names(self.live.pods[name])
            if sim.duration is not None:
                self.push(now + sim.duration, DEPART, name)

    def run(self, pods: list[SimPod]) -> float:
        for sim in pods:
            self.push(sim.arrival, ARRIVE, sim)
        cut = max(p.arrival for p in pods)
        arrived = 0
        while self.events and self.events[0][0] <= cut:
            now = self.events[0][0]
            before = len(self.pending) + len(self.starts) + len(self.denied)
            self.apply(now)
            arrived += len(self.pending) + len(self.starts) + len(self.denied) - before
            if self.progress is not None:
                self.progress(arrived, len(pods))
        return cut


def run_whole(
    cp: ControlPlane,
    spec: ClusterSpec,
    pods: list[SimPod],
    *,
    policies: PolicySet,
    slices_of: Callable[[NodeSpec], list[dict[str, Any]]],
    progress: Callable[[int, int], None] | None = None,
) -> WholeRun:
    """Run `pods` (arrival order, departures after their durations) on `cp`, made into `spec`'s cluster, in bulk
    until the last arrival has settled. `ReplayError` (with the components' logs) when the cluster does not settle
    or the API server refuses something."""
    if not pods:
        raise ReplayError("a whole run needs at least one pod")
    if cp.scheduler_cert is None:
        raise ReplayError("the control plane has no kube-scheduler to read the metrics of")
    started = time.perf_counter()
    live = LiveCluster(cp)
    metrics = SchedulerMetrics(cp.scheduler_url, cert=cp.client_cert, key=cp.client_key, serving=cp.scheduler_cert)
    try:
        live.install(spec, slices_of)
        bulk = _Bulk(live, metrics, policies, progress)
        cut = bulk.run(sorted(pods, key=lambda p: p.arrival))
        attempts = metrics.read().attempts
        return WholeRun(
            dict(bulk.starts), tuple(bulk.denied), bulk.departures, cut, attempts, bulk.steps,
            round(time.perf_counter() - started, 1), bulk.reads,
        )  # fmt: skip
    except ApiError as exc:
        raise ReplayError(f"{exc}\n{cp.logs(20)}") from exc
    finally:
        metrics.close()
        live.close()
