"""What gpudra's claims cost kube-scheduler, against KEP-5004's whole-device claims, on the same pods and nodes.

    python benchmarks/scheduler_cost.py [--nodes 20,80,200] [--pods 300] [--rounds 2] [--smoke]
        [--gpudra-against cluster|catalog] [--settle 5] [--limit 600]

Per cluster size, a fresh real control plane (tests/controlplane's, built by tests/controlplane/build.sh) gets N Node
objects (no kubelet) in a 2:1:1 mix of HGX H100 (8 GPUs, DynamicMIG), A100-SXM4-80GB (8 GPUs, static MIG
3g.40gb+2g.20gb+1g.10gb+1g.10gb) and L40S (4 GPUs): 113 devices a node, their ResourceSlices exactly as the NVIDIA DRA
driver publishes them (`dra.gpus`, what `gpudra inventory --catalog` prints) and the driver's DeviceClasses.

The same legacy pods (1-GPU inference, pods sized by `gpudra.io/vram`, vLLM TP=2/4/8) are translated by
`gpudra translate` two ways: `gpudra`, the shipped policies, checked against this cluster's slices (`--slices`, as the
webhook checks against the cluster it watches; `--gpudra-against catalog`: the GPU catalog, translate's default); and
`whole`, the shipped whole-gpu.yaml alone, whose claim is KEP-5004's (`exactly: {deviceClassName: gpu.nvidia.com,
count: N}`, what the scheduler builds itself from the DeviceClass's extendedResourceName). Both go through
ResourceClaimTemplates and the resourceclaim controller, so only the claims differ.

Each run submits the templates, then every pod at once, and reads kube-scheduler's CPU (utime + stime from
/proc/<pid>/stat) from just before the first pod to the last change in the bound and unschedulable counts, once every
pod is one or the other and nothing changed for `--settle` seconds. Then, where pods stayed unschedulable, a
ResourceSlice of an unrelated driver is published to requeue them all, and the CPU per scheduling attempt that follows
(kube-scheduler's `scheduler_schedule_attempts_total`) is the cost of one unschedulable retry. Each run also reports
the seconds kube-scheduler spent per extension point (`scheduler_framework_extension_point_duration_seconds`: wall
time, summed over its parallel Filter goroutines, so inflated on a busy machine; `filter_s` and `ratio_filter_s` are the
Filter pass's). After an unmeasured warm-up of 20 pods of each, runs alternate
(gpudra, whole, whole, gpudra, ...); the namespace is deleted and gone before the next. Prints one JSON object;
`sizes[*].ratio_cpu_per_pod` is gpudra's scheduler CPU per decided pod over whole's, the runs pooled.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dra.gpus import device_classes, get, node_resource_slices, synthetic_node  # noqa: E402
from tests.controlplane.cluster import ControlPlane  # noqa: E402
from tests.controlplane.kube import Kube, wait_for  # noqa: E402

RESOURCE = "resource.k8s.io/v1"
RETRY_LIMIT_S = 180.0
WARMUP_PODS = 20
_TICKS = os.sysconf("SC_CLK_TCK")
A100_LAYOUT = [("3g.40gb", 4), ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3)]
# (pool, catalog model, GPUs, MIG mode), cycled over the nodes: half HGX H100, a quarter each A100 and L40S
POOLS = [
    ("hgx-h100", "H100-SXM5-80GB", 8, "dynamic"),
    ("a100", "A100-SXM4-80GB", 8, "static"),
    ("hgx-h100", "H100-SXM5-80GB", 8, "dynamic"),
    ("l40s", "L40S", 4, "none"),
]
TP_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
# pod kind -> (nvidia.com/gpu, vLLM args, gpudra.io/vram), cycled over the pods
POD_KINDS: list[tuple[str, int, list[str], str | None]] = [
    ("infer", 1, ["--model", "meta-llama/Llama-3.1-8B-Instruct"], None),
    ("sized", 1, [], "8Gi"),
    ("infer", 1, ["--model", "Qwen/Qwen2.5-7B-Instruct"], None),
    ("sized", 1, [], "20Gi"),
    ("tp2", 2, ["--model", TP_MODEL, "--tensor-parallel-size", "2"], None),
    ("infer", 1, ["--model", "meta-llama/Llama-3.1-8B-Instruct"], None),
    ("sized", 1, [], "40Gi"),
    ("tp4", 4, ["--model", TP_MODEL, "--tensor-parallel-size", "4"], None),
    ("infer", 1, ["--model", "mistralai/Mistral-7B-Instruct-v0.3"], None),
    ("tp8", 8, ["--model", TP_MODEL, "--tensor-parallel-size", "8"], None),
]


@dataclass(frozen=True)
class Cluster:
    """The Node names and the objects the NVIDIA driver would publish for them."""

    nodes: list[str]
    slices: list[dict[str, Any]]
    classes: list[dict[str, Any]]

    @property
    def devices(self) -> int:
        return sum(len(s["spec"].get("devices", [])) for s in self.slices)


def node_slices(name: str, pool: tuple[str, str, int, str]) -> list[dict[str, Any]]:
    """One node's ResourceSlices as driver 25.12 publishes them for its pool."""
    _, model, gpus, mig = pool
    layouts = {i: list(A100_LAYOUT) for i in range(gpus)} if mig == "static" else None
    node = synthetic_node(get(model), name, gpus, mig_layouts=layouts)
    return node_resource_slices(node, mig_mode=mig, k8s_version="1.35")  # type: ignore[arg-type]


