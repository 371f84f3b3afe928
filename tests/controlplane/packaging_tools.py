"""helm and olm-validate, built by build.sh from tests/tools beside the control plane; refused when stale."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.controlplane import binaries, sourcehash

HASHES = {"helm": sourcehash.helm_hash, "olm-validate": sourcehash.olm_validate_hash}


def require(name: str) -> Path:
    """The path of `helm` or `olm-validate`; raises MissingBinaries if absent or built from other sources."""
    path = binaries.bin_dir() / name
    if not os.access(path, os.X_OK):
        raise binaries.MissingBinaries(f"{name} not found in {path.parent}: {binaries.BUILD_HINT}")
    if shutil.which("go") is None:
        raise binaries.MissingBinaries(
            f"Go is not installed, so {name} cannot be built or checked: {binaries.BUILD_HINT}"
        )
    want = HASHES[name](sourcehash.go_version())
    stamp = binaries.cache_dir() / f"{name}.stamp"
    have = stamp.read_text().strip() if stamp.exists() else "none"
    if have != want:
        raise binaries.MissingBinaries(f"{path} was built from other sources ({have} != {want}): {binaries.BUILD_HINT}")
    return path
