"""Where the Kubernetes components come from: a directory the user names, or the cache `tests/controlplane/build.sh`
fills (`~/.cache/gpudra/k8s/<version>/bin`). A missing binary is an error naming it and how to get it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from dra.errors import GpudraError

__all__ = [
    "BUILD_HINT",
    "COMPONENTS",
    "KUBERNETES_VERSION",
    "MissingBinaries",
    "cache_root",
    "component_version",
    "find_components",
]

# The release tests/controlplane/build.sh pins (tests/controlplane/gomod/go.mod); a test holds the two equal.
KUBERNETES_VERSION = "v1.37.2"
# What a control plane without a kubelet needs: the scheduler decides, the controller-manager turns templates into
# claims, the API server and etcd hold the objects.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
BUILD_HINT = (
    "build them with `bash tests/controlplane/build.sh` from a gpudra checkout (needs Go >= 1.26 and network; "
    "it fills ~/.cache/gpudra/k8s/<version>/bin), or pass --k8s-bin DIR naming a directory that holds "
    + ", ".join(COMPONENTS)
)


class MissingBinaries(GpudraError, RuntimeError):
    """The components are absent (or not executable); the message names them and says how to get them."""


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/gpudra/k8s` (or `~/.cache/gpudra/k8s`): build.sh's `<version>/bin` directories live here."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gpudra" / "k8s"


def _missing(directory: Path) -> list[str]:
    return [name for name in COMPONENTS if not os.access(directory / name, os.X_OK)]


def _version_key(directory: Path) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", directory.parent.name)
    return tuple(int(n) for n in numbers)


def find_components(bin_dir: Path | None = None) -> dict[str, Path]:
    """The components in `bin_dir`, or (None) in the cache: the pinned release's directory first, else the newest
    complete one. Raises `MissingBinaries` naming what is missing and where it looked."""
    if bin_dir is not None:
        if not bin_dir.is_dir():
            raise MissingBinaries(f"--k8s-bin {bin_dir}: not a directory; it must hold {', '.join(COMPONENTS)}")
        missing = _missing(bin_dir)
        if missing:
            raise MissingBinaries(
                f"--k8s-bin {bin_dir}: {', '.join(missing)} not found there (or not executable); it must hold "
                f"{', '.join(COMPONENTS)}"
            )
        return {name: bin_dir / name for name in COMPONENTS}
    root = cache_root()
    pinned = root / KUBERNETES_VERSION / "bin"
    others = sorted((d for d in root.glob("*/bin") if d != pinned), key=_version_key, reverse=True)
    for directory in (pinned, *others):
        if directory.is_dir() and not _missing(directory):
            return {name: directory / name for name in COMPONENTS}
    raise MissingBinaries(f"the Kubernetes components are not in {pinned}: {BUILD_HINT}")


def component_version(path: Path) -> str:
    """What `<component> --version` reports (`Kubernetes v1.37.2` -> `v1.37.2`), or `unknown`."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"v\d+\.\d+\.\d+\S*", out.stdout + out.stderr)
    return match.group(0) if match else "unknown"
