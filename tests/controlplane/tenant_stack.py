"""The stage for benchmarks/tenant_attacks.py and its e2e test: `gpudra serve` as the Deployment runs it, registered
with the shipped webhook configurations on a real kube-apiserver, and ordinary GPU pods created through that API
server while a tenant attacks the webhook from other loopback addresses.

`Webhook` reads the container's arguments, environment and memory limit from manifests/base/deployment.yaml (only the
paths, port and in-cluster access are replaced), so what the attacks meet is what a default install runs. The API
server reaches it from 127.0.0.1; tenants connect from 127.0.0.2 and up (`tenant_sources`), as pods with addresses
of their own would: `Stack` registers a Pod per tenant address (status.podIP set, never scheduled), so that the
webhook's review-source check (webhook.review_sources) sees them as the tenant pods they stand for.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import copy
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from pki import write_dev_certificates
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, exists, wait_for
from tests.controlplane.webhook_configs import shipped_webhook_configurations

__all__ = [
    "DEPLOYMENT",
    "Load",
    "Stack",
    "Webhook",
    "deployment_container",
    "memory_limit_mib",
    "ordinary_load",
    "percentile",
    "tenant_sources",
]

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = ROOT / "manifests" / "base" / "deployment.yaml"
# Flags whose values only make sense inside the pod (mounted files, the Service's port, in-cluster credentials).
_REPLACED = ("--policies", "--cert", "--key", "--client-ca", "--port", "--host", "--in-cluster", "--kubeconfig")
_TICKS = os.sysconf("SC_CLK_TCK")
_UNITS = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0, "Ti": 1024.0**2}


def deployment_container() -> dict[str, Any]:
    """The gpudra container of the shipped Deployment."""
    deployment = yaml.safe_load(DEPLOYMENT.read_text())
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "webhook"] or [
        deployment["spec"]["template"]["spec"]["containers"][0]
    ]
    return dict(container)


def memory_limit_mib() -> float:
    """The Deployment's memory limit for the container, in MiB."""
    text = str(deployment_container()["resources"]["limits"]["memory"])
    for suffix, scale in _UNITS.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text) / 2**20


# The tenant addresses the attacks use (benchmarks/tenant_attacks.py: tenant_sources(24)), registered as pods.
TENANT_PODS = 24


