"""The generated policies ConfigMap never drifts from policies/ (no kubectl needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_policies_configmap_is_in_sync_with_policies_dir() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "manifests" / "generate_policies_configmap.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
