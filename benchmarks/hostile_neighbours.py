"""Ordinary reviews' latency while tenants send hostile GPU pods to the same `gpudra serve`, in one run.

Issue 22: four 400 kB `sh -c` pods at once (shlex took 3.9 s of CPU for each) must leave ordinary reviews' p99 under
100 ms. A real `gpudra serve` over HTTPS (tests/webhook/test_serve_https.Server); `--ordinary` sequential reviews of
an ordinary GPU pod alone, then the same while `--hostile` clients each send 400 kB `sh -c` pods back to back. Prints
JSON: p50/p99 of each phase in ms, the ratio, and how many hostile reviews were answered (all must be 200).

    python benchmarks/hostile_neighbours.py [--ordinary 300] [--hostile 4] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.webhook.test_admission import review_body  # noqa: E402
from tests.webhook.test_serve_https import Server  # noqa: E402


def _pod(name: str, **container: Any) -> dict[str, Any]:
    spec = {"name": "app", "resources": {"limits": {"nvidia.com/gpu": 1}}, **container}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"containers": [spec]}}  # fmt: skip


def _script_pod(i: int) -> dict[str, Any]:
    words = " ".join(f"--flag-{j}=v{j}" for j in range(40_000))[:400_000]
    script = f"exec vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 {words}"
    return _pod(f"script-{i}", image=f"vllm/vllm-openai:v0.8.{i}", command=["sh", "-c"], args=[script])


def _latencies(server: Server, count: int) -> list[float]:
    body = review_body(_pod("ordinary", image="nvcr.io/nvidia/pytorch:24.05-py3"))
    out = []
    with server.client() as client:
        for _ in range(count):
            started = time.perf_counter()
            reply = client.post("/mutate", content=body)
            out.append((time.perf_counter() - started) * 1000)
            if reply.status_code != 200 or not reply.json()["response"]["allowed"]:
                raise SystemExit(f"an ordinary review failed: {reply.status_code} {reply.text[:300]}")
    return out


def _p(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0], 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ordinary", type=int, default=300)
    parser.add_argument("--hostile", type=int, default=4)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    count = 20 if args.smoke else args.ordinary
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        try:
            server.wait_ready()
            _latencies(server, 10)  # warm the decision path
            alone = _latencies(server, count)
            stop = threading.Event()
            answered: list[int] = []

            def attack(i: int) -> None:
                body = review_body(_script_pod(i), uid=f"h-{i}")
                with server.client() as client:
                    while not stop.is_set():
                        answered.append(client.post("/mutate", content=body, timeout=30).status_code)

            threads = [threading.Thread(target=attack, args=(i,), daemon=True) for i in range(args.hostile)]
            for t in threads:
                t.start()
            beside = _latencies(server, count)
            stop.set()
            for t in threads:
                t.join(timeout=60)
        finally:
            server.stop()
    out = {
        "ordinary_reviews": count,
        "hostile_clients": args.hostile,
        "hostile_reviews_answered": len(answered),
        "hostile_non_200": sum(1 for code in answered if code != 200),
        "alone_ms": {"p50": _p(alone, 50), "p99": _p(alone, 99)},
        "beside_hostile_ms": {"p50": _p(beside, 50), "p99": _p(beside, 99)},
    }
    out["p99_ratio"] = round(out["beside_hostile_ms"]["p99"] / out["alone_ms"]["p99"], 2)
    out["p99_beside_under_100ms"] = out["beside_hostile_ms"]["p99"] < 100
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
