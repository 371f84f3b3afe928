"""Admission latency and throughput of `gpudra serve`, against a no-op echo on the same server, in one run.

    python benchmarks/admission.py [--requests 4000] [--concurrency 32] [--workers 2]
        [--through-apiserver [--no-loopback] --pods 200 --rounds 3 --deployments 10 --replicas 100
         --steady-rate 150 --steady-seconds 60 [--steady-gated]]

Starts `gpudra serve --enable-echo` over HTTPS on loopback (`--workers` processes), drives `/echo` (an allowed
AdmissionReview, same stack: uvicorn, review parsing, the decision threads) and `/mutate` (the shipped policies) with
the same client, bounded in count and time, and prints JSON: p50/p99 latency and reviews/s, and the ratios to echo,
for two `/mutate` loads: `unique_pods` (every review a distinct pod, name and a label varied, so the webhook's
decision cache cannot help) and `replicas` (Deployment-style generateName replicas of a few pod templates, which
arrive identical at mutating admission and so hit the cache).
With `--through-apiserver` it also creates pods through the real kube-apiserver built by
tests/controlplane/build.sh, with the webhook registered as shipped (side effects through that API server): bursts of
`--pods` concurrent creations without the webhook (namespaces it skips), with it, and of the pods it makes created
directly, over `--rounds` rounds; then `--deployments` Deployments scaled to `--replicas` at once (see
`through_apiserver`). `through_apiserver.p99_ratio` is the webhook's p99 over the legacy pods' without it, with the
webhook registered at a loopback URL (kube-apiserver offers HTTP/2 there, and `gpudra serve`, which speaks HTTP/1.1
only since issue 37, declines it); `through_apiserver.http1.p99_ratio` is the same webhook at this machine's
non-loopback address, to which kube-apiserver speaks HTTP/1.1 as it does to a webhook behind a Service (a new TLS
connection per concurrent review past the 25 it keeps). The two differ in the address only.
`through_apiserver.echo` is the floor under both: the same pods through the same configuration and server at `/echo`,
which admits them unchanged, so its `p99_ratio` is what calling any webhook costs on this machine;
`through_apiserver.echo_patch` the same at `/echo-patch`, which adds one annotation and decides nothing: what any
mutating webhook costs here, the API server's own work after a patch included; `through_apiserver.map` the native peer,
a MutatingAdmissionPolicy (benchmarks/peers/mutatingadmissionpolicy.yaml) doing the subset of the translation a policy
can, in kube-apiserver's process; `through_apiserver.kyverno` the same subset as a Kyverno ClusterPolicy
(benchmarks/peers/kyverno-clusterpolicy.yaml) served by Kyverno's admission controller, run out of cluster at the
address gpudra is called at (tests/controlplane/kyverno_admission.py), only where the opt-in
`bash tests/controlplane/build_kyverno.sh` has built it (else `{"skipped": <why and that command>}`).
`through_apiserver.steady`: `--steady-rate` pods/s for `--steady-seconds`, without
the webhook, then to `/echo-patch` at the address gpudra is called at (`steady.echo_patch`, the floor), then through
gpudra as deployed, with kube-apiserver's own histogram of the webhook's duration (`server_side_p99_ms`, and
`server_side_p99_over_echo_patch`). No kubelet or node runs the pods here, so kube-scheduler retries every pending pod
that carries a claim for the whole load, on the cores the API server and the webhook share; `--steady-gated` gives
every steady pod, of every kind, a scheduling gate, which admission does not look at, so that the load measures
admission without those retries (`steady.gated`).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import copy
import itertools
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peers import admission_policy, kyverno_policy  # noqa: E402
from benchmarks.peers.apiserver_metrics import histogram  # noqa: E402
from pki import write_dev_certificates  # noqa: E402
from webhook.app import ECHO_PATCH_ANNOTATION  # noqa: E402
from webhook.review import pod_review  # noqa: E402


def _outward_address() -> str | None:
    """This machine's address on its default route (no packet is sent), or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
        except OSError:
            return None
        address = str(s.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _templates() -> list[dict[str, Any]]:
    names = ["pod-legacy-vram.yaml", "pod-legacy-1gpu.yaml", "pod-vllm-tp4.yaml", "pod-mig-legacy.yaml"]
    return [yaml.safe_load((ROOT / "examples" / n).read_text()) for n in names]


def unique_pods(count: int, start: int = 0) -> list[dict[str, Any]]:
    """`count` pods, all different: the example shapes with a distinct name and `bench/seq` label each (numbered
    from `start`, so that loads numbered apart never share a pod)."""
    templates = _templates()
    pods = []
    for i in range(start, start + count):
        pod = copy.deepcopy(templates[i % len(templates)])
        pod["metadata"]["name"] = f"bench-{i}"
        pod["metadata"].setdefault("labels", {})["bench/seq"] = str(i)
        pods.append(pod)
    return pods


def replica_pods(count: int) -> list[dict[str, Any]]:
    """`count` pods from four Deployments: generateName, no name, identical within a Deployment."""
    templates = _templates()
    pods = []
    for i in range(count):
        pod = copy.deepcopy(templates[i % len(templates)])
        pod["metadata"].pop("name", None)
        pod["metadata"]["generateName"] = f"bench-deploy-{i % len(templates)}-"
        pods.append(pod)
    return pods


def _review(pod: dict[str, Any], uid: str) -> bytes:
    return pod_review(pod, uid=uid)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _drive(
    url: str, bodies: list[bytes], concurrency: int, ctx: ssl.SSLContext, limit_s: float, new_connections: bool = False
) -> dict[str, Any]:
    import aiohttp

    latencies: list[float] = []
    failures = 0
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    deadline = time.monotonic() + limit_s
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=ctx, force_close=new_connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal failures
            while not queue.empty() and time.monotonic() < deadline:
                body = queue.get_nowait()
                started = time.perf_counter()
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                    payload = await resp.read()
                latencies.append(time.perf_counter() - started)
                failures += not _allowed(resp.status, payload)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - began
    return _load_figures(latencies, failures, wall)


def _allowed(status: int, payload: bytes) -> bool:
    return status == 200 and b'"allowed":true' in payload


def _load_figures(latencies: list[float], failures: int, wall: float) -> dict[str, Any]:
    return {
        "reviews": len(latencies),
        "failures": failures,
        "p50_ms": round(_percentile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 3),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3),
        "reviews_per_s": round(len(latencies) / wall, 1),
    }