def build_cluster(count: int) -> Cluster:
    names, slices = [], []
    for i in range(count):
        pool = POOLS[i % len(POOLS)]
        name = f"{pool[0]}-{i:03d}"
        names.append(name)
        slices += node_slices(name, pool)
    return Cluster(names, slices, device_classes(RESOURCE))


def legacy_pods(count: int) -> list[dict[str, Any]]:
    """`count` unchanged device-plugin pods, the kinds of POD_KINDS in turn."""
    pods = []
    for i in range(count):
        kind, gpus, args, vram = POD_KINDS[i % len(POD_KINDS)]
        container: dict[str, Any] = {"name": "main", "image": "vllm/vllm-openai:v0.6.3"}
        if args:
            container["args"] = args
        container["resources"] = {"limits": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": str(gpus)}}
        metadata: dict[str, Any] = {"name": f"{kind}-{i:04d}", "namespace": "bench"}
        if vram:
            metadata["annotations"] = {"gpudra.io/vram": vram}
        spec = {"containers": [container], "terminationGracePeriodSeconds": 0}
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    return pods


@dataclass(frozen=True)
class Workload:
    """A translation of the pods: the ResourceClaimTemplates first, then the rewritten pods."""

    name: str
    templates: list[dict[str, Any]]
    pods: list[dict[str, Any]]

    @property
    def alternatives(self) -> int:
        """Requests and firstAvailable subrequests over all templates: what the scheduler tries per node."""
        total = 0
        for t in self.templates:
            for request in t["spec"]["spec"]["devices"]["requests"]:
                total += len(request.get("firstAvailable", [])) or 1
        return total


def translate(name: str, pods: list[dict[str, Any]], scratch: Path, argv: list[str]) -> Workload:
    """`gpudra translate -o json` of the pods with `argv`; every pod must come back translated."""
    source = scratch / f"{name}-pods.yaml"
    source.write_text(yaml.safe_dump_all(pods))
    done = subprocess.run(
        [sys.executable, "-m", "gpudra", "translate", str(source), "-o", "json", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"gpudra translate ({name}) exited {done.returncode}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    rewritten = [o for o in result["objects"] if o["spec"].get("resourceClaims")]
    if len(rewritten) != len(pods):
        raise RuntimeError(f"{name}: {len(pods) - len(rewritten)} of {len(pods)} pods not translated")
    return Workload(name, result["templates"], rewritten)


def workloads(pods: list[dict[str, Any]], cluster: Cluster, scratch: Path, against: str) -> list[Workload]:
    """gpudra's claims (shipped policies, checked against the cluster's shapes, from one node of each pool, or
    against the GPU catalog, translate's default) and whole's (whole-gpu.yaml alone)."""
    checked: list[str] = []
    if against == "cluster":
        sample = build_cluster(len(POOLS))
        dump = scratch / "cluster.json"
        dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*cluster.classes, *sample.slices]}))
        checked = ["--slices", str(dump)]
    whole_policies = scratch / "whole-gpu"
    whole_policies.mkdir(exist_ok=True)
    (whole_policies / "whole-gpu.yaml").write_text((ROOT / "policies" / "whole-gpu.yaml").read_text())
    return [
        translate("gpudra", pods, scratch, checked),
        translate("whole", pods, scratch, ["--policies", str(whole_policies)]),
    ]


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all its threads), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


