"""A bounded soak of `gpudra serve`: a steady stream of distinct GPU pod reviews for N minutes, RSS and latency.

    python benchmarks/webhook_soak.py --minutes 10 [--rate 20] [--concurrency 4] [--kubeconfig FILE]

Starts `gpudra serve` over HTTPS on loopback with `--kubeconfig` pointing at a real kube-apiserver (the one given, or
a control plane of its own from tests/controlplane, built by tests/controlplane/build.sh), so every review's side
effects are real: the webhook reads the Namespace and creates or reuses the pod's ResourceClaimTemplate through the
API server. The reviews are sent **directly** to /mutate as the API server would send them (AdmissionReview v1 over
keep-alive HTTPS connections), open loop at `--rate` per second: review i is due at start + i/rate whatever the
previous answers took, so a slow webhook shows up as latency, not as a lower rate. Every pod is distinct (name and a
label vary; four example shapes), so the decision cache misses every time and is full (1,024 entries) within a minute.

Every second the serve process's VmRSS is read from /proc/<pid>/status. Per window (`--window-seconds`, 60) it
reports reviews, failures, latency p50/p99 and RSS max; overall the RSS least-squares slope (MB/min: over the whole
run, after the first window, and over the second half, where a leak would show once the caches are full), max and last,
and each window's p50/p99 and RSS as ratios against the first window (these machines are shared and noisy: read the
ratios, not the milliseconds). An answer counts as a failure unless it is HTTP 200, allowed, with a JSON patch that
removes the legacy GPU request (a pod admitted untranslated is a failure). Prints JSON.
"""

from __future__ import annotations

import argparse
import base64
import copy
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pki import write_dev_certificates  # noqa: E402
from webhook.review import pod_review  # noqa: E402

