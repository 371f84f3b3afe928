"""Source hashes that key the binary cache: build.sh stamps them, the fixtures refuse stale binaries.

`python3 tests/controlplane/sourcehash.py components|oracles|helm|olm-validate|version` prints one value.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOMOD = HERE / "gomod"
ORACLE = HERE.parent / "oracle"
TOOLS = HERE.parent / "tools"
BUILD_SCRIPT = HERE / "build.sh"


def kubernetes_version() -> str:
    """The pinned k8s.io/kubernetes release, read from the components' go.mod."""
    text = (GOMOD / "go.mod").read_text()
    match = re.search(r"^(?:require )?\s*k8s\.io/kubernetes (v\d+\.\d+\.\d+\S*)", text, re.MULTILINE)
    if match is None:
        raise SystemExit(f"{GOMOD / 'go.mod'}: no k8s.io/kubernetes requirement")
    return match.group(1)


def go_version() -> str:
    try:
        out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "no-go"
    return out.strip()


def _digest(files: list[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for path in sorted(files):
        h.update(str(path.relative_to(HERE.parent)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def components_hash(go: str) -> str:
    return _digest([GOMOD / "go.mod", GOMOD / "go.sum", BUILD_SCRIPT], go)


def oracles_hash(go: str) -> str:
    files = [ORACLE / "go.mod", ORACLE / "go.sum", BUILD_SCRIPT, *ORACLE.rglob("*.go")]
    return _digest(files, go)


def helm_hash(go: str) -> str:
    """helm is keyed by the tools module's requirements only (its version), not by our validator's source."""
    return _digest([TOOLS / "go.mod", TOOLS / "go.sum", BUILD_SCRIPT], go)


def olm_validate_hash(go: str) -> str:
    return _digest([TOOLS / "go.mod", TOOLS / "go.sum", BUILD_SCRIPT, *TOOLS.rglob("*.go")], go)


HASHES = {"components": components_hash, "oracles": oracles_hash, "helm": helm_hash, "olm-validate": olm_validate_hash}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in {"version", *HASHES}:
        print(f"usage: sourcehash.py {'|'.join([*HASHES, 'version'])}", file=sys.stderr)
        return 2
    print(kubernetes_version() if argv[1] == "version" else HASHES[argv[1]](go_version()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
