"""kube-scheduler's own state from its /metrics, for a whole-run replay that waits until the scheduler is idle:
the pods in each queue (`scheduler_pending_pods`, set as the queue changes), the events its informers have handled
(`scheduler_event_handling_duration_seconds_count`, observed once a handler returned) and its scheduling attempts by
result (`scheduler_schedule_attempts_total`). kube-scheduler has no watch on these; they are read on demand."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import urllib3

from dra.errors import GpudraError

__all__ = ["MetricsError", "SchedulerMetrics", "SchedulerState", "parse_metrics"]

_SAMPLE = re.compile(r"^(?P<name>[a-z_:]+)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class MetricsError(GpudraError):
    """kube-scheduler's /metrics could not be read or lacks the series a whole run waits on."""


@dataclass(frozen=True, slots=True)
class SchedulerState:
    """Pods per scheduling queue (active, backoff, unschedulable, gated, ...), events handled by label
    (`AssignedPodDelete`, `ResourceClaimAdd`, ...) and attempts by result (scheduled, unschedulable, error)."""

    queues: dict[str, int] = field(default_factory=dict)
    handled: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)

    def handled_of(self, event: str) -> int:
        """Events of `event` handled (`ResourceClaimAdd` also counts as `resource.k8s.io/ResourceClaimAdd`, the
        label kube-scheduler 1.37 gives events of API groups)."""
        return sum(n for label, n in self.handled.items() if label == event or label.endswith(f"/{event}"))

    def idle_with(self, unschedulable: int) -> bool:
        """No pod to try (active, backoff, gated all empty) and exactly `unschedulable` pods parked as unschedulable:
        a pod being tried or bound is in no queue, so with the replay's pending pods all parked none is in flight."""
        busy = sum(n for queue, n in self.queues.items() if queue != "unschedulable")
        return busy == 0 and self.queues.get("unschedulable", 0) == unschedulable


def parse_metrics(text: str) -> SchedulerState:
    """The series `SchedulerState` holds, from Prometheus text; `MetricsError` when `scheduler_pending_pods` is
    missing (not kube-scheduler's /metrics)."""
    queues: dict[str, int] = {}
    handled: dict[str, int] = {}
    attempts: dict[str, int] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels = match["name"], dict(_LABEL.findall(match["labels"]))
        value = int(float(match["value"]))
        if name == "scheduler_pending_pods":
            queues[labels.get("queue", "")] = value
        elif name == "scheduler_event_handling_duration_seconds_count":
            handled[labels.get("event", "")] = value
        elif name == "scheduler_schedule_attempts_total":
            result = labels.get("result", "")
            attempts[result] = attempts.get(result, 0) + value
    if not queues:
        raise MetricsError("kube-scheduler's /metrics has no scheduler_pending_pods series")
    return SchedulerState(queues, handled, attempts)


class SchedulerMetrics:
    """Reads kube-scheduler's /metrics at `url` as the admin (client certificate `cert`, `key`), verifying the
    scheduler's self-signed serving certificate `serving`."""

    def __init__(self, url: str, *, cert: Path, key: Path, serving: Path) -> None:
        self.url = f"{url}/metrics"
        self.pool = urllib3.PoolManager(
            cert_reqs="CERT_REQUIRED", ca_certs=str(serving), cert_file=str(cert), key_file=str(key), maxsize=1
        )

    def read(self) -> SchedulerState:
        try:
            response = self.pool.request("GET", self.url, timeout=30.0)
        except urllib3.exceptions.HTTPError as exc:
            raise MetricsError(f"GET {self.url}: {type(exc).__name__}: {exc}") from exc
        if response.status != 200:
            raise MetricsError(f"GET {self.url}: HTTP {response.status}: {response.data[:300]!r}")
        return parse_metrics(response.data.decode(errors="replace"))

    def close(self) -> None:
        self.pool.clear()
