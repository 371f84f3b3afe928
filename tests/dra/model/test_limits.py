"""dra.model.LIMITS is the API server's table: each value equals the constant of the same name in k8s.io/api
resource/v1/types.go at the version tests/controlplane/gomod pins (read from the Go module cache when it is there)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dra.model import LIMITS

GOMOD = Path(__file__).parents[2] / "controlplane" / "gomod" / "go.mod"
# Named in pkg/apis/resource/validation/validation.go, or through another package, not as a types.go constant.
NOT_IN_TYPES_GO = {"CapacityRequestPolicyDiscreteMaxOptions", "PoolNameMaxLength"}
_CONST = re.compile(r"^\s*(?:const\s+)?([A-Z]\w*)(?:\s+int)?\s*=\s*([^/\n]+?)\s*(?://.*)?$", re.MULTILINE)


def _types_go() -> Path:
    version = re.search(r"^\s*k8s\.io/api (v\S+)", GOMOD.read_text(), re.MULTILINE)
    go = shutil.which("go")
    if version is None or go is None:
        pytest.skip("no Go toolchain or no pinned k8s.io/api")
    cache = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    path = Path(cache) / f"k8s.io/api@{version.group(1)}" / "resource" / "v1" / "types.go"
    if not path.is_file():
        pytest.skip(f"{path} is not in the module cache (tests/controlplane/build.sh fetches it)")
    return path


def _constants(source: str) -> dict[str, int]:
    """The integer constants of a Go file: literals, products, and names defined anywhere in the same file."""
    values: dict[str, int] = {}
    definitions = _CONST.findall(source)
    while True:
        known = len(values)
        for name, expression in definitions:
            factors = [f.strip() for f in expression.split("*")]
            if name not in values and all(f.isdigit() or f in values for f in factors):
                product = 1
                for f in factors:
                    product *= int(f) if f.isdigit() else values[f]
                values[name] = product
        if len(values) == known:
            return values


def test_every_limit_is_the_api_servers_constant() -> None:
    constants = _constants(_types_go().read_text())
    assert constants["ResourceSliceMaxDevices"] == 128  # the reader itself works
    assert {name: constants.get(name) for name in LIMITS if name not in NOT_IN_TYPES_GO} == {
        name: value for name, value in LIMITS.items() if name not in NOT_IN_TYPES_GO
    }


def test_the_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        LIMITS["ResourceSliceMaxDevices"] = 1  # type: ignore[index]
