"""The steady load alone: pods created at a fixed rate through the real API server, without a webhook, to a webhook
that only patches (`/echo-patch`) and to gpudra as deployed, in an order that rotates from round to round.

    python benchmarks/admission_steady.py [--rate 150] [--seconds 60] [--rounds 2] [--workers 2] [--gated]

`benchmarks/admission.py --through-apiserver` runs one steady load of each kind after all its bursts, always in the
same order, so gpudra's came last, on a cluster that had taken every earlier load, and with Kyverno's controllers
running beside it until 41b52d7. Here every load gets a fresh namespace on the same control plane, deleted (its pods
and claims with it) before the next starts, and the order rotates, so that no kind always meets the most used
cluster. Per load: the client's p50/p99 (from each pod's due time, open loop), kube-apiserver's own histogram of the
webhook's admission duration (`server_side_p50_ms`/`server_side_p99_ms`, as `admission.py` reads it; its buckets are
5, 25, 100 ms...) and the CPU seconds of every process during it. Prints one JSON object with every round and, per
kind, the median and the worst of the rounds' server-side p99; `gpudra_over_echo_patch` is their ratio of medians.
No kubelet runs here, so every pod stays pending and kube-scheduler retries the translated ones (they carry claims)
on these same cores; `--gated` gives every measured pod a scheduling gate, which admission does not look at and
kube-scheduler waits on, to measure admission without that.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.admission import (  # noqa: E402
    SCHEDULING_GATE,
    _admitted,
    _cpu_usage,
    _outward_address,
    _process_ids,
    _Server,
    _steady,
    _webhook_configuration,
)

# The namespace label each kind's configuration selects (the shipped configuration's own selector skips
# `gpudra.io/webhook=disabled`, which every namespace here carries).
_LABELS = {"echo_patch": "gpudra.io/benchmark-steadyfloor", "gpudra": "gpudra.io/benchmark-steady"}
KINDS = ("legacy", "echo_patch", "gpudra")


def run(rate: float, seconds: float, rounds: int, workers: int, gated: bool = False) -> dict[str, Any]:
    import kubernetes.client

    from tests.controlplane.cluster import running
    from tests.controlplane.kube import Kube, exists, wait_for

    legacy = yaml.safe_load((ROOT / "examples" / "pod-legacy-1gpu.yaml").read_text())
    outward = _outward_address() or "127.0.0.1"
    count = max(1, round(rate * seconds))
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    with running() as cp, tempfile.TemporaryDirectory() as tmp:
        config = cp.configuration()
        config.connection_pool_maxsize = 32
        kube = Kube(kubernetes.client.ApiClient(config))
        server = _Server(Path(tmp), kubeconfig=cp.kubeconfig, workers=workers, outward=outward)
        pids = _process_ids(cp, server)

        def namespace(kind: str) -> str:
            name = f"steady-{kind.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
            labels = {"gpudra.io/webhook": "disabled", **({_LABELS[kind]: "true"} if kind in _LABELS else {})}
            kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
            wait_for(lambda: kube.list("ServiceAccount", name), timeout=60, what=f"ServiceAccount {name}/default")
            return name

        def pods(ns: str, n: int) -> list[dict[str, Any]]:
            made = []
            for i in range(n):
                pod = copy.deepcopy(legacy)
                pod["metadata"] = {"name": f"p-{i}", "namespace": ns}
                if gated:
                    pod["spec"]["schedulingGates"] = [{"name": SCHEDULING_GATE}]
                made.append(pod)
            return made

        def remove(ns: str) -> None:
            kube.delete("Namespace", ns)
            wait_for(lambda: not exists(kube, "Namespace", ns), timeout=600, what=f"namespace {ns} deleted")

        try:
            kube.create(_webhook_configuration(server, outward, path="/echo-patch", selected_by=_LABELS["echo_patch"]))
            kube.create(_webhook_configuration(server, outward, selected_by=_LABELS["gpudra"]))
            for kind in ("echo_patch", "gpudra"):  # in effect, and every connection warm, before any measured load
                ns = namespace(kind)

                def warm(ns: str = ns, kind: str = kind) -> bool:
                    return _warm(kube, ns, kind, pods)

                wait_for(warm, timeout=120, what=f"the {kind} webhook in effect")
                remove(ns)
            for i in range(rounds):
                for kind in KINDS[i % len(KINDS) :] + KINDS[: i % len(KINDS)]:
                    ns = namespace(kind)
                    before = _cpu_usage(pids)
                    figures = _steady(cp, pods(ns, count), rate)
                    figures["cpu_seconds"] = {k: round(v - before[k], 2) for k, v in _cpu_usage(pids).items()}
                    translated, patched, _ = _admitted(kube, ns)
                    figures.update(kind=kind, round=i, pods_translated=translated, pods_patched=patched)
                    figures.pop("what", None)
                    results.append(figures)
                    print(json.dumps({k: figures.get(k) for k in _SHOWN}), file=sys.stderr, flush=True)
                    remove(ns)
        finally:
            server.stop()
    summary = _summary(results, rate, seconds, rounds, workers, outward, time.perf_counter() - started)
    summary["gated"] = gated
    return summary


_SHOWN = ("kind", "round", "created", "failures", "client_p99_ms", "server_side_p50_ms", "server_side_p99_ms")


def _warm(kube: Any, ns: str, kind: str, pods: Any) -> bool:
    """20 more pods through `kind`'s webhook; True once the last of them came back mutated by it."""
    made = []
    for pod in pods(ns, 20):
        pod["metadata"]["name"] = f"warm-{uuid.uuid4().hex[:10]}"
        made.append(kube.create(pod))
    annotations = (made[-1].get("metadata") or {}).get("annotations") or {}
    if kind == "echo_patch":
        return "gpudra.io/echo" in annotations
    return bool((made[-1].get("spec") or {}).get("resourceClaims"))