async def _drive_at_rate(
    url: str, bodies: list[bytes], rate: float, connections: int, ctx: ssl.SSLContext, limit_s: float
) -> tuple[dict[str, Any], list[float]]:
    """An open loop: review i is due at i/rate, sent then whatever the earlier ones are doing, and its latency counts
    from when it was due, so a server that falls behind pays for the queue it built (no coordinated omission). The
    `connections` are opened before the clock starts, by the first `connections` bodies (so that none of the timed
    ones was decided before); a review due while all are busy waits for one, counted."""
    import aiohttp

    latencies: list[float] = []
    failures = 0
    connector = aiohttp.TCPConnector(limit=connections, ssl=ctx)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def post(body: bytes) -> bool:
            async with session.post(url, data=body, headers=headers) as resp:
                payload = await resp.read()
            return _allowed(resp.status, payload)

        async def one(body: bytes, due: float) -> None:
            nonlocal failures
            ok = await post(body)
            latencies.append(time.perf_counter() - due)
            failures += not ok

        await asyncio.gather(*(post(body) for body in bodies[:connections]))  # open them all
        began = time.perf_counter() + 0.01
        stop = began + limit_s
        sends: list[asyncio.Task[None]] = []
        lag = 0.0
        for i, body in enumerate(bodies[connections:]):
            due = began + i / rate
            now = time.perf_counter()
            if due >= stop:
                break
            if due > now:
                await asyncio.sleep(due - now)
            else:
                lag = max(lag, now - due)
            sends.append(asyncio.ensure_future(one(body, due)))
        await asyncio.gather(*sends)
        wall = time.perf_counter() - began
    figures = _load_figures(latencies, failures, wall)
    # How late the client itself sent its latest review: where this nears the p99, the client is the bottleneck.
    figures["client_max_send_lag_ms"] = round(lag * 1000, 3)
    return figures, latencies


