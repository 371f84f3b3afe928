"""The workload replayed through a real control plane, one event at a time, each event settled before the next.

An arrival creates the pod (and its claim template) and waits, on watches, until the pod is bound with its claims
allocated or the scheduler marked it Unschedulable; a pod it cannot place leaves the cluster and waits in the
replay's own FIFO queue, so that the scheduler never holds more than one pending pod and each decision is made in a
state the replay knows exactly. A departure deletes the pod and waits until its claims are gone too (the scheduler
frees devices when it sees the claim go, after the pod's CPU and memory), then the queue is retried in order, a shape
that failed once in a pass not again (as the simulator's engine does). Before each decision the model is asked in
the same state: the Nodes, slices and bound pods with their allocated claims.
"""

from __future__ import annotations

import heapq
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from dra.errors import GpudraError
from kubeapi import ListWatch, ListWatchSource, LoopEvent

from ..cluster import ClusterSpec, NodeSpec
from ..workload import SimPod
from .api import Api, ApiError, Collection, PathListWatch
from .controlplane import ControlPlane
from .objects import RESOURCE_API, Admitted, admit, device_class_objects, node_object

if TYPE_CHECKING:
    from policyengine import PolicySet

__all__ = [
    "Bound", "LiveCluster", "RealDecision", "Replayed", "ReplayError", "Snapshot", "Step", "allocation_results",
    "claim_names", "pod_name", "replay",
]  # fmt: skip

SETTLE_TIMEOUT = 180.0  # seconds one event may take to settle on a loaded machine before the replay gives up
NAMESPACE = "default"
T = TypeVar("T")
ARRIVE, DEPART = 1, 0  # a departure at the same time as an arrival goes first, as in the simulator's engine


class ReplayError(GpudraError):
    """The control plane did not reach the state the replay waited for; names what, with the components' logs."""


@dataclass(frozen=True, slots=True)
class Bound:
    """A pod the real scheduler bound: the Pod and its allocated ResourceClaims, as the API server holds them."""

    pod: dict[str, Any]
    claims: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The cluster a decision is made in: Nodes, ResourceSlices and the bound pods (in binding order)."""

    nodes: tuple[dict[str, Any], ...]
    slices: tuple[dict[str, Any], ...]
    bound: tuple[Bound, ...]


@dataclass(frozen=True, slots=True)
class RealDecision:
    """What kube-scheduler did with one pod: the node (None: Unschedulable), the devices of its claims in results
    order, and the scheduler's message when it could not place it."""

    pod: str
    sim: SimPod
    admitted: Admitted
    node: str | None
    devices: tuple[str, ...] = ()
    message: str = ""


@dataclass(frozen=True, slots=True)
class Step(Generic[T]):
    """One decision: what the model answered beforehand, and what the real scheduler did."""

    model: T
    real: RealDecision


def pod_name(name: str, attempt: int) -> str:
    """A DNS-1123 name for attempt `attempt` of the simulated pod `name`."""
    base = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:50] or "pod"
    return f"{base}-{attempt}"


