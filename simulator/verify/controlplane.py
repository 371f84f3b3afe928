"""etcd, kube-apiserver (DRA on), kube-controller-manager and kube-scheduler on loopback, in a scratch directory.

No kubelet runs: a pod bound to a Node object with its ResourceClaims allocated is the observable result. The e2e
tests (tests/controlplane) and `gpudra simulate --verify-scheduler` both start their clusters here.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import yaml

from dra.errors import GpudraError

from . import pki

__all__ = [
    "CONTROLLERS",
    "FEATURE_GATES",
    "Component",
    "ControlPlane",
    "ControlPlaneError",
    "free_port",
    "http_ok",
]

# DRA gates the tests rely on. In 1.37 DynamicResourceAllocation, DRAPrioritizedList, DRAAdminAccess,
# DRAExtendedResource and DRAResourceClaimDeviceStatus are GA and locked to true; setting a locked gate
# to its locked value is accepted, so the list stays valid across releases.
FEATURE_GATES = {
    "DynamicResourceAllocation": True,
    "DRAPrioritizedList": True,
    "DRAPartitionableDevices": True,
    "DRAConsumableCapacity": True,
    "DRADeviceTaints": True,
    "DRAExtendedResource": True,
    "DRAAdminAccess": True,
    "DRAResourceClaimDeviceStatus": True,
}

# The controller-manager runs only what is needed. Node lifecycle is deliberately off: without a kubelet
# it would taint every fake Node unreachable.
CONTROLLERS = (
    "resourceclaim-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "deployment-controller",
    "replicaset-controller",
    "device-taint-eviction-controller",
    "resourcequota-controller",  # ResourceQuota status (used), without which namespace GPU quotas are not enforced
)

STARTUP_TIMEOUT = 90.0
LOG_TAIL_LINES = 60


def _die_with_parent() -> None:
    """Linux: the component is killed if its parent dies without tearing down (e.g. SIGKILL, timeout)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _gates_flag(gates: Mapping[str, bool]) -> str:
    return ",".join(f"{name}={str(value).lower()}" for name, value in sorted(gates.items()))


@dataclass
class Component:
    name: str
    args: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        if not self.log.exists():
            return "(no log)"
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


class ControlPlaneError(GpudraError, RuntimeError):
    """A component failed to start or become healthy; the message carries the log tails."""


