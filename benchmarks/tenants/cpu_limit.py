"""A CPU limit for the attack process, as a tenant pod's `resources.limits.cpu` gives it: a CFS quota in a cgroup of
its own (cgroup v2's `cpu.max`, or v1's `cpu.cfs_quota_us`), made for the attack and removed after it.

On a cluster the attacker is a pod on some node, held to its CPU limit; here it shares this machine's cores with the
API server, etcd and the webhook, and a closed-loop flood takes whatever CPU it is given. Needs root and a mounted
cpu controller; `CpuLimitUnavailable` says what is missing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CpuLimitUnavailable", "cpu_limited"]

_PERIOD_US = 100_000


class CpuLimitUnavailable(RuntimeError):
    pass


def _controller() -> tuple[Path, str]:
    """Where to make the cgroup, and its kind ("v2" or "v1")."""
    unified = Path("/sys/fs/cgroup")
    if "cpu" in _read(unified / "cgroup.controllers").split():
        return unified, "v2"
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        return v1, "v1"
    raise CpuLimitUnavailable("no cpu cgroup controller here (neither cgroup v2's cpu nor v1's cpu.cfs_quota_us)")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@contextlib.contextmanager
def cpu_limited(cpus: float, name: str) -> Iterator[Path]:
    """A cgroup that holds its processes to `cpus` cores; yields its `cgroup.procs` (write a pid there to put that
    process in it). The cgroup is removed on exit, once its processes have ended."""
    if not 0 < cpus <= (os.cpu_count() or 1):
        raise CpuLimitUnavailable(f"--attacker-cpus {cpus:g}: must be above 0 and at most this machine's cores")
    root, kind = _controller()
    group = root / f"{name}-{os.getpid()}"
    quota = max(1000, round(cpus * _PERIOD_US))
    try:
        group.mkdir()
        if kind == "v2":
            (group / "cpu.max").write_text(f"{quota} {_PERIOD_US}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
    except OSError as exc:
        with contextlib.suppress(OSError):
            group.rmdir()
        raise CpuLimitUnavailable(f"cannot make the cgroup {group} ({exc}): run as root") from exc
    try:
        yield group / "cgroup.procs"
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()