def _scheduled_false(pod: dict[str, Any]) -> str | None:
    """The scheduler's message when it marked `pod` Unschedulable (PodScheduled=False, reason Unschedulable)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            if condition.get("reason") == "Unschedulable":
                return str(condition.get("message") or "Unschedulable")
    return None


def claim_names(pod: dict[str, Any]) -> list[str]:
    status = pod.get("status") or {}
    names = [
        str(s["resourceClaimName"]) for s in status.get("resourceClaimStatuses") or [] if s.get("resourceClaimName")
    ]
    extended = status.get("extendedResourceClaimStatus") or {}
    if extended.get("resourceClaimName"):
        names.append(str(extended["resourceClaimName"]))
    return names


def allocation_results(claim: dict[str, Any]) -> list[dict[str, Any]] | None:
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        return None
    return list((allocation.get("devices") or {}).get("results") or [])


class LiveCluster:
    """The replay's handle on the control plane: creates objects, and keeps the namespace's pods and claims current
    from watches so that it can wait for a state without polling."""

    def __init__(
        self,
        cp: ControlPlane,
        namespace: str = NAMESPACE,
        timeout: float = SETTLE_TIMEOUT,
        source: Callable[[str], ListWatchSource] | None = None,
    ) -> None:
        """`source(path)` lists and watches a collection (by default a `PathListWatch` on the control plane)."""
        self.cp = cp
        self.namespace = namespace
        self.timeout = timeout
        self.api = Api(cp.server, ca=cp.ca_bundle, cert=cp.client_cert, key=cp.client_key)
        self.changed = threading.Condition()  # notified at each change of `pods` or `claims` and each failure
        self.pods = Collection(self.changed)
        self.claims = Collection(self.changed)
        self.nodes: list[dict[str, Any]] = []
        self.slices: list[dict[str, Any]] = []
        self.templates: set[str] = set()
        self._pods_path = f"/api/v1/namespaces/{namespace}/pods"
        self._claims_path = f"/apis/{RESOURCE_API}/namespaces/{namespace}/resourceclaims"
        source = source or (lambda path: PathListWatch(self.api, path))
        watched = (("pods", self._pods_path, self.pods), ("resourceclaims", self._claims_path, self.claims))
        self._loops = {
            kind: ListWatch(source(path), store, kind, name=f"watch-{kind}", on_event=self._told)
            for kind, path, store in watched
        }

    # -- set-up -----------------------------------------------------------------------------------------
    def install(self, spec: ClusterSpec, slices_of: Callable[[NodeSpec], list[dict[str, Any]]]) -> None:
        """DeviceClasses, one Ready Node per node of `spec` and its ResourceSlices (`slices_of(node_spec)`), then the
        watches on pods and claims."""
        for device_class in device_class_objects():
            self.api.create_if_absent(f"/apis/{RESOURCE_API}/deviceclasses", device_class)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for node_spec in spec.nodes:
            obj = node_object(node_spec, now)
            self.api.create("/api/v1/nodes", obj)
            # Status through its subresource, as a kubelet writes it; TaintNodesByCondition taints a new Node
            # not-ready, and the node lifecycle controller that would lift it does not run (no kubelet heartbeats).
            self.api.patch(f"/api/v1/nodes/{node_spec.name}/status", {"status": obj["status"]})
            self.nodes.append(self.api.patch(f"/api/v1/nodes/{node_spec.name}", {"spec": {"taints": None}}))
            if node_spec.gpu_count:
                for item in slices_of(node_spec):
                    self.slices.append(self.api.create(f"/apis/{RESOURCE_API}/resourceslices", item))
        self.follow()

    def follow(self) -> None:
        """Start the watches on pods and claims; return once both are listed."""
        for loop in self._loops.values():
            loop.start()
        self.wait(lambda: all(loop.status().synced for loop in self._loops.values()) or None, "pods and claims listed")

    def close(self) -> None:
        for loop in self._loops.values():
            loop.stop()
        self.api.close()

    # -- waiting ----------------------------------------------------------------------------------------
    def _told(self, event: LoopEvent, detail: str) -> None:
        with self.changed:
            self.changed.notify_all()

    def wait(self, check: Callable[[], T | None], what: str) -> T:
        """Waits for watch events until `check()` returns something (not None) and returns it; `ReplayError` when a
        list or watch fails (a watch too old relists and goes on), or naming `what` after `timeout` seconds."""
        deadline = time.monotonic() + self.timeout
        with self.changed:
            while True:
                found = check()
                if found is not None:
                    return found
                for kind, loop in self._loops.items():
                    status = loop.status()
                    if status.failing:
                        raise ReplayError(f"watch on {kind} failed: {status.last_error}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ReplayError(f"timed out after {self.timeout:.0f}s waiting for {what}\n{self.cp.logs(20)}")
                self.changed.wait(left)

    # -- one pod ----------------------------------------------------------------------------------------
    def submit(self, admitted: Admitted) -> None:
        for template in admitted.templates:
            name = template["metadata"]["name"]
            if name not in self.templates:
                path = f"/apis/{RESOURCE_API}/namespaces/{self.namespace}/resourceclaimtemplates"
                self.api.create_if_absent(path, template)
                self.templates.add(name)
        self.api.create(self._pods_path, admitted.pod)

    def outcome(self, name: str, claims: int) -> tuple[str | None, tuple[str, ...], str] | None:
        """(node, devices, "") once `name` is bound with its `claims` claims allocated and reserved for it,
        (None, (), message) once it is Unschedulable, else None."""
        pod = self.pods.get(name)
        if pod is None:
            return None
        node = pod["spec"].get("nodeName")
        if not node:
            message = _scheduled_false(pod)
            return None if message is None else (None, (), message)
        names = claim_names(pod)
        if len(names) < claims:
            return None
        devices: list[str] = []
        uid = pod["metadata"]["uid"]
        for claim_name in names:
            claim = self.claims.get(claim_name)
            results = None if claim is None else allocation_results(claim)
            if claim is None or results is None:
                return None
            if uid not in {r.get("uid") for r in (claim.get("status") or {}).get("reservedFor") or []}:
                return None
            devices.extend(str(r["device"]) for r in results)
        return node, tuple(devices), ""

    def bound(self, name: str) -> Bound:
        pod = self.pods[name]
        return Bound(pod, tuple(self.claims[n] for n in claim_names(pod)))

    def delete(self, name: str) -> None:
        """Delete pod `name` now, without waiting."""
        self.api.delete_now(f"{self._pods_path}/{name}")

    def create_claim(self, claim: dict[str, Any]) -> None:
        self.api.create(self._claims_path, claim)

    def remove(self, name: str, claims: list[str]) -> None:
        """Delete pod `name` now and wait until it and the claims `claims` are gone (or hold no devices)."""
        self.delete(name)

        def gone() -> bool | None:
            if name in self.pods:
                return None
            for claim_name in claims:
                claim = self.claims.get(claim_name)
                if claim is not None and allocation_results(claim) is not None:
                    return None
            return True

        self.wait(gone, f"pod {name} and its claims {claims} to be deleted")


@dataclass(frozen=True, slots=True)
class Replayed(Generic[T]):
    """The decisions in order, how many pods the policies denied and how many left (deleted) meanwhile, and the
    seconds spent asking the model."""

    steps: list[Step[T]]
    denied: int
    departures: int
    model_seconds: float
    # GPU pods: simulated seconds from arrival to the real scheduler's binding (or to the last event, for pods the
    # replay still held when the arrivals ran out), with their GPUs per pod
    waits: tuple[tuple[int, float, bool], ...] = ()
    starts: dict[str, float] = field(default_factory=dict)  # simulated pod -> the second the real scheduler bound it


@dataclass(slots=True)
class _Replay(Generic[T]):
    live: LiveCluster
    policies: PolicySet
    ask: Callable[[Snapshot, Admitted], T]
    progress: Callable[[int, int], None] | None
    steps: list[Step[T]] = field(default_factory=list)
    bound: dict[str, tuple[Bound, SimPod]] = field(default_factory=dict)  # cluster pod name -> binding
    queue: list[SimPod] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    events: list[tuple[float, int, int, Any]] = field(default_factory=list)
    denied: int = 0
    departures: int = 0
    model_seconds: float = 0.0
    seq: int = 0
    now: float = 0.0
    waits: list[tuple[int, float, bool]] = field(default_factory=list)  # (GPUs, seconds pending, placed)
    starts: dict[str, float] = field(default_factory=dict)

    def push(self, when: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, kind, self.seq, payload))

    def snapshot(self) -> Snapshot:
        return Snapshot(tuple(self.live.nodes), tuple(self.live.slices), tuple(b for b, _ in self.bound.values()))

    def attempt(self, sim: SimPod, now: float) -> bool:
        """One decision: the model's answer in the current state, then the real scheduler's; True when bound."""
        attempt = self.attempts[sim.name] = self.attempts.get(sim.name, 0) + 1
        name = pod_name(sim.name, attempt)
        admitted = admit(sim, self.policies, name, self.live.namespace)
        if admitted is None:
            self.denied += 1
            return True  # never placed, never queued: the webhook would have refused it
        before = self.snapshot()
        self.live.submit(admitted)
        started = time.perf_counter()
        answer = self.ask(before, admitted)  # the model works while the real scheduler does
        self.model_seconds += time.perf_counter() - started
        node, devices, message = self.live.wait(
            lambda: self.live.outcome(name, len(admitted.claims)), f"pod {name} to be bound or marked Unschedulable"
        )
        self.steps.append(Step(answer, RealDecision(name, sim, admitted, node, devices, message)))
        if node is None:  # out of the cluster, into the replay's queue: one pending pod at a time
            self.live.remove(name, [])
            return False
        self.bound[name] = (self.live.bound(name), sim)
        self.starts.setdefault(sim.name, now)
        if sim.is_gpu:
            self.waits.append((sim.num_gpu, now - sim.arrival, True))
        if sim.duration is not None:
            self.push(now + sim.duration, DEPART, name)
        return True

    def depart(self, name: str) -> None:
        binding, _ = self.bound.pop(name)
        self.live.remove(name, [c["metadata"]["name"] for c in binding.claims])
        self.departures += 1

    def retry(self, now: float) -> None:
        failed: set[Any] = set()
        still: list[SimPod] = []
        for sim in self.queue:
            key = (sim.shape, sim.workload_class)
            if key in failed or not self.attempt(sim, now):
                failed.add(key)
                still.append(sim)
        self.queue = still

    def run(self, pods: list[SimPod]) -> None:
        for sim in pods:
            self.push(sim.arrival, ARRIVE, sim)
        arrived = 0
        while self.events and arrived < len(pods):
            now, kind, _, payload = heapq.heappop(self.events)
            self.now = now
            if kind == DEPART:
                self.depart(payload)
                if self.queue:
                    self.retry(now)
                continue
            arrived += 1
            if not self.attempt(payload, now):
                self.queue.append(payload)
            if self.progress is not None:
                self.progress(arrived, len(pods))
        self.waits.extend((sim.num_gpu, self.now - sim.arrival, False) for sim in self.queue if sim.is_gpu)


def replay(
    cp: ControlPlane,
    spec: ClusterSpec,
    pods: list[SimPod],
    *,
    policies: PolicySet,
    slices_of: Callable[[NodeSpec], list[dict[str, Any]]],
    ask: Callable[[Snapshot, Admitted], T],
    progress: Callable[[int, int], None] | None = None,
) -> Replayed[T]:
    """Replay `pods` (arrival order, departures after their durations) on `cp`, made into `spec`'s cluster. Ends
    after the last arrival has been decided."""
    live = LiveCluster(cp)
    try:
        live.install(spec, slices_of)
        run: _Replay[T] = _Replay(live, policies, ask, progress)
        run.run(sorted(pods, key=lambda p: p.arrival))
        return Replayed(run.steps, run.denied, run.departures, run.model_seconds, tuple(run.waits), dict(run.starts))
    except ApiError as exc:
        raise ReplayError(f"{exc}\n{cp.logs(20)}") from exc
    finally:
        live.close()
