"""The real control plane for the e2e tests: the product's (simulator.verify.controlplane) with the tests' binary
check (stale builds refused) and the built kubectl.

No kubelet runs: a pod bound to a Node object with its ResourceClaims allocated is the observable result.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from simulator.verify.controlplane import (
    CONTROLLERS,
    FEATURE_GATES,
    Component,
    ControlPlaneError,
    free_port,
)
from simulator.verify.controlplane import ControlPlane as _ProductControlPlane
from simulator.verify.controlplane import http_ok as _http_ok
from simulator.verify.pki import Pki
from tests.controlplane import binaries

__all__ = [
    "CONTROLLERS",
    "FEATURE_GATES",
    "Component",
    "ControlPlane",
    "ControlPlaneError",
    "_http_ok",
    "free_port",
    "running",
]


def _apiserver_flags(workdir: Path, certs: Pki) -> list[str]:
    """kube-apiserver flags the tests add to the product's (files go under `workdir`)."""
    return []


class ControlPlane(_ProductControlPlane):
    """A running control plane. Use `ControlPlane.start()`; `stop()` tears it down."""

    @classmethod
    def start(cls, workdir: Path | None = None, feature_gates: dict[str, bool] | None = None) -> ControlPlane:
        bins = binaries.require("components")
        return cls.launch(bins, workdir=workdir, feature_gates=feature_gates, apiserver_flags=_apiserver_flags)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs the built kubectl against this cluster."""
        kubectl = binaries.bin_dir() / "kubectl"
        return subprocess.run(
            [str(kubectl), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
        )


@contextlib.contextmanager
def running(feature_gates: dict[str, bool] | None = None) -> Iterator[ControlPlane]:
    """Context manager form of ControlPlane.start()/stop()."""
    cp = ControlPlane.start(feature_gates=feature_gates)
    try:
        yield cp
    finally:
        cp.stop()
