"""The attack process's CPU limit (benchmarks/tenants/cpu_limit.py): a cgroup with the quota asked for, the process in
it, and nothing left behind. Skipped where this machine has no cpu cgroup controller we may write to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.tenants.cpu_limit import CpuLimitUnavailable, cpu_limited


def _quota(group: Path) -> list[str]:
    """(quota, period) in microseconds, from cgroup v2's cpu.max or v1's two files."""
    if (group / "cpu.max").exists():
        return (group / "cpu.max").read_text().split()
    return [(group / f"cpu.cfs_{name}_us").read_text().strip() for name in ("quota", "period")]


def test_a_process_put_in_the_limit_runs_under_its_quota_and_the_cgroup_goes_after() -> None:
    try:
        limit = cpu_limited(0.5, "gpudra-test")
        procs = limit.__enter__()
    except CpuLimitUnavailable as exc:
        pytest.skip(str(exc))
    group = procs.parent
    try:
        assert _quota(group) == ["50000", "100000"]
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE)
        try:
            procs.write_text(str(child.pid))
            assert str(child.pid) in procs.read_text().split()
            assert group.name in Path(f"/proc/{child.pid}/cgroup").read_text()
        finally:
            child.communicate(b"\n", timeout=60)
    finally:
        limit.__exit__(None, None, None)
    assert not group.exists()


@pytest.mark.parametrize("cpus", [0, -1, 10_000])
def test_a_limit_outside_the_machine_is_refused(cpus: float) -> None:
    with pytest.raises(CpuLimitUnavailable, match="must be above 0"):
        with cpu_limited(cpus, "gpudra-test"):
            pass
