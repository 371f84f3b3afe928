"""Runs the Go oracles (dra-allocate, k8s-cel) on JSON input; formats in tests/oracle/README.md."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.controlplane import binaries

TIMEOUT = 600.0


class OracleError(RuntimeError):
    """The oracle process failed (bad input it could not read at all, or a crash)."""


def _run(binary: Path, payload: Any) -> Any:
    proc = subprocess.run(
        [str(binary)], input=json.dumps(payload).encode(), capture_output=True, timeout=TIMEOUT, check=False
    )
    if proc.returncode != 0:
        raise OracleError(f"{binary.name} exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()}")
    return json.loads(proc.stdout)


def dra_allocate(payload: dict[str, Any]) -> dict[str, Any]:
    """One case `{deviceClasses, resourceSlices, allocatedClaims, claims, node, features}` -> one result,
    or `{"cases": [...]}` -> `{"results": [...]}`."""
    result: dict[str, Any] = _run(binaries.require("oracles")["dra-allocate"], payload)
    return result


def k8s_cel(cases: list[dict[str, Any]] | dict[str, Any]) -> list[dict[str, Any]]:
    """A list of cases (or `{"cases": [...], "repeat": N}`) -> one result per case."""
    result: list[dict[str, Any]] = _run(binaries.require("oracles")["k8s-cel"], cases)
    return result
