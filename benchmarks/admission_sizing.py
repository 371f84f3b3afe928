"""Admission latency with the recommendation cache on (10,000 GPUSizingRecommendations loaded) vs off, in one run.

    python benchmarks/admission_sizing.py [--recommendations 10000] [--requests 3000] [--concurrency 32] [--rounds 2]

Starts the webhook app (`webhook.server.build_app`, the shipped policies, uvicorn over HTTPS on loopback, one
worker) twice per round, alternately: `off` (no cache) and `on` (a `RecommendationCache` filled from a static
source of `--recommendations` objects, one per Deployment `app-<i>`, watched by its background thread as in
`gpudra serve`), with the same client (benchmarks/admission.py's driver) and unique pods (name and label varied,
so the decision cache cannot help), each owned by the ReplicaSet `app-<i>-<hash>` of a recommended Deployment for
half of them and of an unrecommended one for the other half, so the cache is looked up on every review. Two loads:

- `same_claims` (the target): `off` answers the pods annotated with the recommended size (`gpudra.io/vram`), `on`
  the same pods unannotated, sized from the cache: both build the same claims, so the ratio is the cost of taking
  the size from the cache. Target: p99 on / off <= 1.1.
- `as_is`: the unannotated pods both ways; `on` right-sizes half of them (a larger firstAvailable claim), `off`
  gives them whole GPUs, so this ratio also carries the cost of the different decisions (reported, no target).

Prints JSON: p50/p99 and reviews/s per load, mode and round, the means and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from admission import _drive  # noqa: E402  (benchmarks/admission.py: the same client)

from pki import write_dev_certificates  # noqa: E402
from webhook.review import pod_review  # noqa: E402

TARGET_P99_RATIO = 1.1


def recommendation(i: int, namespace: str = "bench") -> dict[str, Any]:
    """Deployment app-<i>'s recommendation: a size of its own (4-43 GiB, distinct per owner, as real peaks are)."""
    vram = 4096 + (i * 37) % 40000  # MiB; 37 and 40000 coprime: 10,000 owners, 10,000 sizes
    return {
        "apiVersion": "gpudra.io/v1alpha1",
        "kind": "GPUSizingRecommendation",
        "metadata": {"name": f"deployment-app-{i}", "namespace": namespace, "resourceVersion": str(100 + i)},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"app-{i}"}},
        "status": {
            "containers": [
                {"name": "main", "vram": f"{vram}Mi", "peak": f"{vram * 4 // 5}Mi", "samples": 2016, "window": "168h"}
            ],
            "lastUpdated": "2026-12-03T10:00:00Z",
        },
    }


class StaticSource:
    """A `kubeapi.ListWatchSource` that lists `count` objects once and then watches an idle server."""

    def __init__(self, count: int) -> None:
        self.items = [recommendation(i) for i in range(count)]
        self.idle = threading.Event()

    def list(self) -> tuple[list[dict[str, Any]], str]:
        return self.items, "1"

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]:
        while not self.idle.wait(3600):
            pass
        return iter(())

    def interrupt(self) -> None:
        self.idle.set()


def pods(count: int, owners: int, offset: int = 0, *, annotate: bool = False) -> list[dict[str, Any]]:
    """`count` distinct unannotated GPU pods; pod i is owned by Deployment app-<k>, k < `owners` (recommended) for
    even i and k >= `owners` (no recommendation) for odd i. With `annotate`, a recommended pod carries the
    recommendation's value as its `gpudra.io/vram` annotation instead (the same claim, decided without the cache)."""
    base: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "bench"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "ghcr.io/huggingface/text-embeddings-inference:1.5",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],  # fmt: skip
        },
    }
    out = []
    for i in range(offset, offset + count):
        pod = copy.deepcopy(base)
        k = (i * 7919) % owners if i % 2 == 0 else owners + i
        meta = pod["metadata"]
        meta["name"] = f"app-{k}-5d4f8-{i:05d}"
        meta["labels"] = {"pod-template-hash": "5d4f8", "bench/seq": str(i)}
        if annotate and i % 2 == 0:
            meta["annotations"] = {"gpudra.io/vram": recommendation(k)["status"]["containers"][0]["vram"]}
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{k}-5d4f8", "uid": f"u-{k}",
             "controller": True}
        ]  # fmt: skip
        out.append(pod)
    return out


