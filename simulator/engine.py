"""The event-driven engine: arrivals, departures, a pending queue with retries, node drains.

Two protocols:
- `replay`: pods arrive at their trace times and leave after their durations; a pod that does not fit waits
  in a FIFO queue and is retried whenever capacity is freed (departure, node back from a drain). A strategy
  with a `reconfigure` hook (device plugin) may drain nodes to change their MIG layout: their pods are evicted
  and requeued, the node is down for the drain time. Preemption (off by default) evicts lower-priority pods.
  A strategy kube-scheduler places (`queue_model = "kube"`: dra-whole, gpudra) is queued as kube-scheduler
  queues pods instead (`simulator.scheduling.queue`: priority then timestamp, backoff, unschedulable pods moved
  by the events that can help them), and a leaving pod's devices are freed `device_release_delay` after its CPU
  and memory.
- `fgd`: the FGD paper's protocol as its simulator runs it: the workload tuned to `load` x the cluster's GPUs
  (`simulator.tuning`, the peer's 1.3 by default), pods arriving one by one in that order and never leaving;
  a pod that does not fit fails and is not retried.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .cluster import ClusterSpec
from .frag import TypicalPod, typical_pods
from .kpis import KPI_LOADS, Recorder, cluster_fragmentation, gpu_occupancy
from .scheduling import SchedulingQueue
from .state import Allocation, ClusterState
from .strategies import Strategy
from .tuning import TUNE_RATIO, tuned_workload
from .workload import SimPod

__all__ = ["EngineConfig", "StopRule", "fgd_workload", "run"]

Progress = Callable[[int, int], None]
RECONFIGURE_EVERY = 300.0  # seconds between reconfiguration checks while the queue is unchanged


class StopRule(Protocol):
    """Ends a replay run early once what the caller measures is decided (`gpudra plan`: a target already missed).

    The engine reports each pod's first placement and its wait, and asks after every time step whether to stop,
    given the pods still waiting (with the time each was queued); the recorder of a stopped run holds only what
    happened until then."""

    def placed(self, pod: SimPod, wait: float) -> None: ...

    def stop(self, now: float, waiting: Sequence[tuple[SimPod, float]]) -> bool: ...


@dataclass(frozen=True, slots=True)
class EngineConfig:
    protocol: str = "replay"  # replay | fgd
    load: float = TUNE_RATIO  # fgd: the workload's GPU demand as a multiple of the cluster's GPUs
    seed: int = 0
    preemption: bool = False
    frag_samples: int = 100  # fragmentation samples per run (each costs one pass over node classes)
    stop: StopRule | None = None  # replay: end the run as soon as this rule says so


def fgd_workload(pods: list[SimPod], total_gpus: int, load: float, seed: int) -> list[SimPod]:
    """The tuned workload (`simulator.tuning`), each pod named by its position so repeated draws stay distinct."""
    tuned = tuned_workload(pods, total_gpus * 1000, seed, load)
    return [replace(p, name=f"{p.name}#{i}", arrival=float(i), duration=None) for i, p in enumerate(tuned)]


def run(
    cluster: ClusterSpec,
    pods: list[SimPod],
    strategy: Strategy,
    config: EngineConfig | None = None,
    progress: Progress | None = None,
    typical: tuple[TypicalPod, ...] | None = None,
) -> Recorder:
    """Simulate `pods` on `cluster` under `strategy`; returns the recorded series and counters."""
    config = config or EngineConfig()
    started = time.perf_counter()
    state = ClusterState(cluster)
    if config.protocol == "fgd":
        pods = fgd_workload(pods, cluster.total_gpus, config.load, config.seed)
    elif config.protocol != "replay":
        raise ValueError(f"protocol must be replay or fgd (got {config.protocol!r})")
    typical = typical if typical is not None else typical_pods(pods)
    strategy.prepare(state, pods)
    rec = Recorder(strategy=strategy.name, total_gpus=cluster.total_gpus, protocol=config.protocol)
    rec.pods_total = len(pods)
    for node in cluster.nodes:
        if node.gpu is not None and node.gpu_count:
            rec.model_gpus[node.gpu.key] = rec.model_gpus.get(node.gpu.key, 0) + node.gpu_count
    sim = _Sim(state, strategy, rec, config, typical, progress, len(pods))
    if config.protocol == "fgd":
        sim.run_fgd(pods)
    elif getattr(strategy, "queue_model", "fifo") == "kube":
        sim.run_replay_kube(pods)
    else:
        sim.run_replay(pods)
    rec.wall_seconds = time.perf_counter() - started
    return rec


class _Sim:
    def __init__(
        self,
        state: ClusterState,
        strategy: Strategy,
        rec: Recorder,
        config: EngineConfig,
        typical: tuple[TypicalPod, ...],
        progress: Progress | None,
        total: int,
    ) -> None:
        self.state, self.strategy, self.rec, self.config = state, strategy, rec, config
        self.typical = typical
        self.progress = progress
        self.total = total
        self.frag_cache: dict[int, tuple[float, int]] = {}
        self.events: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.pending: list[tuple[SimPod, float]] = []
        self.first_arrival: dict[str, float] = {}
        self.done = 0

    # -- shared -------------------------------------------------------------------------------------------
    def place(self, pod: SimPod, now: float) -> Allocation | None:
        choice = self.strategy.choose(self.state, pod)
        if choice is None:
            return None
        alloc = self.state.apply(pod, choice[0], choice[1], now)
        rec = self.rec
        if pod.name not in rec.placed:
            rec.placed.add(pod.name)
            wait = now - self.first_arrival.get(pod.name, now)
            rec.note_pod(pod, wait, self.state.node_model[alloc.node])
            if self.config.stop is not None:
                self.config.stop.placed(pod, wait)
            if alloc.nvlink_ok is not None:
                rec.multi_gpu += 1
                rec.multi_gpu_nvlink += int(alloc.nvlink_ok)
        rec.partitions_created += alloc.partitions_created
        return alloc

    def frag(self) -> float:
        return cluster_fragmentation(self.state, self.typical, self.frag_cache)

    def tick(self) -> None:
        self.done += 1
        if self.progress is not None and (self.done % 256 == 0 or self.done == self.total):
            self.progress(self.done, self.total)

    # -- fgd protocol -------------------------------------------------------------------------------------
    def run_fgd(self, pods: list[SimPod]) -> None:
        gpus = max(1, self.state.total_gpus)
        step = max(1, len(pods) // max(1, self.config.frag_samples))
        arrived = 0.0
        failed = 0
        loads = list(KPI_LOADS)  # fragmentation is also sampled at each KPI load, where the summary reads it
        for i, pod in enumerate(pods):
            arrived += pod.gpu_request
            if self.place(pod, float(i)) is None:
                failed += 1
                self.rec.note_pod(pod, 0.0, None)  # no time in this protocol: the wait is not read
            pct = round(arrived / gpus * 100)
            at_load = bool(loads) and pct >= loads[0]
            while loads and pct >= loads[0]:
                loads.pop(0)
            last = i == len(pods) - 1
            frag = self.frag() if (i % step == 0 or last or at_load) else None
            self.rec.sample(self.state, float(i), failed, failed, frag, arrived / gpus)
            self.tick()
        self.rec.pending_at_end = failed
        self.rec.window = (0.0, float(len(pods)))
        self.rec.occupancy = gpu_occupancy(self.state)

    # -- replay protocol ----------------------------------------------------------------------------------
    def push(self, when: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, kind, self.seq, payload))

    def run_replay(self, pods: list[SimPod]) -> None:
        DEPART, UP, ARRIVE = 0, 1, 2
        for pod in pods:
            self.push(pod.arrival, ARRIVE, pod)
        if not pods:
            return
        start, end = pods[0].arrival, pods[-1].arrival
        self.rec.window = (start, end)
        frag_every = (end - start) / max(1, self.config.frag_samples) if end > start else float("inf")
        next_frag = start
        next_reconfigure = start
        now = start
        while self.events:
            now = self.events[0][0]
            freed = False
            waiting = len(self.pending)
            while self.events and self.events[0][0] == now:
                _, kind, _, payload = heapq.heappop(self.events)
                if kind == DEPART:
                    alloc: Allocation = payload
                    node = self.state.nodes[alloc.node]
                    if node.pods.get(alloc.pod.name) is alloc:  # not evicted meanwhile
                        self.state.release(alloc)
                        freed = True
                elif kind == UP:
                    node_index, mode, layout = payload
                    node = self.state.nodes[node_index]
                    node.set_mig(mode, layout)
                    self.state.bring_up(node)
                    freed = True
                else:
                    pod = payload
                    self.first_arrival.setdefault(pod.name, now)
                    self.tick()
                    if not self.try_place(pod, now):
                        self.pending.append((pod, now))
            if freed and self.pending:
                self.retry(now)
            if self.pending and (len(self.pending) != waiting or now >= next_reconfigure):
                self.maybe_reconfigure(now)
                next_reconfigure = now + RECONFIGURE_EVERY
                if self.config.preemption:
                    self.preempt(now)
            frag = None
            if now >= next_frag:
                frag = self.frag()
                next_frag = now + frag_every
            gpu_pending = sum(1 for p, _ in self.pending if p.is_gpu)
            self.rec.sample(self.state, now, len(self.pending), gpu_pending, frag)
            if self.config.stop is not None and self.config.stop.stop(now, self.pending):
                break
        self.rec.pending_at_end = len(self.pending)
        for pod, _ in self.pending:
            if pod.name not in self.rec.placed:
                self.rec.note_pod(pod, now - self.first_arrival.get(pod.name, now), None)

    def run_replay_kube(self, pods: list[SimPod]) -> None:
        """The replay protocol with kube-scheduler's queue; devices freed `device_release_delay` after CPU/memory."""
        DEPART, DEVICES_FREE, ARRIVE = 0, 1, 2
        profile = getattr(self.strategy, "profile", None)
        queue = SchedulingQueue(*((profile.initial_backoff, profile.max_backoff) if profile else ()))
        delay = float(getattr(self.strategy, "device_release_delay", 0.0))
        for pod in pods:
            self.push(pod.arrival, ARRIVE, pod)
        if not pods:
            return
        start, end = pods[0].arrival, pods[-1].arrival
        self.rec.window = (start, end)
        frag_every = (end - start) / max(1, self.config.frag_samples) if end > start else float("inf")
        next_frag = start
        now = start
        while self.events:
            now = self.events[0][0]
            moved = False
            while self.events and self.events[0][0] == now:
                _, kind, _, payload = heapq.heappop(self.events)
                if kind == ARRIVE:
                    self.first_arrival.setdefault(payload.name, now)
                    self.tick()
                    queue.add(payload, now)
                    continue
                alloc: Allocation = payload
                node = self.state.nodes[alloc.node]
                if node.pods.get(alloc.pod.name) is not alloc:
                    continue
                if kind == DEPART and delay > 0 and alloc.parts:
                    self.state.release_compute(alloc)
                    self.push(now + delay, DEVICES_FREE, alloc)
                else:
                    self.state.release(alloc, compute=kind == DEPART or not alloc.parts)
                moved = True
            if moved:
                queue.move_all(now)
            queue.flush_leftover(now)
            self.schedule(queue, now)
            frag = None
            if now >= next_frag:
                frag = self.frag()
                next_frag = now + frag_every
            waiting = queue.waiting()
            self.rec.sample(self.state, now, len(waiting), sum(1 for p, _ in waiting if p.is_gpu), frag)
            if self.config.stop is not None and self.config.stop.stop(now, waiting):
                break
        waiting = queue.waiting()
        self.rec.pending_at_end = len(waiting)
        for pod, _ in waiting:
            if pod.name not in self.rec.placed:
                self.rec.note_pod(pod, now - self.first_arrival.get(pod.name, now), None)

    def schedule(self, queue: SchedulingQueue, now: float) -> None:
        """Pop and try every queued pod; a pod whose demand failed since the cluster last changed fails again."""
        failed: set[Any] = set()
        key = self.strategy.demand_key
        while (item := queue.pop()) is not None:
            pod = item.pod
            demand = key(pod)
            if demand in failed or not self.try_place(pod, now):
                failed.add(demand)
                queue.failed(item, now)
            else:
                failed.clear()

    def try_place(self, pod: SimPod, now: float) -> bool:
        alloc = self.place(pod, now)
        if alloc is None:
            return False
        if pod.duration is not None:
            self.push(now + pod.duration, 0, alloc)
        return True

    def retry(self, now: float) -> None:
        """Retry the queue in order; a demand that failed once in this pass is not tried again."""
        failed: set[Any] = set()
        still: list[tuple[SimPod, float]] = []
        for pod, since in self.pending:
            if pod.shape in failed or not self.try_place(pod, now):
                failed.add(pod.shape)
                still.append((pod, since))
        self.pending = still

    def maybe_reconfigure(self, now: float) -> None:
        hook = getattr(self.strategy, "reconfigure", None)
        if hook is None:
            return
        drain = float(getattr(self.strategy, "drain_seconds", 0.0))
        for change in hook(self.state, [p for p, _ in self.pending], now):
            node = self.state.nodes[change.node]
            for alloc in list(node.pods.values()):
                self.state.release(alloc)
                self.rec.evicted_pods += 1
                self.pending.append((alloc.pod, now))
            self.state.take_down(node, now + drain)
            self.rec.mig_reconfigurations += 1
            self.rec.drained_node_seconds += drain
            self.push(now + drain, 1, (change.node, change.mode, change.layout))

    def preempt(self, now: float) -> None:
        """Evict the lowest-priority pods of one node so the first pending pod of higher priority fits."""
        for index, (pod, _) in enumerate(self.pending):
            for node in self.state.nodes:
                victims = sorted(
                    (a for a in node.pods.values() if a.pod.priority < pod.priority), key=lambda a: a.pod.priority
                )
                if not victims or node.down_until:
                    continue
                evicted: list[Allocation] = []
                for victim in victims:
                    self.state.release(victim)
                    evicted.append(victim)
                    choice = self.strategy.choose(self.state, pod)
                    if choice is not None and choice[0] == node.index:
                        break
                else:
                    for victim in evicted:  # no luck: put them back where they were
                        back = self.state.apply(victim.pod, node.index, _canonical(self.state, victim), victim.started)
                        if victim.pod.duration is not None:
                            self.push(victim.started + victim.pod.duration, 0, back)
                    continue
                del self.pending[index]
                if not self.try_place(pod, now):
                    self.pending.insert(index, (pod, now))
                for victim in evicted:
                    self.rec.evicted_pods += 1
                    self.pending.append((victim.pod, now))
                return


def _canonical(state: ClusterState, alloc: Allocation) -> tuple[Any, ...]:
    """`alloc`'s parts with GPU indices expressed in the node's current canonical order."""
    node = state.nodes[alloc.node]
    position = {gpu: k for k, gpu in enumerate(node.canon)}
    return tuple(replace(p, gpu=position[p.gpu]) for p in alloc.parts)
