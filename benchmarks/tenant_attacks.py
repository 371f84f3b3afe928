"""A tenant's attacks on the webhook (issue 37), with ordinary GPU pods created through the real API server meanwhile.

    python benchmarks/tenant_attacks.py [--smoke] [--only NAME] [--direct] [--attacker-cpus CORES] [--decoy]
                                        [--pods N] [--rate PER_S]

A tenant is a pod that can open connections to the webhook's Service and has no credentials. Each attack runs in a
process of its own (so its threads do not take the measuring process' GIL) from loopback addresses 127.0.0.2 and up,
against a `gpudra serve` started as manifests/base/deployment.yaml runs it (`--workers 2`, its environment; see
tests/controlplane/tenant_stack.py) and registered with the shipped webhook configurations on a kube-apiserver built by
tests/controlplane/build.sh, which reaches it from 127.0.0.1. For every attack, in one run: ordinary legacy GPU pods
created through the API server without the attack (the baseline) and again during it; prints JSON with, per attack,
`ordinary_pods`, `admitted`, `translated`, `ordinary_pods_due_during_attack` (those due before the attack process
finished: a p99 "under attack" is one only where this is all of them), `p99_ms_baseline`, `p99_ms_under_attack`,
`p99_ratio`, the server's RSS (`rss_mib_peak`, `rss_mib_after_30s`: polled until back near its level before the attack,
at most 30 s) and the attack's own counts. `--direct` posts the ordinary reviews straight to the webhook instead (no
control plane; for working on the attacks, not for figures). `--decoy` aims each attack at a second, identical
`gpudra serve` that the API server never calls, on the same machine: the ordinary pods then pay only for the CPU the
attack and the server's work for it take from the machine, not for any queue of the webhook they go through. On a
machine whose cores the control plane, the webhook and the attacker share, that is the floor any webhook meets.

The attacks (issue 37's table, protocol rows), each going on until the ordinary pods measured under it are done:
1. `h2_control_flood`: PING and SETTINGS frames as fast as they go over HTTP/2 (ALPN h2, else prior knowledge),
   beside a held stream and a GET /healthz every 100 ms.
2. `continuation_flood`: a stream held by a zero window (GET /metrics), then one header block that never ends.
3. `idle_connections`: 4 sources x 130 TLS handshakes that send nothing, closed and re-opened every 13 s, and TCP
   connections that never start TLS; `idle_connections_many_sources`: the same from 24 sources x 28 connections,
   each source under a per-source limit; `idle_connections_trusted_sources`: 4 x 130 again, from sources that each
   had one harmless review answered first (what the server trusts without `--client-ca`); both re-open every 3 s.
4. `forged_reviews`: AdmissionReviews with no client certificate naming a victim namespace; counts the
   ResourceClaimTemplates created there. Run with `--client-ca` and without.
6. `bytes_after_refusal`: a body sent on after the server refused the request or the connection: the bytes its
   socket still took and the server's CPU seconds.
7. `large_reviews`: valid ~2.5 MB reviews from 32 clients at once with the API server's client certificate: how many
   got 503.
8. `half_sent_bodies`: clients that send half of a 2 MiB body and wait: the RSS they add.
10. `log_flood`: concurrent bad requests (not TLS, not HTTP, not JSON, cut off, many HTTP/2 streams): log bytes/s.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import http.client
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.tenants.connections import bytes_after_refusal, half_sent_bodies, idle_connections, log_flood  # noqa: E402
from benchmarks.tenants.cpu_limit import CpuLimitUnavailable, cpu_limited  # noqa: E402
from benchmarks.tenants.http2 import continuation_flood, h2_control_flood  # noqa: E402
from benchmarks.tenants.reviews import forged_reviews, large_reviews  # noqa: E402
from benchmarks.tenants.wire import Control, Target, patched  # noqa: E402
from tests.controlplane.tenant_stack import (  # noqa: E402
    Load,
    Stack,
    Webhook,
    legacy_pod,
    memory_limit_mib,
    ordinary_load,
    tenant_sources,
    translated,
)
from webhook.review import pod_review  # noqa: E402

ATTACKS: dict[str, Callable[..., dict[str, Any]]] = {
    "h2_control_flood": h2_control_flood,
    "continuation_flood": continuation_flood,
    "idle_connections": idle_connections,
    "idle_connections_many_sources": idle_connections,
    "idle_connections_trusted_sources": idle_connections,
    "forged_reviews": forged_reviews,
    "bytes_after_refusal": bytes_after_refusal,
    "large_reviews": large_reviews,
    "half_sent_bodies": half_sent_bodies,
    "log_flood": log_flood,
}
# Issue 37's row of each attack.
ROWS = {"h2_control_flood": 1, "continuation_flood": 2, "idle_connections": 3, "idle_connections_many_sources": 3,
        "idle_connections_trusted_sources": 3,
        "forged_reviews": 4,
        "bytes_after_refusal": 6, "large_reviews": 7, "half_sent_bodies": 8, "log_flood": 10}  # fmt: skip
# Smaller sizes for --smoke; the bounds that make an attack an attack (4 x 130 handshakes past 512 connections, 280
# half-sent clients, 32 clients of large reviews) stay.
# Sizes other than the functions' defaults, in both modes. The many-sources variant of row 3 keeps each source
# under a per-source connection limit and the total past a worker's 512 connections: what the limit on all
# connections, not the one per source, must hold. Both variants re-open every 3 s, ahead of the server's header
# deadline, so that the table stays full rather than refilling every 13 s.
PARAMS: dict[str, dict[str, Any]] = {
    "idle_connections_many_sources": {"sources": 24, "per_source": 24, "tcp_per_source": 4, "reopen_seconds": 3.0},
    "idle_connections_trusted_sources": {"earn_trust": True, "reopen_seconds": 3.0},
}
SMOKE_PARAMS: dict[str, dict[str, Any]] = {
    "h2_control_flood": {"connections": 4},
    "continuation_flood": {"connections": 4},
    "forged_reviews": {"count": 20},
    "bytes_after_refusal": {"connections": 2, "seconds": 5.0},
    "large_reviews": {"count": 64},
    "log_flood": {"clients": 16},
}


# -- the attack process -----------------------------------------------------------------------------------------------
def attack_process(spec: dict[str, Any]) -> None:
    """Runs one attack (in a process of its own): prints `armed` once it is in full swing, stops when stdin says
    `stop` (or closes, or `limit_s` passes), then prints its counts as one JSON line."""
    target = Target(
        port=spec["port"], ca=spec["ca"], sources=tuple(spec["sources"]), client_ca=spec["client_ca"],
        legit_cert=tuple(spec["legit_cert"]) if spec.get("legit_cert") else None,
    )  # fmt: skip
    if spec.get("nice"):
        os.nice(int(spec["nice"]))
    stop, armed = threading.Event(), threading.Event()
    control = Control(stop, time.monotonic() + spec["limit_s"], armed)

    def announce() -> None:
        armed.wait(spec["limit_s"])
        print("armed", flush=True)

    def listen() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=announce, daemon=True).start()
    threading.Thread(target=listen, daemon=True).start()
    result = ATTACKS[spec["attack"]](target, control, **spec["params"])
    result["ended_monotonic"] = time.monotonic()  # the machine's clock: the harness counts the pods due before it
    used = resource.getrusage(resource.RUSAGE_SELF)
    result["attacker_cpu_s"] = round(used.ru_utime + used.ru_stime, 2)
    armed.set()
    print(json.dumps(result), flush=True)


@contextlib.contextmanager
def attacking(spec: dict[str, Any]) -> Iterator[Callable[[], dict[str, Any]]]:
    """Starts the attack process and waits until it is armed; the callable stops it and returns its counts."""
    limit = cpu_limited(spec["cpus"], "gpudra-attacker") if spec.get("cpus") else contextlib.nullcontext(None)
    with limit as procs, _attack_process(spec, procs) as finish:
        yield finish


@contextlib.contextmanager
def _attack_process(spec: dict[str, Any], cgroup_procs: Path | None) -> Iterator[Callable[[], dict[str, Any]]]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--attack-process", json.dumps(spec)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    if cgroup_procs is not None:  # before it arms: its attack threads start in the limit
        cgroup_procs.write_text(str(proc.pid))
    result: dict[str, Any] = {}

    def finish() -> dict[str, Any]:
        if not result:
            with contextlib.suppress(BrokenPipeError, OSError):
                proc.stdin.write("stop\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            try:
                out, _ = proc.communicate(timeout=spec["limit_s"] + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            lines = [line for line in out.splitlines() if line.startswith("{")]
            result.update(json.loads(lines[-1]) if lines else {"error": f"attack process exited {proc.returncode}"})
        return result

    try:
        line = proc.stdout.readline()
        if line.strip() != "armed":
            raise RuntimeError(f"the attack process did not arm: {line!r}")
        yield finish
    finally:
        finish()


# -- the harness ------------------------------------------------------------------------------------------------------
class Ordinary:
    """Ordinary GPU pods through the API server (or, `--direct`, their reviews straight to the webhook)."""

    def __init__(self, stack: Stack | None, webhook: Webhook, legit_cert: tuple[Path, Path] | None) -> None:
        self.stack, self.webhook, self.legit_cert = stack, webhook, legit_cert
        self._patched: set[str] = set()

    def run(self, count: int, concurrency: int, rate: float, prefix: str) -> Load:
        if self.stack is not None:
            return ordinary_load(self.stack.kube, self.stack.namespace, count, concurrency, rate, prefix)
        return self._direct(count, concurrency, rate, prefix)

    def translated(self, load: Load) -> int:
        if self.stack is not None:
            return translated(self.stack.kube, self.stack.namespace, load.names)
        return sum(1 for name in load.names if name in self._patched)

    def _direct(self, count: int, concurrency: int, rate: float, prefix: str) -> Load:
        load, lock = Load(), threading.Lock()
        ctx = self.webhook.client_context(self.legit_cert)
        began = time.monotonic()

        def one(i: int) -> None:
            due = began + i / rate
            time.sleep(max(0.0, due - time.monotonic()))
            name = f"{prefix}-{i}"
            with lock:
                load.due.append(due)
            conn = http.client.HTTPSConnection("127.0.0.1", self.webhook.port, context=ctx, timeout=10)
            try:
                conn.request("POST", "/mutate", body=pod_review(legacy_pod(name, "ordinary"), uid=name))
                response = conn.getresponse()
                answer, status = response.read(), response.status
            except (OSError, http.client.HTTPException) as e:
                with lock:
                    load.failures.append(f"client: {e}")
                return
            finally:
                conn.close()
            with lock:
                if status != 200 or b'"allowed":true' not in answer.replace(b" ", b""):
                    load.failures.append(f"{status}: {answer[:200]!r}")
                    return
                load.latencies.append(time.monotonic() - due)
                load.names.append(name)
                if patched(answer):
                    self._patched.add(name)

        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, range(count)))
        return load


@dataclass(frozen=True)
class Sizes:
    pods: int  # ordinary pods per phase (baseline, under attack)
    rate: float  # ordinary pods a second
    concurrency: int
    limit_s: float  # the longest an attack process runs
    settle_s: float = 30.0  # how long RSS may take to come back after an attack


# 400 pods a phase: their p99 is the fourth slowest. With 200 (their second slowest) the baselines of the eleven
# attacks in one run ranged 19.7-65.3 ms on a quiet 2-core machine, so a ratio of two of them said more of the run than
# of the attack. At 8 a second a phase still lasts 50 s.
FULL = Sizes(pods=400, rate=8.0, concurrency=8, limit_s=600)
SMOKE = Sizes(pods=24, rate=1.5, concurrency=4, limit_s=300)


def _rss_back(webhook: Webhook, before: float, seconds: float) -> tuple[float, float | None]:
    """Polls RSS until it is back within `rss_margin_mib(before)` of `before` (or `seconds` pass): the last reading
    and the seconds it took (None if it did not come back)."""
    started = time.monotonic()
    while True:
        now = webhook.rss_mib()
        if now <= before + rss_margin_mib(before):
            return now, round(time.monotonic() - started, 1)
        if time.monotonic() - started > seconds:
            return now, None
        time.sleep(0.5)


def rss_margin_mib(before: float) -> float:
    """How far above its level before an attack the server's RSS may stay and count as back: allocator slack
    (a fifth of the level, at least 48 MiB), far below any attack's measured cost."""
    return max(48.0, before * 0.2)