class Scheduler:
    """kube-scheduler's process and its /metrics (served on its secure port to the cluster admin)."""

    def __init__(self, cp: ControlPlane) -> None:
        component = cp.components["kube-scheduler"]
        assert component.process is not None
        self.pid = component.process.pid
        port = next(a.split("=", 1)[1] for a in component.args if a.startswith("--secure-port="))
        self.url = f"https://127.0.0.1:{port}/metrics"
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE  # its self-signed serving certificate, on loopback
        self.context.load_cert_chain(str(cp.client_cert), str(cp.client_key))

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def metric(self, name: str, label: str) -> dict[str, float]:
        """One of kube-scheduler's metrics, summed by the value of `label` over its other labels."""
        with urllib.request.urlopen(self.url, context=self.context, timeout=10) as response:
            text = response.read().decode()
        found: dict[str, float] = {}
        for line in text.splitlines():
            match = re.match(rf'{name}\{{.*\b{label}="(\w+)".*\}} (\S+)$', line)
            if match:
                found[match[1]] = found.get(match[1], 0.0) + float(match[2])
        return found

    def attempts(self) -> dict[str, float]:
        """scheduler_schedule_attempts_total by result (scheduled, unschedulable, error)."""
        return self.metric("scheduler_schedule_attempts_total", "result")

    def cpu_profile(self, seconds: int) -> bytes:
        """A pprof CPU profile of the next `seconds` (kube-scheduler serves /debug/pprof with --profiling, its
        default)."""
        url = self.url.replace("/metrics", f"/debug/pprof/profile?seconds={seconds}")
        with urllib.request.urlopen(url, context=self.context, timeout=seconds + 30) as response:
            data: bytes = response.read()
        return data

    def extension_points(self) -> dict[str, float]:
        """Seconds spent in each extension point (all plugins, every cycle; wall time summed over goroutines)."""
        return self.metric("scheduler_framework_extension_point_duration_seconds_sum", "extension_point")


def in_parallel(action: Callable[[dict[str, Any]], object], objects: Iterable[dict[str, Any]]) -> None:
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in pool.map(action, objects):
            pass


def populate(kube: Kube, cluster: Cluster) -> None:
    """DeviceClasses, Ready Nodes (no kubelet) and their ResourceSlices, through the API."""
    for cls in cluster.classes:
        kube.create(cls)
    labels = {"nvidia.com/gpu.present": "true"}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: kube.create_node(n, cpu="192", memory="2Ti", labels=labels), cluster.nodes))
    in_parallel(kube.create, cluster.slices)


def decided(kube: Kube, namespace: str) -> tuple[int, int]:
    """(bound, unschedulable) pods of the namespace."""
    bound = unschedulable = 0
    for pod in kube.list("Pod", namespace):
        if pod["spec"].get("nodeName"):
            bound += 1
            continue
        for condition in pod.get("status", {}).get("conditions", []):
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                unschedulable += 1
    return bound, unschedulable


@dataclass(frozen=True)
class Settled:
    """Where a polled count came to rest: the count, when it last changed and the scheduler's CPU then."""

    seen: tuple[int, int]
    changed: float
    cpu: float


def settle(
    observe: Callable[[], tuple[int, int]], cpu: Callable[[], float], total: int, quiet: float, limit: float
) -> Settled:
    """Polls once a second until the two counts add up to `total` and neither changed for `quiet` s (or `limit` s
    went by), reading the CPU at every poll, so the quiet tail is not counted."""
    start = time.monotonic()
    last = Settled((-1, -1), start, cpu())
    while True:
        seen, now, used = observe(), time.monotonic(), cpu()
        if seen != last.seen:
            last = Settled(seen, now, used)
        if sum(last.seen) >= total and now - last.changed >= quiet:
            return last
        if now - start > limit:
            print(f"warning: {total - sum(last.seen)} of {total} undecided after {limit:.0f}s", file=sys.stderr)
            return last
        time.sleep(1.0)