class _Server:
    def __init__(
        self, workdir: Path, kubeconfig: Path | None = None, workers: int = 1, outward: str | None = None
    ) -> None:
        """`outward`: also listen on, and be certified for, this non-loopback address."""
        self.certs = workdir / "certs"
        write_dev_certificates(self.certs, ["localhost"], ip_addresses=["127.0.0.1", *([outward] if outward else [])])
        self.port = _free_port()
        args = [
            sys.executable,
            "-m",
            "gpudra",
            "serve",
            "--enable-echo",
            "--host",
            "0.0.0.0" if outward else "127.0.0.1",
            "--port",
            str(self.port),
            "--cert",
            str(self.certs / "tls.crt"),
            "--key",
            str(self.certs / "tls.key"),
            "--workers",
            str(workers),
        ]
        if kubeconfig is not None:
            args += ["--kubeconfig", str(kubeconfig)]
        self.log = (workdir / "serve.log").open("w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        self._wait()

    def _wait(self) -> None:
        import urllib.request

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/healthz", context=self.ctx, timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gpudra serve did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


# Where each fixed-rate run's pods are numbered from: past every other load's, and apart from each other.
_FRESH_PODS = itertools.count(10**9, 10**7)


def _at_rate(
    base: str, server: _Server, rate: float, requests: int, connections: int, limit_s: float
) -> dict[str, Any]:
    """/echo and /mutate on unique pods at one offered rate, twice each and alternating (the machine's load drifts);
    every /mutate run gets pods no earlier load used, so none is a decision-cache hit."""
    count = min(requests, max(1, int(rate * limit_s)))
    runs: dict[str, list[dict[str, Any]]] = {"/echo": [], "/mutate": []}
    pooled: dict[str, list[float]] = {"/echo": [], "/mutate": []}
    for path in ["/echo", "/mutate", "/echo", "/mutate"]:
        start = next(_FRESH_PODS)
        pods = unique_pods(connections + count, start)
        bodies = [_review(pod, f"uid-f{start + i}") for i, pod in enumerate(pods)]
        before = _cpu_seconds(server.proc.pid)
        figures, latencies = asyncio.run(_drive_at_rate(base + path, bodies, rate, connections, server.ctx, limit_s))
        used = _cpu_seconds(server.proc.pid) - before
        runs[path].append({**figures, "server_cpu_us_per_review": round(used / max(1, figures["reviews"]) * 1e6)})
        pooled[path] += latencies

    def summary(path: str) -> dict[str, Any]:
        return {
            "p50_ms": round(_percentile(pooled[path], 0.50) * 1000, 3),
            "p99_ms": round(_percentile(pooled[path], 0.99) * 1000, 3),
            "runs": runs[path],
        }

    echo, mutate = summary("/echo"), summary("/mutate")
    return {
        "offered_per_s": rate,
        "echo": echo,
        "mutate": mutate,
        "p99_mutate_over_echo": round(mutate["p99_ms"] / echo["p99_ms"], 3),
    }


def _ratios(mutate: dict[str, Any], echo: dict[str, Any]) -> dict[str, float]:
    return {
        "p99_mutate_over_echo": round(mutate["p99_ms"] / echo["p99_ms"], 3),
        "p50_mutate_over_echo": round(mutate["p50_ms"] / echo["p50_ms"], 3),
        "throughput_mutate_over_echo": round(mutate["reviews_per_s"] / echo["reviews_per_s"], 3),
        "server_cpu_mutate_over_echo": round(
            mutate["server_cpu_us_per_review"] / max(1, echo["server_cpu_us_per_review"]), 3
        ),
    }


def loopback(
    requests: int, concurrency: int, limit_s: float, workers: int, rates: list[float] | None = None
) -> dict[str, Any]:
    unique = [_review(pod, f"uid-u{i}") for i, pod in enumerate(unique_pods(requests))]
    replicas = [_review(pod, f"uid-r{i}") for i, pod in enumerate(replica_pods(requests))]
    # Pods of their own: warmed with the measured ones, the first 300 unique reviews were decision-cache hits.
    warmup = [_review(pod, f"uid-w{i}") for i, pod in enumerate(unique_pods(300, start=requests))]
    with tempfile.TemporaryDirectory() as tmp:
        server = _Server(Path(tmp), workers=workers)
        try:
            base = f"https://127.0.0.1:{server.port}"

            def drive(path: str, bodies: list[bytes], new_connections: bool = False) -> dict[str, Any]:
                """One load, with the server's CPU per review (all its processes, from /proc)."""
                before = _cpu_seconds(server.proc.pid)
                figures = asyncio.run(
                    _drive(base + path, bodies, concurrency, server.ctx, limit_s, new_connections=new_connections)
                )
                used = _cpu_seconds(server.proc.pid) - before
                return {**figures, "server_cpu_us_per_review": round(used / max(1, figures["reviews"]) * 1e6)}

            drive("/mutate", warmup)
            # Echo runs before and after the mutate loads, as the machine's load drifts; ratios use their mean.
            echo_before = drive("/echo", unique)
            mutate_unique = drive("/mutate", unique)
            mutate_replicas = drive("/mutate", replicas)
            echo_after = drive("/echo", unique)
            # What a TLS handshake per review costs (the API server opens a connection per concurrent review).
            echo_new = drive("/echo", unique[: max(1, len(unique) // 4)], new_connections=True)
            at_rates = [_at_rate(base, server, rate, requests, concurrency, limit_s) for rate in rates or []]
        finally:
            server.stop()
    keys = ("p50_ms", "p99_ms", "reviews_per_s", "server_cpu_us_per_review")
    echo = {key: round((echo_before[key] + echo_after[key]) / 2, 3) for key in keys}
    return {
        "workers": workers,
        "echo": {"mean_of_runs": echo, "before": echo_before, "after": echo_after},
        "echo_new_connection_per_review": {
            **echo_new,
            "server_cpu_over_kept_connections": round(
                echo_new["server_cpu_us_per_review"]
                / max(1, (echo_before["server_cpu_us_per_review"] + echo_after["server_cpu_us_per_review"]) / 2),
                3,
            ),
        },
        "mutate": {
            "unique_pods": {**mutate_unique, "ratio": _ratios(mutate_unique, echo)},
            "replicas": {**mutate_replicas, "ratio": _ratios(mutate_replicas, echo)},
        },
        "unique_pods_at_fixed_rates": at_rates,
        "loads": {
            "unique_pods": "every review a distinct pod (name and label bench/seq varied): no decision cache hits",
            "unique_pods_at_fixed_rates": (
                "the same offered rate to /echo and /mutate (open loop, latency from each review's due time, fresh "
                "unique pods every run), alternating echo, mutate, echo, mutate; p99 pooled over the two runs each"
            ),
            "replicas": "generateName replicas of 4 Deployments, identical pods: decision cache hits after 4",
            "echo_new_connection_per_review": "echo with a new TLS connection per review (a quarter of the reviews)",
        },
        "targets": {"p99_ratio_max": 1.5, "mutate_reviews_per_s_min": 2000},
    }


# Namespaces for the bursts through the webhook at a non-loopback address: the shipped configuration skips them (the
# opt-out label), a copy of it pointed at that address serves them.
# The bursts other than `webhook` go to namespaces the shipped configuration skips; these labels select the
# benchmark's own configurations for the `webhook_http1`, `echo` and `echo_patch` bursts, and the
# MutatingAdmissionPolicy's binding for the `map` bursts.
_BURST_LABELS = {
    "webhook_http1": "gpudra.io/benchmark-http1",
    "echo": "gpudra.io/benchmark-echo",
    "echo_patch": "gpudra.io/benchmark-echo-patch",
    "map": admission_policy.NAMESPACE_LABEL,
    "kyverno": kyverno_policy.NAMESPACE_LABEL,
    # the steady load's floor: /echo-patch at the non-loopback address (HTTP/1.1), as gpudra is called there
    "echo_patch_http1": "gpudra.io/benchmark-steadyfloor",
}


def _webhook_configuration(
    server: _Server, host: str = "127.0.0.1", path: str = "/mutate", selected_by: str | None = None
) -> dict[str, Any]:
    """The shipped MutatingWebhookConfiguration pointed at `path` of `server` on `host`; with `selected_by`, a copy
    (named after the label) for the namespaces carrying that label only. kube-apiserver offers HTTP/2 only to a
    webhook at a loopback address (k8s.io/apiserver pkg/util/webhook/client.go); at any other address, as behind a
    Service, it speaks HTTP/1.1."""
    import base64

    webhook = yaml.safe_load((ROOT / "manifests" / "base" / "mutatingwebhook.yaml").read_text())
    webhook["webhooks"][0]["clientConfig"] = {
        "url": f"https://{host}:{server.port}{path}",
        "caBundle": base64.b64encode((server.certs / "ca.crt").read_bytes()).decode(),
    }
    if selected_by is not None:
        webhook["metadata"]["name"] += "-" + selected_by.rsplit("-", 1)[-1]
        webhook["webhooks"][0]["namespaceSelector"] = {"matchLabels": {selected_by: "true"}}
    return dict(webhook)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of `pid` and its live descendants (uvicorn's worker processes), from /proc."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += times.get(current, 0.0)
        todo.extend(children.get(current, []))
    return total


def _process_ids(cp: Any, server: _Server) -> dict[str, int]:
    """The control plane's processes and the webhook's, by name."""
    pids = {name: c.process.pid for name, c in cp.components.items() if c.process is not None}
    pids["webhook"] = server.proc.pid
    return pids


def _cpu_usage(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each of `pids` (with its children) and of this process (`client`)."""
    used = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    used["client"] = time.process_time()
    return used


def _pod_count(kube: Any, namespace: str) -> int:
    """Pods in `namespace`, from one item and the list's remainingItemCount (no 1,000-pod lists while polling)."""
    page = kube.request("GET", kube.path("Pod", namespace) + "?limit=1")
    return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)


def _admitted(kube: Any, namespace: str, map_template: str = "") -> tuple[int, int, int]:
    """Of the pods in `namespace` (one list): how many were translated (have pod-level claims), how many /echo-patch
    annotated, and how many the MutatingAdmissionPolicy mutated fully (claims from `map_template`, no legacy resource
    left)."""
    pods = kube.list("Pod", namespace)
    translated = sum(1 for p in pods if "resourceClaims" in p["spec"])
    patched = sum(1 for p in pods if ECHO_PATCH_ANNOTATION in (p["metadata"].get("annotations") or {}))
    by_map = sum(1 for p in pods if map_template and admission_policy.mutated(p, map_template))
    return translated, patched, by_map


def _dry_run_translated(kube: Any, pod: dict[str, Any]) -> bool:
    """Whether creating `pod` (dry run) comes back translated."""
    created = kube.request("POST", kube.path("Pod", pod["metadata"]["namespace"]) + "?dryRun=All", pod)
    return bool(created.get("spec", {}).get("resourceClaims"))


def _deployment(legacy: dict[str, Any], name: str, replicas: int = 0) -> dict[str, Any]:
    labels = {"app": name}
    spec = {k: v for k, v in copy.deepcopy(legacy["spec"]).items() if k != "restartPolicy"}  # Deployments: Always
    template = {"metadata": {"labels": labels}, "spec": spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
    }


# The bursts through the API server: the legacy pods without the webhook (the baseline), the pods the webhook
# makes of them created directly without it (the same DRA work after admission: ResourceClaims, scheduling), the
# legacy pods with the webhook translating them (registered at a loopback URL: HTTP/1.1, the server declining h2),
# the legacy pods through the same configuration to the server's no-op /echo (what any webhook costs) and to its
# /echo-patch (one annotation added, no decision: what any mutating webhook costs, the API server's work after a patch
# included), and, where this machine has a non-loopback address, the same webhook registered at that address
# (HTTP/1.1, as for a webhook behind a Service: a new TLS connection for each concurrent review beyond the 25 it keeps
# idle); and the legacy pods mutated by a MutatingAdmissionPolicy instead of a webhook (`map`: in-process, the subset of
# the translation CEL can do, benchmarks/peers/mutatingadmissionpolicy.yaml); and, where build_kyverno.sh's opt-in build
# is in the cache, by Kyverno's admission controller with a ClusterPolicy doing the same subset (`kyverno`: a webhook
# at the same non-loopback address, benchmarks/peers/kyverno-clusterpolicy.yaml). `webhook_http1` stays last: it is
# the one left out without a non-loopback address.
_BURSTS = ("legacy", "translated", "webhook", "echo", "echo_patch", "map", "kyverno", "webhook_http1")

# kube-controller-manager's ReplicaSet controller creates pods through a client of its own, rate-limited by a token
# bucket (--kube-api-qps 20, --kube-api-burst 30 by default): after a pause the first 30 requests go at once, then 20
# a second. So that the Deployment burst run first does not get 30 free requests, each one starts right after a
# throwaway Deployment of this many pods (in a namespace the webhook skips) has spent the bucket.
_DRAIN_REPLICAS = 40


# The webhook's name in the shipped configuration (and its copies): the `name` label of kube-apiserver's histogram.
_WEBHOOK_NAME = "mutate.gpudra.io"
# Client threads of the steady load: enough that a creation waiting a second on a loaded machine holds none back.
_STEADY_THREADS = 200


# What the steady load reports from the client's side, for the load without the webhook too.
_STEADY_CLIENT_KEYS: tuple[str, ...] = ("pods", "created", "failures", "achieved_per_s", "client_p50_ms")
_STEADY_CLIENT_KEYS += ("client_p99_ms", "client_max_send_lag_ms", "webhook_calls", "cpu_seconds")


def _metrics_text(kube: Any) -> str:
    """kube-apiserver's /metrics (Prometheus text), as cluster admin."""
    pool = kube.api_client.rest_client.pool_manager
    response = pool.request("GET", kube.api_client.configuration.host + "/metrics", timeout=60.0)
    if response.status != 200:
        raise RuntimeError(f"GET /metrics: HTTP {response.status}")
    return str(response.data.decode())


def _status_message(exc: Exception) -> str:
    """The message of the Status an API error carries (what admission said), else the error itself."""
    try:
        return str(json.loads(getattr(exc, "body", None) or "")["message"])
    except (ValueError, KeyError, TypeError):
        return str(exc)


_STEADY_WINDOW_S = 10.0
# With --steady-gated every steady pod (of every kind) carries this scheduling gate: admission does not look at it,
# and kube-scheduler keeps the pod in its gated queue instead of retrying it on these cores (no kubelet or node
# runs the pods here, so without it every pending pod that carries a claim is retried for the whole load).
SCHEDULING_GATE = "gpudra.io/benchmark-held"


def _steady(cp: Any, manifests: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    """`manifests` created at `rate` a second, open loop (creation i is due at i/rate and sent then, whatever the
    earlier ones are doing; its latency counts from when it was due), with kube-apiserver's histogram of the webhook's
    admission duration (`apiserver_admission_webhook_admission_duration_seconds`, name=mutate.gpudra.io) read before
    and after: its p50/p99 over the load's calls, interpolated within buckets, is the server-side latency (None where
    the load called no webhook)."""
    import kubernetes.client

    from tests.controlplane.kube import Kube

    config = cp.configuration()
    config.connection_pool_maxsize = _STEADY_THREADS
    kube = Kube(kubernetes.client.ApiClient(config))
    series = {"name": _WEBHOOK_NAME, "type": "admit"}
    before = histogram(_metrics_text(kube), series)
    latencies: list[float] = []
    by_window: dict[int, list[float]] = {}
    failures: list[str] = []
    by_status: dict[str, int] = {}
    lag = 0.0

    def one(pod: dict[str, Any], due: float, window: int) -> None:
        try:
            kube.create(pod)
        except Exception as exc:  # noqa: BLE001 - a refused creation is a result of the load, counted and shown
            status = str(getattr(exc, "status", None) or type(exc).__name__)
            by_status[status] = by_status.get(status, 0) + 1
            failures.append(f"{pod['metadata']['name']}: {status}: {_status_message(exc)}"[:400])
            return
        took = time.perf_counter() - due
        latencies.append(took)
        by_window.setdefault(window, []).append(took)

    with concurrent.futures.ThreadPoolExecutor(_STEADY_THREADS) as pool:
        began = time.perf_counter() + 0.05
        futures = []
        for i, pod in enumerate(manifests):
            due = began + i / rate
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            else:
                lag = max(lag, now - due)
            futures.append(pool.submit(one, pod, due, int(i / rate // _STEADY_WINDOW_S)))
        for future in futures:
            future.result()
        wall = time.perf_counter() - began
    server = histogram(_metrics_text(kube), series).minus(before)
    return {
        "offered_per_s": rate,
        "seconds": round(len(manifests) / rate, 3),
        "pods": len(manifests),
        "created": len(latencies),
        "failures": len(failures),
        "failures_by_status": by_status,
        "first_failures": failures[:3],
        "achieved_per_s": round(len(latencies) / wall, 1),
        "client_p50_ms": round(_percentile(latencies, 0.5) * 1000, 2) if latencies else None,
        "client_p99_ms": round(_percentile(latencies, 0.99) * 1000, 2) if latencies else None,
        "client_max_send_lag_ms": round(lag * 1000, 3),
        # where in the load the slow ones were: the client p99 of each window of pods by due time
        f"client_p99_ms_per_{_STEADY_WINDOW_S:g}s": [
            round(_percentile(by_window[w], 0.99) * 1000, 1) for w in sorted(by_window)
        ],
        "webhook_calls": round(server.count),
        "server_side_p50_ms": round(server.quantile(0.5) * 1000, 2) if server.count else None,
        "server_side_p99_ms": round(server.quantile(0.99) * 1000, 2) if server.count else None,
        "server_side_buckets_s": [b for b in server.bounds if b != float("inf")],
        "what": "kube-apiserver's own histogram of the webhook's admission duration (the call as it saw it: "
        "connection, TLS, the webhook's work, the answer's decoding), read from its /metrics before and after; "
        "quantiles interpolated linearly within its buckets (server_side_buckets_s), as histogram_quantile does",
    }


def through_apiserver(
    pods: int,
    concurrency: int,
    deployments: int,
    replicas: int,
    workers: int,
    rounds: int,
    steady_rate: float = 150.0,
    steady_seconds: float = 60.0,
    steady_gated: bool = False,
) -> dict[str, Any]:
    """Bursts through a real kube-apiserver with the webhook registered; the bursts without it go to namespaces
    labelled `gpudra.io/webhook=disabled`, which its namespaceSelector skips, and so do the `echo`, `echo_patch` and
    `webhook_http1` bursts, each served by a copy of the configuration that selects its own namespaces, and the `map`
    bursts, which the MutatingAdmissionPolicy's binding selects (each of its namespaces gets the policy's
    ResourceClaimTemplate before its pods):

    - `pods` pods created by `concurrency` client threads at once, `rounds` times for each of _BURSTS, the order
      rotating from round to round (the machine's load drifts); the latency of each creation, pooled over the rounds,
      and the CPU seconds each process spent per burst. Each burst has a namespace of its own, deleted (its pods and
      claims with it) before the next one starts;
    - `deployments` Deployments scaled from 0 to `replicas` at once: kube-controller-manager creates the pods
      (no kubelet runs them); the time until all exist;
    - a steady `steady_rate` pods a second for `steady_seconds` (open loop) without the webhook, to `/echo-patch` at
      the non-loopback address (the floor: any mutating webhook called as gpudra is), and to the webhook as deployed
      (HTTP/1.1, at the non-loopback address; at the loopback one without it, and then no floor), with
      kube-apiserver's own histogram of the webhook's duration read from its /metrics before and after (see
      `_steady`).

    A warm-up burst of each kind, as large as the measured ones, comes first: imports and the API server's caches
    warm for all, and every connection a burst needs open (the client's to the API server, the API server's to the
    webhook), so the figures are a warm webhook's, as in a running cluster. With a 20-pod warm-up the first measured
    burst paid for ~180 of the client's TLS connections: the legacy pods' p99 was 250-430 ms as the first burst of a
    run and 113-222 ms later in the same runs."""
    import uuid

    import kubernetes.client

    from policyengine import load_policies
    from policyengine.translate import translate
    from tests.controlplane import kyverno_admission
    from tests.controlplane.binaries import MissingBinaries
    from tests.controlplane.cluster import running
    from tests.controlplane.kube import Kube, exists, wait_for

    legacy = yaml.safe_load((ROOT / "examples" / "pod-legacy-1gpu.yaml").read_text())
    policies = load_policies()
    map_policy, map_binding, map_template = admission_policy.manifests()
    outward = _outward_address()
    kyverno_skipped = ""
    try:  # the opt-in peer: only where build_kyverno.sh has put it in the cache
        kyverno_admission.binary()
        kyverno_admission.crd_directory()
    except MissingBinaries as exc:
        kyverno_skipped = f"{exc}"
    kinds = tuple(k for k in _BURSTS if (k != "kyverno" or not kyverno_skipped) and (k != "webhook_http1" or outward))

    def namespace(kube: Kube, kind: str, prefix: str = "bench") -> str:
        """A new namespace for one burst of `kind`, labelled for the configuration that serves it (if any)."""
        name = f"{prefix}-{kind.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
        labels = {} if kind == "webhook" else {"gpudra.io/webhook": "disabled"}
        if kind in _BURST_LABELS:
            labels[_BURST_LABELS[kind]] = "true"
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
        wait_for(lambda: kube.list("ServiceAccount", name), timeout=30, what=f"ServiceAccount {name}/default")
        if kind in ("map", "kyverno"):  # the template the policies' claims name, made beforehand
            kube.create(map_template, name)
        return name

    def pods_for(kube: Kube, kind: str, ns: str, count: int) -> list[dict[str, Any]]:
        made = []
        for i in range(count):
            pod = copy.deepcopy(legacy)
            pod["metadata"] = {"name": f"p-{i}", "namespace": ns}
            if kind == "translated":
                namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                translation = translate(pod, policies.evaluate(pod, namespace_object, {"operation": "CREATE"}))
                if i == 0:
                    for template in translation.templates:
                        kube.create(template, ns)
                pod = translation.pod
            made.append(pod)
        return made

    def create_all(kube: Kube, manifests: list[dict[str, Any]]) -> list[float]:
        def one(pod: dict[str, Any]) -> float:
            started = time.perf_counter()
            kube.create(pod)
            return time.perf_counter() - started

        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(one, manifests))

    def remove(kube: Kube, ns: str) -> None:
        """Delete `ns` and wait until it is gone, its pods and claims with it: every burst then starts on the same
        cluster, not on one holding the pending pods of all bursts before it (which kube-scheduler keeps retrying)."""
        kube.delete("Namespace", ns)
        wait_for(lambda: not exists(kube, "Namespace", ns), timeout=300, what=f"namespace {ns} deleted")

    def wait_for_pods(ns: str, total: int) -> None:
        deadline = time.monotonic() + 300
        while _pod_count(kube, ns) < total:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{ns}: {_pod_count(kube, ns)} of {total} pods after 300 s")
            time.sleep(0.1)

    def scale_all(kube: Kube, ns: str) -> float:
        names = [f"d-{i}" for i in range(deployments)]
        for name in names:
            kube.create(_deployment(legacy, name), ns)
        drain = namespace(kube, "legacy", "bench-drain")
        kube.create(_deployment(legacy, "drain", _DRAIN_REPLICAS), drain)
        wait_for_pods(drain, _DRAIN_REPLICAS)
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(deployments) as pool:
            list(pool.map(lambda n: kube.patch("Deployment", n, {"spec": {"replicas": replicas}}, ns), names))
        wait_for_pods(ns, deployments * replicas)
        return time.perf_counter() - started

    latencies: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[str, dict[str, float]] = {kind: {} for kind in kinds}
    per_round: list[dict[str, float]] = []
    per_round_ms: list[dict[str, float]] = []
    translated = dict.fromkeys(kinds, 0)
    echo_patched = 0
    map_mutated = 0
    kyverno_mutated = 0
    kyverno_url = ""
    steady: dict[str, Any] = {}
    scaled: dict[bool, float] = {}
    scaled_translated = {False: 0, True: 0}
    with running() as cp, tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as peers:
        config = cp.configuration()
        config.connection_pool_maxsize = concurrency
        kube = Kube(kubernetes.client.ApiClient(config))
        server = _Server(Path(tmp), kubeconfig=cp.kubeconfig, workers=workers, outward=outward)
        pids = _process_ids(cp, server)

        def usage() -> dict[str, float]:
            return _cpu_usage(pids)

        try:
            # The API server picks up webhook configurations from its informer, in the order they were created: once
            # the last one translates a pod, every one is in effect.
            kube.create(_webhook_configuration(server, path="/echo", selected_by=_BURST_LABELS["echo"]))
            patching = _webhook_configuration(server, path="/echo-patch", selected_by=_BURST_LABELS["echo_patch"])
            kube.create(patching)
            kube.create(_webhook_configuration(server))
            if outward:
                kube.create(_webhook_configuration(server, outward, selected_by=_BURST_LABELS["webhook_http1"]))
                floor_label = _BURST_LABELS["echo_patch_http1"]
                kube.create(_webhook_configuration(server, outward, path="/echo-patch", selected_by=floor_label))
            kube.create(map_policy)
            kube.create(map_binding)
            probe = namespace(kube, kinds[-1] if outward else "webhook", "bench-probe")
            wait_for(
                lambda: _dry_run_translated(kube, pods_for(kube, "legacy", probe, 1)[0]),
                timeout=60,
                what="the webhook configurations in effect",
            )
            map_probe = namespace(kube, "map", "bench-probe")
            wait_for(
                lambda: _dry_run_translated(kube, pods_for(kube, "legacy", map_probe, 1)[0]),
                timeout=60,
                what="the MutatingAdmissionPolicy and its binding in effect",
            )
            if "kyverno" in kinds:
                kyverno = peers.enter_context(
                    kyverno_admission.running(
                        cp, kube, outward or "127.0.0.1", kyverno_policy.NAMESPACE_LABEL, [kyverno_policy.policy()],
                        Path(tmp),
                    )
                )  # fmt: skip
                kyverno_url = kyverno.url
                pids["kyverno"] = kyverno.process.pid
                kyverno_probe = namespace(kube, "kyverno", "bench-probe")
                wait_for(
                    lambda: _dry_run_translated(kube, pods_for(kube, "legacy", kyverno_probe, 1)[0]),
                    timeout=60,
                    what="Kyverno's ClusterPolicy in effect",
                )
            for kind in kinds:
                ns = namespace(kube, kind, "bench-warm")
                create_all(kube, pods_for(kube, kind, ns, pods))
                remove(kube, ns)
            for i in range(rounds):
                p99: dict[str, float] = {}
                for kind in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
                    ns = namespace(kube, kind)
                    manifests = pods_for(kube, kind, ns, pods)
                    before = usage()
                    values = create_all(kube, manifests)
                    for name, used in usage().items():
                        cpu[kind][name] = cpu[kind].get(name, 0.0) + (used - before[name]) / rounds
                    latencies[kind] += values
                    p99[kind] = _percentile(values, 0.99)
                    translated_here, patched_here, by_map_here = _admitted(kube, ns, map_template["metadata"]["name"])
                    translated[kind] += translated_here
                    if kind == "echo_patch":
                        echo_patched += patched_here
                    if kind == "map":
                        map_mutated += by_map_here
                    if kind == "kyverno":  # the same pods as the MAP peer makes: the same check
                        kyverno_mutated += by_map_here
                    remove(kube, ns)
                ratios = {base: round(p99["webhook"] / p99[base], 3) for base in ("legacy", "translated")}
                ratios["echo_legacy"] = round(p99["echo"] / p99["legacy"], 3)
                ratios["echo_patch_legacy"] = round(p99["echo_patch"] / p99["legacy"], 3)
                ratios["map_legacy"] = round(p99["map"] / p99["legacy"], 3)
                if "kyverno" in p99:
                    ratios["kyverno_legacy"] = round(p99["kyverno"] / p99["legacy"], 3)
                if outward:
                    ratios["http1_legacy"] = round(p99["webhook_http1"] / p99["legacy"], 3)
                per_round.append(ratios)
                per_round_ms.append({kind: round(value * 1000, 1) for kind, value in p99.items()})
            if deployments:
                for webhook in (False, True):
                    ns = namespace(kube, "webhook" if webhook else "legacy", "bench-deploy")
                    scaled[webhook] = scale_all(kube, ns)
                    scaled_translated[webhook] = _admitted(kube, ns)[0]
            if steady_seconds > 0:
                # Kyverno's bursts are over: its controllers would otherwise watch every steady pod on these cores.
                peers.close()
                pids.pop("kyverno", None)

                def steady_load(kind: str, ns: str) -> dict[str, Any]:
                    manifests = pods_for(kube, kind, ns, count)
                    if steady_gated:
                        for pod in manifests:
                            pod["spec"]["schedulingGates"] = [{"name": SCHEDULING_GATE}]
                    before = usage()
                    figures = _steady(cp, manifests, steady_rate)
                    figures["cpu_seconds"] = {k: round(v - before[k], 2) for k, v in usage().items()}
                    return figures

                # The same load without the webhook first (what this machine sustains at all), then to gpudra.
                count = max(1, round(steady_rate * steady_seconds))
                ns = namespace(kube, "legacy", "bench-steady")
                baseline = steady_load("legacy", ns)
                remove(kube, ns)
                floor: dict[str, Any] = {}
                if outward:  # then any mutating webhook at the same address: /echo-patch
                    ns = namespace(kube, "echo_patch_http1", "bench-steady")
                    floor = steady_load("legacy", ns)
                    floor["pods_patched"] = _admitted(kube, ns)[1]
                    remove(kube, ns)
                kind = "webhook_http1" if outward else "webhook"
                ns = namespace(kube, kind, "bench-steady")
                steady = steady_load(kind, ns)
                steady["webhook"] = (
                    "non-loopback address (HTTP/1.1, as behind a Service)" if outward else "loopback address"
                )
                steady["gated"] = steady_gated
                steady["pods_translated"] = _admitted(kube, ns)[0]
                steady["without_webhook"] = {key: baseline[key] for key in _STEADY_CLIENT_KEYS}
                if baseline["client_p99_ms"] and steady["client_p99_ms"]:
                    steady["client_p99_ratio"] = round(steady["client_p99_ms"] / baseline["client_p99_ms"], 3)
                if floor:
                    keys = (*_STEADY_CLIENT_KEYS, "server_side_p50_ms", "server_side_p99_ms", "failures_by_status")
                    steady["echo_patch"] = {key: floor[key] for key in (*keys, "pods_patched")}
                    if floor["server_side_p99_ms"] and steady["server_side_p99_ms"]:
                        over = steady["server_side_p99_ms"] / floor["server_side_p99_ms"]
                        steady["server_side_p99_over_echo_patch"] = round(over, 3)
        finally:
            server.stop()

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(_percentile(values, 0.5) * 1000, 2),
            "p99_ms": round(_percentile(values, 0.99) * 1000, 2),
        }

    def ratio(kind: str, base: str) -> float:
        return round(_percentile(latencies[kind], 0.99) / _percentile(latencies[base], 0.99), 3)

    result: dict[str, Any] = {
        "pods": pods * rounds,
        "pods_per_burst": pods,
        "rounds": rounds,
        "concurrency": concurrency,
        "webhook_workers": workers,
        "without_webhook": summary(latencies["legacy"]),
        "without_webhook_translated_pods": summary(latencies["translated"]),
        "with_webhook": summary(latencies["webhook"]),
        "p99_ratio": ratio("webhook", "legacy"),
        "p99_ratio_vs_translated_pods": ratio("webhook", "translated"),
        "p99_ratio_translated_pods_vs_legacy": ratio("translated", "legacy"),
        "p99_ratio_per_round": per_round,
        "p99_ms_per_round": per_round_ms,
        "pods_translated": translated["webhook"],
        "pods_translated_without_webhook": translated["legacy"],
        "webhook_url": "https://127.0.0.1 (loopback: kube-apiserver offers HTTP/2, the server answers HTTP/1.1)",
        "cpu_seconds_per_burst": {kind: {name: round(v, 3) for name, v in cpu[kind].items()} for kind in kinds},
        "bursts": {
            "legacy": "the legacy GPU pods, in namespaces the webhook skips",
            "translated": "the pods the webhook makes of them (and their template), created directly, webhook skipped",
            "webhook": "the legacy GPU pods, translated by the webhook at https://127.0.0.1 (HTTP/1.1: h2 declined)",
            "echo": "the legacy GPU pods sent by the same configuration to the same server's /echo (allowed unchanged: "
            "no decision, no patch, no template): what calling any webhook costs here",
            "echo_patch": "the same to the same server's /echo-patch (one annotation added, no decision, no template): "
            "what any mutating webhook costs here, the API server's work after a patch included",
            "map": "the legacy GPU pods, mutated in kube-apiserver by a MutatingAdmissionPolicy (no webhook): "
            "nvidia.com/gpu removed, a claim from a ResourceClaimTemplate made beforehand in each namespace",
            "kyverno": "the legacy GPU pods, mutated by Kyverno's admission controller (a webhook at this machine's "
            "non-loopback address) with a ClusterPolicy doing the map peer's subset; absent without the opt-in build",
            "webhook_http1": "the same at this machine's non-loopback address (HTTP/1.1, as for a webhook behind a "
            "Service); absent without such an address",
        },
        "echo": {
            "with_webhook": summary(latencies["echo"]),
            "p99_ratio": ratio("echo", "legacy"),
            "webhook_p99_over_echo": ratio("webhook", "echo"),
            "what": "a webhook that decides nothing, registered and served as gpudra's: p99_ratio is the part of "
            "gpudra's that calling any webhook costs on this machine, webhook_p99_over_echo the part its decision, "
            "patch and template add",
        },
        "echo_patch": {
            "with_webhook": summary(latencies["echo_patch"]),
            "p99_ratio": ratio("echo_patch", "legacy"),
            "webhook_p99_over_echo_patch": ratio("webhook", "echo_patch"),
            "pods_patched": echo_patched,
            "pods": pods * rounds,
            "what": "a webhook that decides nothing and adds one annotation: p99_ratio is what any mutating webhook "
            "costs on this machine (the API server applies the patch, decodes the pod again and runs its in-tree "
            "admission a second time), webhook_p99_over_echo_patch the part gpudra's decision, its larger patch, the "
            "template and the DRA objects that follow add",
        },
        "map": {
            "with_policy": summary(latencies["map"]),
            "p99_ratio": ratio("map", "legacy"),
            "pods_mutated": map_mutated,
            "pods": pods * rounds,
            "policy": str(admission_policy.MANIFESTS.relative_to(ROOT)),
            "what": "the native peer: a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1) doing the subset of "
            "the translation CEL and JSONPatch can (strip nvidia.com/gpu, claim one whole GPU from a template made "
            "beforehand per namespace; no sizing, no template creation, no check against the cluster's devices), in "
            "kube-apiserver's process; pods_mutated counts the pods stored exactly as it mutates them",
        },
        "kyverno": (
            {
                "with_webhook": summary(latencies["kyverno"]),
                "p99_ratio": ratio("kyverno", "legacy"),
                "pods_mutated": kyverno_mutated,
                "pods": pods * rounds,
                "version": kyverno_admission.version(),
                "webhook_url": kyverno_url,
                "policy": str(kyverno_policy.MANIFEST.relative_to(ROOT)),
                "what": "Kyverno's admission controller (the opt-in build of tests/controlplane/build_kyverno.sh, run "
                "out of cluster with the chart's arguments, --serverIP at this machine's address: kube-apiserver "
                "speaks HTTP/1.1 to it) with a ClusterPolicy doing the MutatingAdmissionPolicy peer's subset; "
                "pods_mutated counts the pods stored exactly as that peer mutates them",
            }
            if "kyverno" in kinds
            else {"skipped": kyverno_skipped}
        ),
        "context": "Kyverno publishes ~244 ms p99 for one mutating policy at 200 concurrent pod creations (3 replicas)",
    }
    if outward:
        result["http1"] = {
            "webhook_url": f"https://{outward} (not loopback: kube-apiserver speaks HTTP/1.1, as to a Service)",
            "with_webhook": summary(latencies["webhook_http1"]),
            "p99_ratio": ratio("webhook_http1", "legacy"),
            "p99_ratio_vs_translated_pods": ratio("webhook_http1", "translated"),
            "pods_translated": translated["webhook_http1"],
            "pods": pods * rounds,
            "p99_over_map": ratio("webhook_http1", "map"),
            **({"p99_over_kyverno": ratio("webhook_http1", "kyverno")} if "kyverno" in kinds else {}),
        }
    if steady:
        result["steady"] = steady
    if deployments:
        result["deployments"] = {
            "deployments": deployments,
            "pods": deployments * replicas,
            "without_webhook_s": round(scaled[False], 3),
            "with_webhook_s": round(scaled[True], 3),
            "ratio": round(scaled[True] / scaled[False], 3),
            "pods_translated": scaled_translated[True],
            "pods_translated_without_webhook": scaled_translated[False],
            "pods_per_second_without_webhook": round(deployments * replicas / scaled[False], 1),
            "what": "Deployments scaled from 0 at once; seconds until kube-controller-manager has created every pod. "
            "Its ReplicaSet controller's client is rate-limited (20 requests/s by default), so this burst reaches the "
            "webhook at that pace; each starts with the controller's token bucket spent",
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--limit-seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=1, help="gpudra serve --workers for every run")
    parser.add_argument(
        "--rates",
        default="500,1000,2000",
        help="offered reviews/s for the fixed-rate comparison of /echo and /mutate on unique pods ('' for none)",
    )
    parser.add_argument("--through-apiserver", action="store_true")
    parser.add_argument("--no-loopback", action="store_true", help="only the runs through the API server")
    parser.add_argument("--pods", type=int, default=200, help="pods per burst through the API server")
    parser.add_argument("--rounds", type=int, default=3, help="bursts each way through the API server")
    parser.add_argument("--deployments", type=int, default=10, help="0: no Deployment burst")
    parser.add_argument("--replicas", type=int, default=100, help="pods per Deployment in the Deployment burst")
    parser.add_argument("--steady-rate", type=float, default=150.0, help="pods/s of the steady load to the webhook")
    parser.add_argument("--steady-seconds", type=float, default=60.0, help="0: no steady load")
    parser.add_argument(
        "--steady-gated",
        action="store_true",
        help="give every steady pod a scheduling gate (kube-scheduler then does not retry the pending pods)",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": {"cpus": os.cpu_count()}}
    if not args.no_loopback:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
        result["loopback"] = loopback(args.requests, args.concurrency, args.limit_seconds, args.workers, rates)
    if args.through_apiserver:
        if args.steady_rate <= 0 or args.steady_seconds < 0:
            parser.error(
                f"--steady-rate {args.steady_rate} must be > 0 and --steady-seconds {args.steady_seconds} >= 0"
            )
        result["through_apiserver"] = through_apiserver(
            args.pods,
            min(args.pods, 200),
            args.deployments,
            args.replicas,
            args.workers,
            args.rounds,
            args.steady_rate,
            args.steady_seconds,
            args.steady_gated,
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