def tenant_sources(count: int) -> list[str]:
    """`count` loopback addresses other than the API server's 127.0.0.1: one per attacking pod."""
    if not 1 <= count <= 250:
        raise ValueError(f"tenant sources must be 1..250 (got {count})")
    return [f"127.0.0.{2 + i}" for i in range(count)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _process_tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def _deployment_args(client_ca: bool | None) -> tuple[list[str], dict[str, str], bool]:
    """The container's `serve` flags without the in-pod ones, its literal environment, and whether it runs with
    `--client-ca` (`client_ca` True/False forces it on or off)."""
    container = deployment_container()
    args: list[str] = []
    has_client_ca = False
    skip_value = False
    for arg in container.get("args", []):
        if skip_value:
            skip_value = False
            continue
        name = str(arg).split("=", 1)[0]
        if name == "--client-ca":
            has_client_ca = True
        if name in _REPLACED:
            skip_value = "=" not in str(arg) and name != "--in-cluster"
            continue
        args.append(str(arg))
    env = {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}
    return args, env, has_client_ca if client_ca is None else client_ca


class Webhook:
    """`gpudra serve` with the Deployment's flags and environment on 127.0.0.1, its own certificates, side effects
    through `kubeconfig` (None: no API server, for runs without the control plane), and `--client-ca` =
    `client_ca_file` (the CA of the API server's webhook client certificate) when the Deployment asks for client
    certificates or `client_ca` says so."""

    def __init__(
        self, workdir: Path, kubeconfig: Path | None, client_ca_file: Path, client_ca: bool | None = None
    ) -> None:
        self.workdir = workdir
        self.certs = workdir / "certs"
        write_dev_certificates(self.certs, ["localhost"], ip_addresses=["127.0.0.1"])
        self.ca_bundle = base64.b64encode((self.certs / "ca.crt").read_bytes()).decode()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        args, env, self.client_ca = _deployment_args(client_ca)
        self.args = args
        command = [sys.executable, "-m", "gpudra", *args[:1], "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--cert", str(self.certs / "tls.crt"), "--key", str(self.certs / "tls.key")]
        command += [*(["--kubeconfig", str(kubeconfig)] if kubeconfig else []), *args[1:]]
        if self.client_ca:
            command += ["--client-ca", str(client_ca_file)]
        # The attacks count ordinary pods translated; a DeviceClass mapping nvidia.com/gpu (KEP-5004) that another
        # module left in the shared control plane would have whole-GPU pods left to the scheduler untranslated.
        command += ["--extended-resource-mapping", "off"]
        self.command = command
        self.log_path = workdir / "serve.log"
        self._log = self.log_path.open("wb")
        environment = {**os.environ, **env, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT, env=environment)
        self.ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        self._wait_ready()

    def client_context(self, certificate: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        """A client context trusting the serving CA, presenting `certificate` (cert, key) when given."""
        ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        if certificate is not None:
            ctx.load_cert_chain(str(certificate[0]), str(certificate[1]))
        return ctx

    def _wait_ready(self) -> None:
        import urllib.request

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gpudra serve exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/readyz", context=self.ctx, timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"gpudra serve not ready in 120 s:\n{self.log_tail()}")

    def healthy(self, timeout: float = 5.0) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/healthz", context=self.ctx, timeout=timeout):
                return True
        except OSError:
            return False

    def rss_mib(self) -> float:
        """Resident memory of the whole process tree (uvicorn's supervisor and its workers), as the container's
        memory limit counts it."""
        return round(sum(self.rss_mib_each()), 1)

    def rss_mib_each(self) -> list[float]:
        """Resident memory of each process of the tree, the supervisor first."""
        each = []
        for pid in _process_tree(self.proc.pid):
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        each.append(round(int(line.split()[1]) / 1024, 1))
        return each

    def cpu_seconds(self) -> float:
        total = 0.0
        for pid in _process_tree(self.proc.pid):
            with contextlib.suppress(OSError, IndexError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / _TICKS
        return total

    def log_bytes(self) -> int:
        return self.log_path.stat().st_size

    def log_since(self, offset: int) -> bytes:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read()

    def log_tail(self, size: int = 4000) -> str:
        return self.log_path.read_bytes()[-size:].decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def legacy_pod(name: str, namespace: str) -> dict[str, Any]:
    pod = yaml.safe_load((ROOT / "examples" / "pod-legacy-1gpu.yaml").read_text())
    pod["metadata"] = {"name": name, "namespace": namespace, "labels": {"tenant-attacks/ordinary": "true"}}
    return dict(pod)


@dataclass
class Load:
    """Ordinary pod creations through the API server: how long each took, which failed and why."""

    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    due: list[float] = field(default_factory=list)  # when each creation tried was due (`time.monotonic()`)

    @property
    def created(self) -> int:
        return len(self.latencies)

    def p99_ms(self) -> float:
        return self.quantile_ms(0.99)

    def quantile_ms(self, q: float) -> float:
        return round(percentile(self.latencies, q) * 1000, 1)


def ordinary_load(
    kube: Kube, namespace: str, count: int, concurrency: int, rate: float, prefix: str, limit_s: float = 300.0
) -> Load:
    """`count` legacy GPU pods created at `rate` a second by `concurrency` threads (bounded by `limit_s`): the
    cluster's ordinary users. Each creation's time counts from when it was due, so a stall shows in full; the due
    times are on `time.monotonic()`'s clock, which other processes on the machine share (an attack's end)."""
    load = Load()
    lock = threading.Lock()
    began = time.monotonic()
    stop = began + limit_s

    def one(i: int) -> None:
        due = began + i / rate
        now = time.monotonic()
        if due > stop:
            return
        if due > now:
            time.sleep(due - now)
        name = f"{prefix}-{i}"
        with lock:
            load.due.append(due)
        try:
            kube.create(legacy_pod(name, namespace))
        except ApiException as e:
            with lock:
                load.failures.append(f"{e.status}: {str(e.body)[:300]}")
            return
        except OSError as e:  # the client's own connection to the API server
            with lock:
                load.failures.append(f"client: {e}")
            return
        with lock:
            load.latencies.append(time.monotonic() - due)
            load.names.append(name)

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(count)))
    return load


def translated(kube: Kube, namespace: str, names: list[str]) -> int:
    """How many of the pods `names` were stored translated (DRA claims in place of nvidia.com/gpu)."""
    wanted = set(names)
    pods = kube.list("Pod", namespace, label_selector="tenant-attacks/ordinary=true")
    return sum(1 for p in pods if p["metadata"]["name"] in wanted and p["spec"].get("resourceClaims"))


@dataclass
class Stack:
    """A webhook registered with the shipped configurations for one scope, and a namespace they serve."""

    cp: ControlPlane
    kube: Kube
    webhook: Webhook
    scope: str
    namespace: str
    configurations: list[dict[str, Any]]

    @classmethod
    @contextlib.contextmanager
    def up(cls, cp: ControlPlane, kube: Kube, workdir: Path, client_ca: bool | None = None) -> Iterator[Stack]:
        scope = f"attack-{uuid.uuid4().hex[:8]}"
        workdir.mkdir(parents=True, exist_ok=True)
        webhook = Webhook(workdir, cp.kubeconfig, cp.webhook_client_ca, client_ca=client_ca)
        configurations = shipped_webhook_configurations(f"gpudra-{scope}", webhook.port, webhook.ca_bundle, scope)
        namespace = f"{scope}-pods"
        stack = cls(cp, kube, webhook, scope, namespace, configurations)
        try:
            for config in configurations:
                kube.create(copy.deepcopy(config))
            kube.create({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": namespace, "labels": {"gpudra-e2e": scope}}})  # fmt: skip
            wait_for(lambda: kube.list("ServiceAccount", namespace), timeout=60, what=f"{namespace}/default")
            stack.register_tenant_pods(tenant_sources(TENANT_PODS))
            wait_for(stack._dry_run_translated, timeout=60, what="the webhook configurations in effect")
            yield stack
        finally:
            for config in configurations:
                with contextlib.suppress(ApiException):
                    kind = config["kind"]
                    kube.delete(kind, config["metadata"]["name"])
            for name in (namespace, f"{scope}-tenant"):
                with contextlib.suppress(ApiException):
                    kube.delete("Namespace", name)
            webhook.stop()

    def register_tenant_pods(self, addresses: list[str]) -> None:
        """A running Pod holding each address, in a tenant namespace of this stack: what the API server would say of
        a tenant's pod. No kubelet runs them; no scheduler picks them (a scheduler name nobody serves)."""
        namespace = f"{self.scope}-tenant"
        self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for i, address in enumerate(addresses):
            name = f"tenant-{i}"
            spec = {"schedulerName": "nobody", "containers": [{"name": "tenant", "image": "tenant"}]}
            self.kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}, namespace)
            status = {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}]}
            self.kube.patch("Pod", name, {"status": status}, namespace, subresource="status")

    def _dry_run_translated(self) -> bool:
        pod = legacy_pod("probe", self.namespace)
        try:
            created = self.kube.request("POST", self.kube.path("Pod", self.namespace) + "?dryRun=All", pod)
        except ApiException:
            return False
        return bool(created.get("spec", {}).get("resourceClaims"))

    def victim_namespace(self) -> str:
        """A namespace of the cluster's that no configuration of this stack serves (a forged review names it)."""
        name = f"{self.scope}-victim"
        if not exists(self.kube, "Namespace", name):
            self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    def delete_namespace(self, name: str) -> None:
        with contextlib.suppress(ApiException):
            self.kube.delete("Namespace", name)
