"""benchmarks/tenant_attacks.py refuses ordinary-load sizes it cannot run, before any control plane starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tenant_attacks.py"


@pytest.mark.parametrize(
    ("argv", "named"), [(["--pods", "0"], "--pods 0"), (["--rate", "0"], "--rate 0"), (["--rate", "-2"], "--rate -2")]
)
def test_an_ordinary_load_that_cannot_run_is_refused_by_name(argv: list[str], named: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert done.stdout == ""