@dataclass
class ControlPlane:
    """A running control plane. Use `ControlPlane.launch(binaries)`; `stop()` tears it down."""

    workdir: Path
    server: str
    ca_bundle: Path
    kubeconfig: Path
    client_cert: Path
    client_key: Path
    feature_gates: dict[str, bool]
    components: dict[str, Component] = field(default_factory=dict)
    # The scratch directory this object created (removed by stop() unless GPUDRA_KEEP_CONTROL_PLANE is set).
    scratch: Path | None = None
    # kube-scheduler's secure port (its /metrics answers the admin certificate) and its self-signed serving cert
    scheduler_url: str = ""
    scheduler_cert: Path | None = None

    # -- lifecycle --------------------------------------------------------------------------------------
    @classmethod
    def launch(
        cls,
        binaries: Mapping[str, Path],
        *,
        workdir: Path | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        apiserver_flags: Callable[[Path, pki.Pki], Sequence[str]] | Sequence[str] = (),
        scheduler_config: Mapping[str, Any] | None = None,
    ) -> Self:
        """Start every component from `binaries` (name -> path) and wait until each is healthy.

        `apiserver_flags` are added to kube-apiserver's (or a function of the work directory and the PKI that returns
        them, for flags that name files). `scheduler_config` is a KubeSchedulerConfiguration (v1) given to
        kube-scheduler as `--config`; its `clientConnection.kubeconfig` is pointed at this cluster."""
        gates = dict(FEATURE_GATES if feature_gates is None else feature_gates)
        # etcd's data goes to tmpfs where there is one: fsync-free and fast.
        shm = Path("/dev/shm")
        base = Path(tempfile.mkdtemp(prefix="gpudra-cp-", dir=shm if shm.is_dir() else None))
        workdir = workdir or base / "work"
        workdir.mkdir(parents=True, exist_ok=True)
        certs = pki.generate(workdir / "pki")
        api_port = free_port()
        server = f"https://127.0.0.1:{api_port}"
        kubeconfig = workdir / "admin.kubeconfig"
        _write_kubeconfig(kubeconfig, server, certs.ca.cert, certs.admin.cert, certs.admin.key)
        cp = cls(
            workdir=workdir,
            server=server,
            ca_bundle=certs.ca.cert,
            kubeconfig=kubeconfig,
            client_cert=certs.admin.cert,
            client_key=certs.admin.key,
            feature_gates=gates,
            scratch=base,
        )
        extra = apiserver_flags(workdir, certs) if callable(apiserver_flags) else apiserver_flags
        try:
            cp._start_all(dict(binaries), certs, api_port, base, list(extra), scheduler_config)
        except BaseException:
            cp.stop()
            raise
        return cp

    def _start_all(
        self,
        bins: dict[str, Path],
        certs: pki.Pki,
        api_port: int,
        base: Path,
        apiserver_flags: list[str],
        scheduler_config: Mapping[str, Any] | None,
    ) -> None:
        gates = _gates_flag(self.feature_gates)
        etcd_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        etcd = Component(
            "etcd",
            [
                str(bins["etcd"]),
                "--name=gpudra",
                f"--data-dir={base / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=gpudra=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            logs / "etcd.log",
        )
        self.components["etcd"] = etcd
        etcd.start()
        self._wait("etcd", lambda: http_ok(f"{etcd_url}/health"))

        apiserver = Component(
            "kube-apiserver",
            [
                str(bins["kube-apiserver"]),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # 1.37 rejects a loopback advertise address with the lease reconciler; no Endpoints needed here.
                "--endpoint-reconciler-type=none",
                f"--secure-port={api_port}",
                f"--tls-cert-file={certs.serving.cert}",
                f"--tls-private-key-file={certs.serving.key}",
                f"--client-ca-file={certs.ca.cert}",
                # Only to keep the aggregation-layer CA configmap complete (silences repeated errors).
                f"--requestheader-client-ca-file={certs.ca.cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--service-account-key-file={certs.sa_public}",
                f"--service-account-signing-key-file={certs.sa_private}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=Node,RBAC",
                "--runtime-config=resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
                f"--feature-gates={gates}",
                "--allow-privileged=true",
                "--profiling=false",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                *apiserver_flags,
            ],
            logs / "kube-apiserver.log",
        )
        self.components["kube-apiserver"] = apiserver
        apiserver.start()
        self._wait("kube-apiserver", lambda: self._api_ok("/readyz"))

        common = [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--feature-gates={gates}",
        ]
        kcm_port, sched_port = free_port(), free_port()
        kcm = Component(
            "kube-controller-manager",
            [
                str(bins["kube-controller-manager"]),
                *common,
                f"--secure-port={kcm_port}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
                f"--controllers={','.join(CONTROLLERS)}",
                f"--service-account-private-key-file={certs.sa_private}",
                f"--root-ca-file={certs.ca.cert}",
                "--use-service-account-credentials=false",
            ],
            logs / "kube-controller-manager.log",
        )
        scheduler_args = [str(bins["kube-scheduler"]), *common]
        if scheduler_config is not None:
            scheduler_args.append(f"--config={self._write_scheduler_config(scheduler_config)}")
        scheduler = Component(
            "kube-scheduler",
            [*scheduler_args, f"--secure-port={sched_port}", f"--cert-dir={self.workdir / 'scheduler-certs'}"],
            logs / "kube-scheduler.log",
        )
        self.components["kube-controller-manager"] = kcm
        self.components["kube-scheduler"] = scheduler
        self.scheduler_url = f"https://127.0.0.1:{sched_port}"
        self.scheduler_cert = self.workdir / "scheduler-certs" / "kube-scheduler.crt"  # written at its start
        kcm.start()
        scheduler.start()
        self._wait("kube-controller-manager", lambda: http_ok(f"https://127.0.0.1:{kcm_port}/healthz", insecure=True))
        self._wait("kube-scheduler", lambda: http_ok(f"https://127.0.0.1:{sched_port}/healthz", insecure=True))
        self._wait(
            "default service account", lambda: self._api_ok("/api/v1/namespaces/default/serviceaccounts/default")
        )

    def _write_scheduler_config(self, config: Mapping[str, Any]) -> Path:
        """The configuration as given, pointed at this cluster: with `--config`, kube-scheduler ignores `--kubeconfig`
        and reads `clientConnection.kubeconfig` (cmd/kube-scheduler/app/options/options.go, ApplyTo)."""
        written = {**config, "clientConnection": {**(config.get("clientConnection") or {})}}
        written["clientConnection"]["kubeconfig"] = str(self.kubeconfig)
        path = self.workdir / "kube-scheduler-config.yaml"
        path.write_text(yaml.safe_dump(written, sort_keys=False))
        return path

    def _wait(self, what: str, check: Callable[[], bool], timeout: float = STARTUP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [c.name for c in self.components.values() if not c.alive()]
            if dead:
                raise ControlPlaneError(f"{', '.join(dead)} exited while waiting for {what}\n{self.logs()}")
            if check():
                return
            time.sleep(0.2)
        raise ControlPlaneError(f"{what} not healthy after {timeout:.0f}s\n{self.logs()}")

    def stop(self) -> None:
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            component = self.components.get(name)
            if component is not None:
                component.stop()
        if self.scratch is not None and not os.environ.get("GPUDRA_KEEP_CONTROL_PLANE"):
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    # -- inspection -------------------------------------------------------------------------------------
    def logs(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last `lines` lines of every component's log, each under a header."""
        parts = []
        for c in self.components.values():
            state = "running" if c.alive() else f"exited {c.process.returncode if c.process else '-'}"
            parts.append(f"===== {c.name} ({state}) {c.log} =====\n{c.tail(lines)}")
        return "\n".join(parts)

    def log_path(self, component: str) -> Path:
        return self.components[component].log

    def alive(self) -> bool:
        return all(c.alive() for c in self.components.values())

    # -- clients ----------------------------------------------------------------------------------------
    def configuration(self) -> Any:
        """A `kubernetes.client.Configuration` for this cluster as its admin (system:masters)."""
        import kubernetes.client

        config = kubernetes.client.Configuration()
        config.host = self.server
        config.ssl_ca_cert = str(self.ca_bundle)
        config.cert_file = str(self.client_cert)
        config.key_file = str(self.client_key)
        return config

    def api_client(self) -> Any:
        """A fresh `kubernetes.client.ApiClient` authenticated as a cluster admin (system:masters)."""
        import kubernetes.client

        return kubernetes.client.ApiClient(self.configuration())

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_bundle))
        ctx.load_cert_chain(str(self.client_cert), str(self.client_key))
        return ctx

    def _api_ok(self, path: str) -> bool:
        return http_ok(self.server + path, context=self.ssl_context())


def http_ok(url: str, *, context: ssl.SSLContext | None = None, insecure: bool = False) -> bool:
    """Whether `url` answers 200 within 2 s."""
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gpudra", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "gpudra", "context": {"cluster": "gpudra", "user": "admin"}}],
        "current-context": "gpudra",
    }
    path.write_text(json.dumps(config, indent=2))
