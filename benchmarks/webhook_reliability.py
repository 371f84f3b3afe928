"""The webhook under hostile and broken input: what `gpudra serve` answers, and what a slow review costs the others.

    python benchmarks/webhook_reliability.py [--random 400] [--seed 0] [--normal 400] [--concurrency 8]

Starts `gpudra serve` over HTTPS on loopback (as benchmarks/admission.py does) and sends to /mutate and /validate:
- the corpus: inputs that broke gpudra before (issue 12's findings): JSON nested 10,000 deep, a lone-surrogate uid,
  GPU counts 2**70, 1e308, "2Ki" and -1, `dryRun: "false"`, a 5,000-container pod, a 1 MB annotation, 500
  distinct operations, a truncated body, a body that is not JSON, an empty body, a 9 MB body, and a client that
  hangs up mid-request;
- `--random` seeded mutations of the example pods' reviews: one field of the review or its pod replaced by a
  random JSON value.
Each answer is classed 2xx (allowed or denied), 4xx, 5xx, hang (none within `--timeout`) or connection error;
after every input the server must answer /healthz and still run (else a crash), and a pristine legacy GPU pod
sent right after it must come back patched (else "admitted untranslated"). Last, the p99 of `--normal` ordinary
reviews at `--concurrency`, alone and beside a 5,000-container review sent again and again, and the RSS that
`--half-sent` clients add while each holds a connection with half of a `--half-sent-bytes` body sent. `--only` runs
one part. Prints JSON.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import random
import socket
import ssl
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from admission import _percentile, _review, _Server, unique_pods  # noqa: E402

from tests.webhook.early_answer import post_reading_early  # noqa: E402

_SCALARS: list[Any] = [
    "",
    "Main",
    "a" * 64,
    "1e308",
    "2Ki",
    "-1",
    "0.5",
    2**70,
    -1,
    1e308,
    None,
    True,
    [],
    {},
    "\ud800",
]
_PATHS: list[tuple[str | int, ...]] = [
    ("apiVersion",), ("kind",), ("request",), ("request", "uid"), ("request", "kind"), ("request", "operation"),
    ("request", "namespace"), ("request", "dryRun"), ("request", "object"), ("request", "userInfo"),
    ("request", "object", "metadata"), ("request", "object", "metadata", "annotations"),
    ("request", "object", "spec"), ("request", "object", "spec", "containers"),
    ("request", "object", "spec", "containers", 0), ("request", "object", "spec", "containers", 0, "resources"),
    ("request", "object", "spec", "containers", 0, "resources", "limits"),
    ("request", "object", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
    ("request", "object", "spec", "resourceClaims"),
]  # fmt: skip


class _Client:
    """One HTTPS connection per call, raw bytes in, (status or failure kind, parsed body) out."""

    def __init__(self, port: int, ctx: ssl.SSLContext, timeout: float) -> None:
        self.port, self.ctx, self.timeout = port, ctx, timeout

    def post(self, path: str, body: bytes) -> tuple[str, Any]:
        """Reads while it writes, as kube-apiserver does: a refused body's answer comes before the reset."""
        try:
            raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            with self.ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                status, payload = post_reading_early(tls, path, body, self.timeout)
        except TimeoutError:
            return "hang", None
        except (OSError, http.client.HTTPException):
            return "connection error", None
        try:
            parsed = json.loads(payload)
        except ValueError:
            parsed = None
        return f"{status // 100}xx", parsed

    def healthy(self) -> bool:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=5)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def hang_up(self, body: bytes) -> None:
        """Send the headers and half the body, then close: the client that disconnects mid-request."""
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        with self.ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            head = "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            head += f"Content-Length: {len(body)}\r\n\r\n"
            tls.sendall(head.encode() + body[: len(body) // 2])


def _pods() -> list[dict[str, Any]]:
    return unique_pods(4)


def _body(review: Any) -> bytes:
    return json.dumps(review).encode()  # ASCII: a lone surrogate goes as its \u escape


def _set(doc: Any, path: tuple[str | int, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _corpus() -> list[tuple[str, bytes]]:
    pod = _pods()[1]  # pod-legacy-1gpu: one whole GPU
    base = json.loads(_review(pod, "uid-corpus"))
    cases: list[tuple[str, bytes]] = []
    nested = copy.deepcopy(base)
    nested["request"]["object"]["metadata"]["annotations"] = {"deep": "DEEP"}
    deep = b"[" * 10_000 + b'"x"' + b"]" * 10_000  # written as text: encoding it would recurse here too
    cases.append(("JSON nested 10,000 deep", _body(nested).replace(b'"DEEP"', deep)))
    surrogate = copy.deepcopy(base)
    surrogate["request"]["uid"] = "\ud800"
    cases.append(("lone-surrogate uid", _body(surrogate)))
    for count in (2**70, 1e308, "2Ki", -1, "0.5"):
        big = copy.deepcopy(base)
        big["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = count
        cases.append((f"nvidia.com/gpu: {count!r}", _body(big)))
    dry = copy.deepcopy(base)
    dry["request"]["dryRun"] = "false"
    cases.append(('dryRun: "false"', _body(dry)))
    cases.append(("5,000 GPU containers", _slow_review()))
    blob = copy.deepcopy(base)
    blob["request"]["object"]["metadata"]["annotations"] = {"blob": "x" * 1_048_576}
    cases.append(("1 MB annotation", _body(blob)))
    for i in range(500):
        op = copy.deepcopy(base)
        op["request"]["operation"] = f"OP{i}"
        cases.append(("500 distinct operations", _body(op)))
    text = _body(base)
    cases += [("truncated body", text[: len(text) // 2]), ("not JSON", b"\x00\xffnot json"), ("empty body", b"")]
    cases.append(("9 MB body", text[:-1] + b', "pad": "' + b"x" * 9_000_000 + b'"}'))
    return cases


def _slow_review() -> bytes:
    pod = copy.deepcopy(_pods()[1])
    container = pod["spec"]["containers"][0]
    pod["spec"]["containers"] = [{**copy.deepcopy(container), "name": f"c{i}"} for i in range(5000)]
    return _review(pod, "uid-slow")


def _mutations(count: int, seed: int) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    reviews = [json.loads(_review(p, f"uid-m{i}")) for i, p in enumerate(_pods())]
    out = []
    for i in range(count):
        review = copy.deepcopy(reviews[i % len(reviews)])
        path = rng.choice(_PATHS)
        value = rng.choice(_SCALARS + [{"k": rng.choice(_SCALARS)}, [rng.choice(_SCALARS)]])
        try:
            _set(review, path, value)
        except (KeyError, IndexError, TypeError):
            continue
        out.append(("random mutation", _body(review)))
    return out


def _allowed(answer: Any) -> bool:
    return isinstance(answer, dict) and bool((answer.get("response") or {}).get("allowed"))


def _translated(answer: Any) -> bool:
    response = (answer or {}).get("response") or {}
    return bool(response.get("allowed")) and bool(response.get("patch"))


def hostile(client: _Client, server: _Server, cases: list[tuple[str, bytes]]) -> dict[str, Any]:
    control = _review(_pods()[1], "uid-control")
    classes: Counter[str] = Counter()
    by_case: dict[str, Counter[str]] = {}
    untranslated: Counter[str] = Counter()
    crashes: list[str] = []
    for name, body in cases:
        for path in ("/mutate", "/validate"):
            kind, answer = client.post(path, body)
            if kind == "2xx":  # an AdmissionReview: allowed (maybe patched) or a denial naming the problem
                kind += " allowed" if _allowed(answer) else " denied"
            classes[kind] += 1
            by_case.setdefault(name, Counter())[kind] += 1
        if server.proc.poll() is not None or not client.healthy():
            crashes.append(name)
            break
        if not _translated(client.post("/mutate", control)[1]):
            untranslated[name] += 1
    client.hang_up(cases[0][1])
    alive = server.proc.poll() is None and client.healthy()
    return {
        "inputs": len(cases),
        "requests": sum(classes.values()),
        "answers": dict(classes),
        "by_input": {name: dict(counts) for name, counts in by_case.items()},
        "crashes": crashes,
        "alive_after_a_client_hung_up": alive,
        "pods_admitted_untranslated": sum(untranslated.values()),
        "untranslated_after": dict(untranslated),
    }


def _p99(client: _Client, bodies: list[bytes], concurrency: int) -> dict[str, Any]:
    def one(body: bytes) -> tuple[float, bool]:
        started = time.perf_counter()
        kind, answer = client.post("/mutate", body)
        return time.perf_counter() - started, kind == "2xx" and _translated(answer)

    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, bodies))
    latencies = [t for t, _ in results]
    return {
        "reviews": len(results),
        "not_translated": sum(1 for _, ok in results if not ok),
        "p50_ms": round(_percentile(latencies, 0.5) * 1000, 2),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 2),
    }


def _beside_slow(client: _Client, bodies: list[bytes], concurrency: int) -> dict[str, Any]:
    slow = _slow_review()
    stop = threading.Event()
    slow_answers: Counter[str] = Counter()
    slow_seconds: list[float] = []

    def hammer() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            slow_answers[client.post("/mutate", slow)[0]] += 1
            slow_seconds.append(time.perf_counter() - started)

    thread = threading.Thread(target=hammer, daemon=True)
    thread.start()
    time.sleep(0.5)
    beside = _p99(client, bodies, concurrency)
    stop.set()
    thread.join(timeout=client.timeout + 5)
    beside["slow_review"] = {"answers": dict(slow_answers), "max_s": round(max(slow_seconds, default=0.0), 2)}
    return beside


def slow_neighbour(client: _Client, normal: int, concurrency: int, rounds: int = 2) -> dict[str, Any]:
    """Alone, beside, alone, beside...: on a shared machine the load drifts, so each ratio compares neighbours."""
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        alone = _p99(client, [_review(p, f"uid-n{r}-{i}") for i, p in enumerate(unique_pods(normal))], concurrency)
        bodies = [_review(p, f"uid-s{r}-{i}") for i, p in enumerate(unique_pods(normal))]
        beside = _beside_slow(client, bodies, concurrency)
        ratio = round(beside["p99_ms"] / alone["p99_ms"], 3) if alone["p99_ms"] else None
        out.append({"alone": alone, "beside_a_slow_review": beside, "p99_ratio": ratio})
    ratios = sorted(r["p99_ratio"] for r in out if r["p99_ratio"] is not None)
    return {"rounds": out, "median_p99_ratio": ratios[len(ratios) // 2] if ratios else None}


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for pid {pid}")


def half_sent(client: _Client, server: _Server, clients: int, body_bytes: int) -> dict[str, Any]:
    """`clients` connections each send the headers and half of a `body_bytes` body, then wait; RSS is read once all
    of them sent their half (or were answered), and a pristine review must still be translated meanwhile."""
    control = _review(_pods()[1], "uid-control")
    before = _rss_mib(server.proc.pid)
    body = b'{"pad": "' + b"x" * (body_bytes - 11) + b'"}'
    head = "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    socks: list[ssl.SSLSocket] = []
    answered: Counter[str] = Counter()
    peak = before
    try:
        for _ in range(clients):
            raw = socket.create_connection(("127.0.0.1", client.port), timeout=client.timeout)
            tls = client.ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            socks.append(tls)
            try:
                tls.sendall(head.encode() + body[: len(body) // 2])
            except OSError:
                answered["refused while sending"] += 1
            peak = max(peak, _rss_mib(server.proc.pid))
        time.sleep(1.0)  # let the server read what was sent
        peak = max(peak, _rss_mib(server.proc.pid))
        started = time.perf_counter()
        translated = _translated(client.post("/mutate", control)[1])
        control_s = time.perf_counter() - started
        for tls in socks:
            tls.settimeout(0.05)
            try:
                first = tls.recv(64)
                answered[first.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"] += 1
            except (TimeoutError, ssl.SSLError, OSError):
                answered["no answer yet"] += 1
    finally:
        for tls in socks:
            tls.close()
    return {
        "clients": clients,
        "body_bytes": body_bytes,
        "rss_before_mib": before,
        "rss_peak_mib": peak,
        "rss_added_mib": round(peak - before, 1),
        "answers_to_the_half_sent": dict(answered),
        "pristine_pod_translated_meanwhile": translated,
        "pristine_pod_s": round(control_s, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=400, help="seeded random mutations to send")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--normal", type=int, default=400, help="ordinary reviews per p99 measurement")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="alone/beside pairs in the slow-neighbour part")
    parser.add_argument("--timeout", type=float, default=15.0, help="seconds before an unanswered input is a hang")
    parser.add_argument("--half-sent", type=int, default=100, help="clients that send half a body and wait")
    parser.add_argument("--half-sent-bytes", type=int, default=2 * 2**20)
    parser.add_argument("--only", choices=("hostile", "neighbour", "half-sent"), help="run one part only")
    args = parser.parse_args()
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = _Server(Path(tmp))
        try:
            client = _Client(server.port, server.ctx, args.timeout)
            if args.only in (None, "hostile"):
                started = time.perf_counter()
                result["hostile"] = hostile(client, server, _corpus() + _mutations(args.random, args.seed))
                result["hostile"]["wall_s"] = round(time.perf_counter() - started, 1)
            if args.only in (None, "neighbour"):
                result["slow_neighbour"] = slow_neighbour(client, args.normal, args.concurrency, args.rounds)
            if args.only in (None, "half-sent"):
                result["half_sent"] = half_sent(client, server, args.half_sent, args.half_sent_bytes)
        finally:
            server.stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