def retry_cost(kube: Kube, scheduler: Scheduler, pending: int, quiet: float, limit: float) -> dict[str, Any]:
    """Requeues the unschedulable pods (a ResourceSlice of an unrelated driver appears) and measures the CPU per
    scheduling attempt that follows, until the attempts stop for `quiet` s."""
    name = f"requeue-{uuid.uuid4().hex[:6]}"
    foreign = {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": "requeue.bench.gpudra.io", "allNodes": True, "pool": {"name": name, "generation": 1,
                 "resourceSliceCount": 1}, "devices": [{"name": "d0"}]},
    }  # fmt: skip
    before_cpu, before = scheduler.cpu(), sum(scheduler.attempts().values())
    kube.create(foreign)
    try:
        rest = settle(lambda: (int(sum(scheduler.attempts().values()) - before), 0), scheduler.cpu, pending, quiet,
                      limit)  # fmt: skip
    finally:
        kube.delete("ResourceSlice", name)
    tried, cpu = rest.seen[0], rest.cpu - before_cpu
    return {"pending": pending, "attempts": tried, "cpu_s": round(cpu, 3),
            "cpu_ms_per_attempt": round(cpu / tried * 1000, 1) if tried else None}  # fmt: skip


class Profiler:
    """kube-scheduler's CPU profile in 10 s pieces while a run lasts, written to `directory` as
    <label>-<n>.pb.gz (`go tool pprof -top <files>` merges them)."""

    PIECE_S = 10

    def __init__(self, scheduler: Scheduler, directory: Path, label: str) -> None:
        self.scheduler, self.directory, self.label = scheduler, directory, label
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._collect, daemon=True)

    def __enter__(self) -> Profiler:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def _collect(self) -> None:
        piece = 0
        while not self.stop.is_set():
            data = self.scheduler.cpu_profile(self.PIECE_S)
            (self.directory / f"{self.label}-{piece:03d}.pb.gz").write_bytes(data)
            piece += 1


def submit(kube: Kube, workload: Workload, namespace: str) -> None:
    def placed(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}

    in_parallel(lambda t: kube.create(placed(t)), workload.templates)


def run_once(
    kube: Kube, scheduler: Scheduler, workload: Workload, quiet: float, limit: float, profile: Path | None = None
) -> dict[str, Any]:
    """One bulk submission of the workload in a fresh namespace, measured, then the namespace deleted and gone."""
    namespace = kube.create_namespace(f"sched-{workload.name}")
    submit(kube, workload, namespace)
    pods = [{**p, "metadata": {**p["metadata"], "namespace": namespace}} for p in workload.pods]
    profiling = (
        Profiler(scheduler, profile, f"{workload.name}-{namespace}")
        if profile is not None
        else contextlib.nullcontext()
    )
    with profiling:
        before, points = scheduler.cpu(), scheduler.extension_points()
        start = time.monotonic()
        in_parallel(kube.create, pods)
        submitted = time.monotonic() - start
        rest = settle(lambda: decided(kube, namespace), scheduler.cpu, len(pods), quiet, limit)
    (bound, unschedulable), seconds = rest.seen, rest.changed - start
    figures: dict[str, Any] = {
        "cpu_s": round(rest.cpu - before, 3),
        "pods_bound": bound,
        "pods_unschedulable": unschedulable,
        "pods_undecided": len(pods) - bound - unschedulable,  # still queued when --limit ran out
        "seconds": round(seconds, 2),
        "submit_s": round(submitted, 2),
        "extension_point_s": spent(points, scheduler.extension_points()),
    }
    if unschedulable:
        figures["retry"] = retry_cost(kube, scheduler, unschedulable, quiet, min(limit, RETRY_LIMIT_S))
    kube.delete("Namespace", namespace)
    wait_for(lambda: not namespace_exists(kube, namespace), timeout=300, what=f"namespace {namespace} gone")
    return figures


def warmup(workload: Workload) -> Workload:
    """The first WARMUP_PODS pods of the workload with their templates."""
    pods = workload.pods[:WARMUP_PODS]
    names = {c["resourceClaimTemplateName"] for p in pods for c in p["spec"].get("resourceClaims", [])}
    templates = [t for t in workload.templates if t["metadata"]["name"] in names]
    return Workload(f"{workload.name}-warmup", templates, pods)


def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The extension points' seconds between two readings, the busiest first (those under 10 ms left out)."""
    deltas = {point: after[point] - before.get(point, 0.0) for point in after}
    return {point: round(d, 3) for point, d in sorted(deltas.items(), key=lambda kv: -kv[1]) if d >= 0.01}