def run_attack(
    name: str, webhook: Webhook, ordinary: Ordinary, spec: dict[str, Any], sizes: Sizes, after: Callable[[], Any]
) -> dict[str, Any]:
    """Baseline ordinary pods, then the same during the attack; RSS sampled throughout and polled afterwards."""
    prefix = f"{name.replace('_', '-')}-{int(time.time())}"
    ordinary.run(4, 2, 10.0, f"{prefix}-warm")
    log_before, cpu_before, t0 = webhook.log_bytes(), webhook.cpu_seconds(), time.monotonic()
    baseline = ordinary.run(sizes.pods, sizes.concurrency, sizes.rate, f"{prefix}-base")
    baseline_log_rate = (webhook.log_bytes() - log_before) / (time.monotonic() - t0)
    baseline_cpu = webhook.cpu_seconds() - cpu_before
    rss_before = webhook.rss_mib()
    peak = [rss_before]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            peak[0] = max(peak[0], webhook.rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    log_before, cpu_before, t0 = webhook.log_bytes(), webhook.cpu_seconds(), time.monotonic()
    log_offset = log_before
    with attacking({**spec, "attack": name, "limit_s": sizes.limit_s}) as finish:
        under = ordinary.run(sizes.pods, sizes.concurrency, sizes.rate, f"{prefix}-under")
        counts = finish()
    ended = counts.pop("ended_monotonic", None)
    during = 0 if ended is None else sum(1 for due in under.due if due <= ended)
    seconds = time.monotonic() - t0
    log_rate = (webhook.log_bytes() - log_before) / seconds
    tracebacks = webhook.log_since(log_offset).count(b"Traceback (most recent call last)")
    cpu = webhook.cpu_seconds() - cpu_before
    sampling.set()
    sampler.join()
    alive = webhook.proc.poll() is None and webhook.healthy()
    rss_after, back_s = _rss_back(webhook, rss_before, sizes.settle_s)
    row: dict[str, Any] = {
        "row": ROWS[name],
        "ordinary_pods": sizes.pods,
        "admitted": under.created,
        "translated": ordinary.translated(under),
        "baseline_admitted": baseline.created,
        "baseline_translated": ordinary.translated(baseline),
        "ordinary_pods_due_during_attack": during,
        "p99_ms_baseline": baseline.p99_ms(),
        "p99_ms_under_attack": under.p99_ms(),
        "p99_ratio": round(under.p99_ms() / baseline.p99_ms(), 2) if baseline.p99_ms() else None,
        # the p99 of a few hundred pods is one of their slowest few: the middle moves far less from run to run
        "p50_p90_ms_baseline": [baseline.quantile_ms(0.5), baseline.quantile_ms(0.9)],
        "p50_p90_ms_under_attack": [under.quantile_ms(0.5), under.quantile_ms(0.9)],
        "failures_under_attack": dict(Counter(f[:120] for f in under.failures).most_common(5)),
        "rss_mib_before": rss_before,
        "rss_mib_peak": peak[0],
        "rss_mib_after_30s": rss_after,
        "rss_back_s": back_s,
        "rss_mib_each_process_after": webhook.rss_mib_each(),
        "rss_limit_mib": memory_limit_mib(),
        "server_alive": alive,
        "attack_seconds": round(seconds, 1),
        "server_cpu_s_baseline": round(baseline_cpu, 2),
        "server_cpu_s_under_attack": round(cpu, 2),
        "log_bytes_per_s_baseline": round(baseline_log_rate),
        "log_bytes_per_s_under_attack": round(log_rate),
        "log_tracebacks_under_attack": tracebacks,
        "client_ca": webhook.client_ca,
        "attack": counts,
    }
    extra = after()
    if extra:
        row["attack"].update(extra)
    return row


@contextlib.contextmanager
def _decoy(cp: Any, workdir: Path, client_ca: bool | None) -> Iterator[Webhook]:
    """`--decoy`: a second `gpudra serve` like the stack's (the same flags, environment and cluster, so it checks
    review sources alike), registered with no webhook configuration."""
    webhook = Webhook(workdir / "decoy", cp.kubeconfig, cp.webhook_client_ca, client_ca=client_ca)
    try:
        yield webhook
    finally:
        webhook.stop()


@contextlib.contextmanager
def _webhook(
    cp: Any, kube: Any, workdir: Path, client_ca: bool | None
) -> Iterator[tuple[Webhook, Stack | None, tuple[Path, Path] | None]]:
    """The webhook for one attack: on the control plane (`cp`), or alone (`--direct`) with a client CA of its own."""
    if cp is not None:
        with Stack.up(cp, kube, workdir, client_ca=client_ca) as stack:
            client = cp.workdir / "webhook-client"
            yield stack.webhook, stack, (client / "client.crt", client / "client.key")
        return
    from tests.controlplane.cluster import _webhook_client_identity

    cert = _webhook_client_identity(workdir / "client")
    webhook = Webhook(workdir, None, workdir / "client" / "ca.crt", client_ca=client_ca)
    try:
        yield webhook, None, cert
    finally:
        webhook.stop()


def run(
    names: list[str],
    smoke: bool,
    cp: Any,
    kube: Any,
    workdir: Path,
    attacker_nice: int = 0,
    attacker_cpus: float = 0,
    decoy: bool = False,
    sizes: Sizes | None = None,
) -> dict[str, Any]:
    sizes = sizes or (SMOKE if smoke else FULL)
    out: dict[str, Any] = {}
    for name in names:
        variants: list[tuple[str, bool | None]] = [("", None)]
        if name == "forged_reviews":
            variants = [("with_client_ca", True), ("without_client_ca", False)]
        rows: dict[str, Any] = {}
        for label, client_ca in variants:
            place = workdir / f"{name}{label}"
            decoyed = _decoy(cp, place, client_ca) if decoy else contextlib.nullcontext(None)
            with _webhook(cp, kube, place, client_ca) as (webhook, stack, cert), decoyed as aim:
                target = aim or webhook
                params = {**PARAMS.get(name, {}), **(SMOKE_PARAMS.get(name, {}) if smoke else {})}
                after: Callable[[], Any] = dict
                if name in ("forged_reviews", "large_reviews"):
                    namespace = stack.victim_namespace() if stack is not None else "victim"
                    params["namespace"] = namespace
                    if name == "forged_reviews" and stack is not None:

                        def after(stack: Stack = stack, namespace: str = namespace) -> dict[str, Any]:
                            made = stack.kube.list("ResourceClaimTemplate", namespace)
                            return {"templates_created_in_victim_namespace": len(made)}

                spec = {
                    "port": target.port, "ca": str(target.certs / "ca.crt"), "sources": tenant_sources(24),
                    "client_ca": target.client_ca, "legit_cert": [str(p) for p in cert] if cert else None,
                    "params": params, "nice": attacker_nice, "cpus": attacker_cpus,
                }  # fmt: skip
                ordinary = Ordinary(stack, webhook, cert if webhook.client_ca else None)
                row = run_attack(name, webhook, ordinary, spec, sizes, after)
                row["through_apiserver"] = stack is not None
                row["decoy"] = aim is not None
                if aim is not None:  # what the attacked server went through, beside the stack's figures above
                    row["decoy_server_alive"] = aim.proc.poll() is None and aim.healthy()
                rows[label] = row
        out[name] = rows[""] if "" in rows else rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small sizes (the suite runs this)")
    parser.add_argument("--only", choices=sorted(ATTACKS), action="append", help="run this attack (repeatable)")
    parser.add_argument("--direct", action="store_true", help="no control plane: ordinary reviews posted directly")
    parser.add_argument(
        "--attacker-nice", type=int, default=0, metavar="N",
        help="run the attack process at this nice value (19: its own CPU yields to the cluster's, as an attacker on "
        "another node would; the server's work for the attack still counts)",
    )  # fmt: skip
    parser.add_argument(
        "--attacker-cpus", type=float, default=0, metavar="CORES",
        help="hold the attack process to this many cores, as a tenant pod's CPU limit would (a CFS quota in a cgroup "
        "of its own: root and a cpu cgroup controller; the server's work for the attack still counts)",
    )  # fmt: skip
    parser.add_argument(
        "--decoy", action="store_true",
        help="aim the attacks at a second gpudra serve the API server does not call: what the attack's CPU alone "
        "costs the ordinary pods on this machine",
    )  # fmt: skip
    parser.add_argument(
        "--pods", type=int, metavar="N",
        help=f"ordinary pods in each phase, baseline and under attack (default {FULL.pods}; smoke {SMOKE.pods})",
    )  # fmt: skip
    parser.add_argument(
        "--rate", type=float, metavar="PER_S",
        help=f"ordinary pods created a second (default {FULL.rate:g}; smoke {SMOKE.rate:g})",
    )  # fmt: skip
    parser.add_argument("--attack-process", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = SMOKE if args.smoke else FULL
    if args.pods is not None or args.rate is not None:
        pods = sizes.pods if args.pods is None else args.pods
        rate = sizes.rate if args.rate is None else args.rate
        if pods < 1 or rate <= 0:
            parser.error(f"--pods {pods} must be at least 1 and --rate {rate:g} above 0")
        sizes = dataclasses.replace(sizes, pods=pods, rate=rate)
    if args.attack_process:
        attack_process(json.loads(args.attack_process))
        return
    if args.attacker_cpus:
        try:  # refused before a control plane starts
            with cpu_limited(args.attacker_cpus, "gpudra-attacker-check"):
                pass
        except CpuLimitUnavailable as exc:
            parser.error(str(exc))
    if args.decoy and args.direct:
        parser.error("--decoy needs the control plane (it compares with the pods the API server admits)")
    names = args.only or list(ATTACKS)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        if args.direct:
            result = run(names, args.smoke, None, None, Path(tmp), args.attacker_nice, args.attacker_cpus, sizes=sizes)
        else:
            import kubernetes.client

            from tests.controlplane.cluster import running
            from tests.controlplane.kube import Kube

            with running() as cp:
                config = cp.configuration()
                config.connection_pool_maxsize = 16
                kube = Kube(kubernetes.client.ApiClient(config))
                result = run(
                    names, args.smoke, cp, kube, Path(tmp), args.attacker_nice, args.attacker_cpus, args.decoy, sizes
                )
    out = {
        "machine": {"cpus": os.cpu_count()},
        "smoke": args.smoke,
        "through_apiserver": not args.direct,
        "seconds": round(time.monotonic() - started, 1),
        "attacker_nice": args.attacker_nice,
        "attacker_cpus": args.attacker_cpus or None,
        "decoy": args.decoy,
        "ordinary_pods_per_phase": sizes.pods,
        "ordinary_pods_per_s": sizes.rate,
        "attacks": result,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