def serve_main(args: argparse.Namespace) -> None:
    """The server process: the app as `gpudra serve` builds it, with or without the cache."""
    import uvicorn

    from policyengine import shipped_policies_dir
    from webhook.server import ServeSettings, build_app

    settings = ServeSettings(policies=str(shipped_policies_dir()), enable_echo=True, sizing_recommendations="on")
    source = StaticSource(args.recommendations) if args.mode == "on" else None
    if source is None:
        settings = ServeSettings(policies=str(shipped_policies_dir()), enable_echo=True, sizing_recommendations="off")
    app = build_app(settings, recommendations=source)
    uvicorn.run(app, host="127.0.0.1", port=args.port, ssl_certfile=args.cert, ssl_keyfile=args.key,
                log_level="warning", access_log=False)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    def __init__(self, certs: Path, mode: str, recommendations: int, log: Path) -> None:
        self.port = _free_port()
        self.ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--mode", mode, "--port", str(self.port), "--cert",
             str(certs / "tls.crt"), "--key", str(certs / "tls.key"), "--recommendations", str(recommendations)],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
        self.base = f"https://127.0.0.1:{self.port}"
        self._wait(mode, recommendations)

    def _get(self, path: str) -> str:
        with urllib.request.urlopen(self.base + path, context=self.ctx, timeout=2) as resp:
            return str(resp.read().decode())

    def _wait(self, mode: str, recommendations: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                text = self._get("/metrics")
            except OSError:
                time.sleep(0.2)
                continue
            gauge = [line for line in text.splitlines() if line.startswith("gpudra_sizing_recommendations ")]
            loaded = float(gauge[0].split()[1]) if gauge else 0.0
            if mode == "off" or loaded >= recommendations:
                return
            time.sleep(0.2)
        raise RuntimeError(f"the {mode} server did not start (or load its recommendations)")

    def lookups(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in self._get("/metrics").splitlines():
            if line.startswith("gpudra_sizing_lookups_total{"):
                out[line.split('result="')[1].split('"')[0]] = float(line.split()[1])
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _template(server: _Server, body: bytes) -> str:
    """The ResourceClaimTemplate one review's patch names (named from the claim's hash: it shows the sizing)."""
    import base64

    request = urllib.request.Request(server.base + "/mutate", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=server.ctx, timeout=5) as resp:
        answer = json.loads(resp.read())
    patch = json.loads(base64.b64decode(answer["response"].get("patch") or "W10="))
    names = [op["value"] for op in patch if isinstance(op.get("value"), str) and op["value"].startswith("gpudra-")]
    names += [
        c.get("resourceClaimTemplateName", "")
        for op in patch if isinstance(op.get("value"), list)
        for c in op["value"] if isinstance(c, dict)
    ]  # fmt: skip
    names += [op["value"].get("resourceClaimTemplateName", "") for op in patch if isinstance(op.get("value"), dict)]
    return next((n for n in names if n), "")


def run(recommendations: int, requests: int, concurrency: int, rounds: int, limit_s: float) -> dict[str, Any]:
    plain = [pod_review(p, uid=f"u{i}") for i, p in enumerate(pods(requests, recommendations))]
    annotated = [pod_review(p, uid=f"a{i}") for i, p in enumerate(pods(requests, recommendations, annotate=True))]
    warmup = [pod_review(p, uid=f"w{i}") for i, p in enumerate(pods(300, recommendations, offset=requests))]
    # same_claims: off answers pods annotated with the recommended size, on the same pods unannotated from the
    # cache, so both build the same claims and the ratio is the cache's own cost (the 1.1 target).
    # as_is: the unannotated pods both ways; on right-sizes half of them (a larger firstAvailable claim), off gives
    # them whole GPUs, so this ratio also carries the cost of the different decisions.
    loads = {"same_claims": {"off": annotated, "on": plain}, "as_is": {"off": plain, "on": plain}}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {"off": [], "on": []} for name in loads}
    lookups: dict[str, float] = {}
    templates: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp) / "certs"
        write_dev_certificates(certs, ["localhost"], ip_addresses=["127.0.0.1"])
        for r in range(rounds):
            for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):  # alternate, as the machine's load drifts
                server = _Server(certs, mode, recommendations, Path(tmp) / f"{mode}-{r}.log")
                try:
                    url = server.base + "/mutate"
                    asyncio.run(_drive(url, warmup, concurrency, server.ctx, limit_s))
                    for name, bodies in loads.items():
                        results[name][mode].append(asyncio.run(_drive(url, bodies[mode], concurrency, server.ctx,
                                                                      limit_s)))  # fmt: skip
                    templates[mode] = _template(server, loads["same_claims"][mode][0])  # pod 0: recommended
                    if mode == "on":
                        lookups = server.lookups()
                finally:
                    server.stop()

    def mean(runs: list[dict[str, Any]]) -> dict[str, float]:
        keys = ("p50_ms", "p99_ms", "reviews_per_s")
        return {k: round(statistics.fmean(run[k] for run in runs), 3) for k in keys}

    out: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count()},
        "recommendations": recommendations,
        "requests_per_run": requests,
        "concurrency": concurrency,
        "rounds": rounds,
        "loads": {},
    }
    for name in loads:
        off, on = mean(results[name]["off"]), mean(results[name]["on"])
        out["loads"][name] = {
            "off": {"mean": off, "runs": results[name]["off"]},
            "on": {"mean": on, "runs": results[name]["on"]},
            "ratio": {
                "p99_on_over_off": round(on["p99_ms"] / off["p99_ms"], 3),
                "p50_on_over_off": round(on["p50_ms"] / off["p50_ms"], 3),
                "throughput_on_over_off": round(on["reviews_per_s"] / off["reviews_per_s"], 3),
            },
        }
    ratio = out["loads"]["same_claims"]["ratio"]["p99_on_over_off"]
    out["target"] = {"load": "same_claims", "p99_ratio_max": TARGET_P99_RATIO, "met": ratio <= TARGET_P99_RATIO}
    out["lookups_last_on_run"] = lookups
    # pod 0's template (named from its claim's hash), annotated+off vs cache+on: equal names, equal claims
    out["recommended_pod_template"] = {**templates, "same": templates.get("off") == templates.get("on")}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recommendations", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit-seconds", type=float, default=60.0)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="off", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--cert", default="", help=argparse.SUPPRESS)
    parser.add_argument("--key", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_main(args)
        return
    result = run(args.recommendations, args.requests, args.concurrency, args.rounds, args.limit_seconds)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