def namespace_exists(kube: Kube, namespace: str) -> bool:
    return any(n["metadata"]["name"] == namespace for n in kube.list("Namespace"))


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs' totals and the per-pod figures from them."""
    cpu = sum(r["cpu_s"] for r in runs)
    bound = sum(r["pods_bound"] for r in runs)
    unschedulable = sum(r["pods_unschedulable"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    decided_pods = bound + unschedulable
    retries = [r["retry"] for r in runs if r.get("retry") and r["retry"]["attempts"]]
    figures: dict[str, Any] = {
        "cpu_s": round(cpu, 3),
        "pods_bound": bound,
        "pods_unschedulable": unschedulable,
        "pods_undecided": sum(r["pods_undecided"] for r in runs),
        "cpu_ms_per_pod": round(cpu / decided_pods * 1000, 1) if decided_pods else None,
        "decided_per_s": round(decided_pods / seconds, 2) if seconds else None,
        "runs": runs,
    }
    filters = [r["extension_point_s"].get("Filter", 0.0) for r in runs]
    figures["filter_s"] = round(sum(filters), 3)
    if retries:
        attempts = sum(r["attempts"] for r in retries)
        figures["retry_cpu_ms_per_attempt"] = round(sum(r["cpu_s"] for r in retries) / attempts * 1000, 1)
    return figures


def measure_size(
    nodes: int,
    pods: list[dict[str, Any]],
    rounds: int,
    quiet: float,
    limit: float,
    against: str,
    profile: Path | None = None,
) -> dict[str, Any]:
    """A fresh control plane with `nodes` nodes; `rounds` rounds of both workloads, alternating which goes first."""
    cluster = build_cluster(nodes)
    runs: dict[str, list[dict[str, Any]]] = {"gpudra": [], "whole": []}
    with tempfile.TemporaryDirectory(prefix="gpudra-sched-") as scratch:
        loads = workloads(pods, cluster, Path(scratch), against)
    cp = ControlPlane.start()
    try:
        kube = Kube(cp.api_client())
        populate(kube, cluster)
        scheduler = Scheduler(cp)
        # A first, unmeasured run of a few pods of each workload: the scheduler's first cycles on a new cluster
        # (informers filling, CEL programs compiled) would otherwise be charged to whichever workload goes first.
        for workload in loads:
            run_once(kube, scheduler, warmup(workload), quiet, limit)
        for i in range(rounds):
            for workload in loads if i % 2 == 0 else loads[::-1]:
                runs[workload.name].append(run_once(kube, scheduler, workload, quiet, limit, profile))
    finally:
        cp.stop()
    figures: dict[str, Any] = {"nodes": nodes, "devices": cluster.devices}
    for workload in loads:
        figures[workload.name] = {**pooled(runs[workload.name]), "alternatives": workload.alternatives}
    gpudra, whole = figures["gpudra"]["cpu_ms_per_pod"], figures["whole"]["cpu_ms_per_pod"]
    figures["ratio_cpu_per_pod"] = round(gpudra / whole, 2) if gpudra and whole else None
    filters = figures["gpudra"]["filter_s"], figures["whole"]["filter_s"]
    figures["ratio_filter_s"] = round(filters[0] / filters[1], 2) if all(filters) else None
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="20,80,200", help="cluster sizes, comma-separated")
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each workload per size, alternating")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds without a change that end a run")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds a run may take at most")
    parser.add_argument(
        "--gpudra-against",
        choices=["cluster", "catalog"],
        default="cluster",
        help="what gpudra's claims are checked against: this cluster's slices (--slices) or the GPU catalog",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="write kube-scheduler's CPU profile of each run here (10 s pprof pieces; `go tool pprof -top`)",
    )
    parser.add_argument("--smoke", action="store_true", help="3 nodes, 12 pods, 1 round")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.nodes.split(",")]
    count, rounds = args.pods, args.rounds
    if args.smoke:
        sizes, count, rounds = [3], 12, 1
    pods = legacy_pods(count)
    result: dict[str, Any] = {
        "pods": count,
        "rounds": rounds,
        "whole_claims": "whole-gpu.yaml templates: exactly {deviceClassName: gpu.nvidia.com, count: N}",
        "gpudra_against": args.gpudra_against,
        "sizes": [],
    }
    for nodes in sizes:
        result["sizes"].append(
            measure_size(nodes, pods, rounds, args.settle, args.limit, args.gpudra_against, args.profile)
        )
        print(json.dumps(result["sizes"][-1]), file=sys.stderr, flush=True)  # kept if a later size is cut off
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