def _summary(
    results: list[dict[str, Any]], rate: float, seconds: float, rounds: int, workers: int, outward: str, wall: float
) -> dict[str, Any]:
    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        mine = [r for r in results if r["kind"] == kind]
        server = [r["server_side_p99_ms"] for r in mine if r.get("server_side_p99_ms") is not None]
        client = [r["client_p99_ms"] for r in mine if r.get("client_p99_ms") is not None]
        by_kind[kind] = {
            "client_p99_ms_median": round(statistics.median(client), 2) if client else None,
            "server_side_p99_ms_median": round(statistics.median(server), 2) if server else None,
            "server_side_p99_ms_worst": max(server) if server else None,
            "pods": sum(r["pods"] for r in mine),
            "created": sum(r["created"] for r in mine),
            "translated": sum(r["pods_translated"] for r in mine) if kind == "gpudra" else None,
            "patched": sum(r["pods_patched"] for r in mine) if kind == "echo_patch" else None,
        }
    floor = by_kind["echo_patch"]["server_side_p99_ms_median"]
    mine = by_kind["gpudra"]["server_side_p99_ms_median"]
    return {
        "rate_per_s": rate,
        "seconds": seconds,
        "rounds": rounds,
        "webhook_workers": workers,
        "webhook_address": outward,
        "by_kind": by_kind,
        "gpudra_over_echo_patch": round(mine / floor, 3) if mine and floor else None,
        "runs": results,
        "wall_seconds": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=150.0, help="pods created per second (open loop)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each load")
    parser.add_argument("--rounds", type=int, default=2, help="loads of each kind, the order rotating")
    parser.add_argument("--workers", type=int, default=2, help="gpudra serve --workers (the Deployment's)")
    parser.add_argument(
        "--gated", action="store_true",
        help="the pods carry a scheduling gate, so kube-scheduler does not retry them (no kubelet ever runs them here: "
        "without it, the pending pods' retries share these cores with the admission being measured)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.rate <= 0 or args.seconds <= 0 or args.rounds < 1 or args.workers < 1:
        parser.error("--rate and --seconds must be above 0, --rounds and --workers at least 1")
    print(json.dumps(run(args.rate, args.seconds, args.rounds, args.workers, args.gated), indent=2))


if __name__ == "__main__":
    main()