SHAPES = ("pod-legacy-vram.yaml", "pod-legacy-1gpu.yaml", "pod-vllm-tp4.yaml", "pod-mig-legacy.yaml")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> int:
    """VmRSS of `pid` in KiB, from /proc/<pid>/status (0 when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Serve:
    """`gpudra serve` over HTTPS on loopback (one process), with side effects through `kubeconfig`."""

    def __init__(self, workdir: Path, kubeconfig: Path, env: dict[str, str] | None = None) -> None:
        self.certs = workdir / "certs"
        write_dev_certificates(self.certs, ["localhost"], ip_addresses=["127.0.0.1"])
        self.port = _free_port()
        self.log_path = workdir / "serve.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "gpudra", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--cert", str(self.certs / "tls.crt"), "--key", str(self.certs / "tls.key"),
                "--kubeconfig", str(kubeconfig),
            ],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        self.ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=1)
            try:
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.2)
            finally:
                conn.close()
        self.stop()
        raise RuntimeError("gpudra serve did not start:\n" + self.log_path.read_text(errors="replace")[-3000:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def deployment_environment() -> dict[str, str]:
    """The literal environment variables the shipped Deployment gives the webhook (manifests/base/deployment.yaml:
    glibc's malloc settings), so that the soak measures the process as it runs in a cluster."""
    for doc in yaml.safe_load_all((ROOT / "manifests" / "base" / "deployment.yaml").read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "Deployment":
            (container,) = (c for c in doc["spec"]["template"]["spec"]["containers"] if c["name"] == "webhook")
            return {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}
    raise RuntimeError("manifests/base/deployment.yaml holds no Deployment")


def soak_pods(namespace: str) -> Iterator[dict[str, Any]]:
    """An endless stream of distinct GPU pods in `namespace`: the four example shapes, a distinct name and label."""
    shapes = [yaml.safe_load((ROOT / "examples" / name).read_text()) for name in SHAPES]
    i = 0
    while True:
        pod = copy.deepcopy(shapes[i % len(shapes)])
        pod["metadata"]["name"] = f"soak-{i}"
        pod["metadata"]["namespace"] = namespace
        pod["metadata"].setdefault("labels", {})["soak/seq"] = str(i)
        yield pod
        i += 1


def legacy_gpu_left(pod: dict[str, Any]) -> bool:
    """Whether any container of `pod` still asks for `nvidia.com/gpu` (requests or limits)."""
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        if any("nvidia.com/gpu" in (resources.get(k) or {}) for k in ("requests", "limits")):
            return True
    return False


def translated(status: int, payload: bytes, pod: dict[str, Any]) -> bool:
    """HTTP 200, allowed, and a JSON patch that, applied to `pod`, leaves no legacy GPU request and adds claims."""
    if status != 200:
        return False
    try:
        response = json.loads(payload)["response"]
        if response.get("allowed") is not True or response.get("patchType") != "JSONPatch":
            return False
        patched = jsonpatch.apply_patch(pod, json.loads(base64.b64decode(response["patch"])))
    except (ValueError, KeyError, TypeError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        return False
    return not legacy_gpu_left(patched) and bool(patched["spec"].get("resourceClaims"))


@dataclass
class Window:
    start: float
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    rss_kib: list[int] = field(default_factory=list)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _slope_mb_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of RSS (MB) against time (minutes)."""
    if len(samples) < 2:
        return 0.0
    xs = [t / 60 for t, _ in samples]
    ys = [kib / 1024 for _, kib in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def run_soak(
    server: Serve, namespace: str, *, seconds: float, rate: float, concurrency: int, window_seconds: float
) -> dict[str, Any]:
    """Drive `server` at `rate` reviews/s for `seconds`; the figures described in the module docstring."""
    pods = soak_pods(namespace)
    lock = threading.Lock()
    began = time.monotonic()
    end = began + seconds
    windows: list[Window] = [Window(0.0)]
    samples: list[tuple[float, int]] = []
    failures_by_kind: dict[str, int] = {}
    sent = 0
    stop = threading.Event()

    def window_at(t: float) -> Window:
        index = int(t // window_seconds)
        while len(windows) <= index:
            windows.append(Window(len(windows) * window_seconds))
        return windows[index]

    def next_job() -> tuple[float, dict[str, Any], bytes] | None:
        nonlocal sent
        with lock:
            due = began + sent / rate
            if due >= end:
                return None
            pod = next(pods)
            sent += 1
            return due, pod, pod_review(pod, uid=f"soak-{sent}")

    def record(t: float, latency: float | None, kind: str | None) -> None:
        with lock:
            w = window_at(t)
            if latency is not None:
                w.latencies.append(latency)
            if kind is not None:
                w.failures += 1
                failures_by_kind[kind] = failures_by_kind.get(kind, 0) + 1

    def worker() -> None:
        conn: http.client.HTTPSConnection | None = None
        try:
            while (job := next_job()) is not None:
                due, pod, body = job
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if conn is None:
                    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.ctx, timeout=30)
                started = time.monotonic()
                try:
                    conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
                    response = conn.getresponse()
                    payload = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()
                    conn = None
                    record(started - began, None, f"connection: {type(exc).__name__}")
                    continue
                # Latency from when the review was due: queueing behind a slow answer counts (open loop).
                latency = time.monotonic() - min(started, due)
                ok = translated(response.status, payload, pod)
                record(due - began, latency, None if ok else f"http {response.status} not translated")
        finally:
            if conn is not None:
                conn.close()

    def sampler() -> None:
        while not stop.wait(1.0):
            t = time.monotonic() - began
            kib = rss_kib(server.proc.pid)
            with lock:
                samples.append((t, kib))
                window_at(min(t, seconds - 1e-6)).rss_kib.append(kib)

    rss_start = rss_kib(server.proc.pid)
    sampling = threading.Thread(target=sampler, daemon=True)
    sampling.start()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    sampling.join()
    wall = time.monotonic() - began
    alive = server.proc.poll() is None
    return summarize(windows, samples, failures_by_kind, sent, wall, rss_start, alive)


def summarize(
    windows: list[Window],
    samples: list[tuple[float, int]],
    failures_by_kind: dict[str, int],
    sent: int,
    wall: float,
    rss_start_kib: int,
    alive: bool,
) -> dict[str, Any]:
    kept = [w for w in windows if w.latencies or w.rss_kib]
    figures = [
        (_percentile(w.latencies, 0.5) * 1000, _percentile(w.latencies, 0.99) * 1000, max(w.rss_kib, default=0) / 1024)
        for w in kept
    ]
    base = figures[0] if figures else (0.0, 0.0, 0.0)

    def ratio(value: float, first: float) -> float | None:
        return round(value / first, 3) if first else None

    rows: list[dict[str, Any]] = [
        {
            "start_s": round(w.start),
            "reviews": len(w.latencies),
            "failures": w.failures,
            "p50_ms": round(p50, 2),
            "p99_ms": round(p99, 2),
            "rss_max_mb": round(rss, 1),
            "p50_ratio": ratio(p50, base[0]),
            "p99_ratio": ratio(p99, base[1]),
            "rss_max_ratio": ratio(rss, base[2]),
        }
        for w, (p50, p99, rss) in zip(kept, figures, strict=True)
    ]
    rss_values = [kib for _, kib in samples]
    warm_from = kept[1].start if len(kept) > 1 else 0.0
    return {
        "reviews_sent": sent,
        "reviews_answered": sum(r["reviews"] for r in rows),
        "failures": sum(failures_by_kind.values()),
        "failures_by_kind": failures_by_kind,
        "wall_s": round(wall, 1),
        "rate_achieved_per_s": round(sent / wall, 2) if wall else 0.0,
        "server_alive_at_end": alive,
        "rss_start_mb": round(rss_start_kib / 1024, 1),
        "rss_max_mb": round(max(rss_values, default=0) / 1024, 1),
        "rss_last_mb": round(rss_values[-1] / 1024, 1) if rss_values else 0.0,
        "rss_slope_mb_per_min": round(_slope_mb_per_min(samples), 3),
        # The slope after the first window, once the caches have filled: a leak shows here, warm-up does not.
        "rss_slope_after_first_window_mb_per_min": round(
            _slope_mb_per_min([s for s in samples if s[0] >= warm_from]), 3
        ),
        # The second half alone: caches are full by then, so a steady climb here is a leak, not warm-up.
        "rss_slope_second_half_mb_per_min": round(_slope_mb_per_min([s for s in samples if s[0] >= wall / 2]), 3),
        "max_ratio_vs_first_window": {
            key: max((r[key] for r in rows[1:] if r[key] is not None), default=None)
            for key in ("p50_ratio", "p99_ratio", "rss_max_ratio")
        },
        "windows": rows,
    }


@contextmanager
def _cluster(kubeconfig: Path | None) -> Iterator[Path]:
    if kubeconfig is not None:
        yield kubeconfig
        return
    from tests.controlplane.cluster import running

    with running() as cp:
        yield cp.kubeconfig


def _namespace(kubeconfig: Path) -> str:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        name = f"soak-{os.getpid()}-{int(time.time())}"
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        return name
    finally:
        api.close()


def soak(
    minutes: float,
    *,
    rate: float = 20.0,
    concurrency: int = 4,
    window_seconds: float = 60.0,
    kubeconfig: Path | None = None,
    deployment_env: bool = True,
) -> dict[str, Any]:
    """The whole benchmark: a cluster (given or started), a namespace, `gpudra serve` (with the shipped Deployment's
    environment unless `deployment_env` is off), the soak, the figures."""
    env = deployment_environment() if deployment_env else {}
    with _cluster(kubeconfig) as config, tempfile.TemporaryDirectory(prefix="gpudra-soak-") as tmp:
        namespace = _namespace(config)
        server = Serve(Path(tmp), config, env)
        try:
            figures = run_soak(
                server, namespace, seconds=minutes * 60, rate=rate, concurrency=concurrency,
                window_seconds=window_seconds,
            )  # fmt: skip
        finally:
            server.stop()
            log_tail = server.log_path.read_text(errors="replace").splitlines()[-20:]
    return {
        "minutes": minutes,
        "rate_per_s": rate,
        "concurrency": concurrency,
        "window_seconds": window_seconds,
        "machine": {"cpus": os.cpu_count()},
        "mode": "direct AdmissionReviews to /mutate; side effects through the real kube-apiserver",
        "environment": env,
        **figures,
        "serve_log_tail": log_tail if figures["failures"] else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=20.0, help="reviews per second (open loop)")
    parser.add_argument("--concurrency", type=int, default=4, help="client connections")
    parser.add_argument("--window-seconds", type=float, default=60.0)
    parser.add_argument("--kubeconfig", type=Path, default=None, help="an API server (default: start one)")
    parser.add_argument(
        "--no-deployment-env", action="store_true", help="serve without the Deployment's environment (malloc settings)"
    )
    args = parser.parse_args()
    result = soak(
        args.minutes, rate=args.rate, concurrency=args.concurrency, window_seconds=args.window_seconds,
        kubeconfig=args.kubeconfig, deployment_env=not args.no_deployment_env,
    )  # fmt: skip
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
