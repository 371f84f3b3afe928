"""The Go CEL oracle for the differential tests of this folder: `$GPUDRA_K8S_CEL` (a built k8s-cel binary) when
set, else the shared `k8s_cel_oracle` fixture (tests/controlplane/fixtures.py), which fails when it is not built."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Oracle = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@pytest.fixture
def oracle(request: pytest.FixtureRequest) -> Oracle:
    provided: Any = os.environ.get("GPUDRA_K8S_CEL") or None
    if provided is None:
        provided = request.getfixturevalue("k8s_cel_oracle")
    if callable(provided) and not isinstance(provided, (str, os.PathLike)):
        return provided  # type: ignore[no-any-return]
    binary = Path(provided)

    def run(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = subprocess.run([str(binary)], input=json.dumps(cases), capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        results: list[dict[str, Any]] = json.loads(out.stdout)
        return results

    return run
