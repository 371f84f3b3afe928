"""Faults injected into a running `ControlPlane`: stop (SIGSTOP) and resume a component, kill it, restart it.

For tests that break their own control plane (tests/e2e/test_webhook_faults_e2e.py): never use these on the session
`control_plane` fixture, which other tests share. A restarted component keeps its flags, ports and data directory
(etcd's data survives a restart, as on a real node), so clients reconnect to the same address.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.controlplane.cluster import ControlPlane, ControlPlaneError, _http_ok

__all__ = [
    "continue_process",
    "etcd_url",
    "kill",
    "pause",
    "restart",
    "resume",
    "stop_process",
    "stopped",
    "thread_states",
    "wait_healthy",
]


def _process(cp: ControlPlane, name: str) -> int:
    component = cp.components[name]
    if component.process is None or component.process.poll() is not None:
        raise ControlPlaneError(f"{name} is not running\n{cp.logs()}")
    return component.process.pid


def thread_states(pid: int) -> list[str]:
    """The scheduler state letter of each thread of `pid` (/proc/<pid>/task/<tid>/stat's third field: R, S, D, T...);
    threads that exit while being read are left out."""
    states = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        states.append(text[text.rindex(")") + 2])  # the command name, in parentheses, may hold spaces
    return states


def _wait_threads(proc: subprocess.Popen[bytes], stopped: bool, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = thread_states(proc.pid)
        if stopped and "T" in states and all(state in "TZX" for state in states):  # Z, X: a thread exiting
            return
        if not stopped and "T" not in states:
            return
        if time.monotonic() > deadline or proc.poll() is not None:
            want = "stopped" if stopped else "running again"
            raise ControlPlaneError(f"pid {proc.pid} not {want} {timeout:.0f}s after the signal: {sorted(states)}")
        time.sleep(0.01)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGSTOP `proc` and wait until every thread of it is stopped.

    A stop is not done when kill() returns: one thread must first be scheduled to take the signal and stop the
    others, and meanwhile those still running keep serving (on a loaded machine, tens of milliseconds: enough for
    an API server to answer a whole review's calls)."""
    proc.send_signal(signal.SIGSTOP)
    _wait_threads(proc, stopped=True, timeout=timeout)


def continue_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGCONT `proc` and wait until none of its threads is stopped."""
    proc.send_signal(signal.SIGCONT)
    _wait_threads(proc, stopped=False, timeout=timeout)


def pause(cp: ControlPlane, name: str) -> None:
    """SIGSTOP `name`, returning once all its threads are stopped: its sockets stay open and accept connections
    (the kernel's backlog), nothing answers."""
    _process(cp, name)
    proc = cp.components[name].process
    assert proc is not None
    stop_process(proc)


def stopped(cp: ControlPlane, name: str) -> bool:
    """Whether every thread of `name` is stopped now."""
    states = thread_states(_process(cp, name))
    return "T" in states and all(state in "TZX" for state in states)


def resume(cp: ControlPlane, name: str) -> None:
    """SIGCONT `name` after `pause`, returning once none of its threads is stopped."""
    proc = cp.components[name].process
    if proc is not None and proc.poll() is None:
        continue_process(proc)


def kill(cp: ControlPlane, name: str) -> None:
    """SIGKILL `name` and reap it (no graceful shutdown: a crash)."""
    proc = cp.components[name].process
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGCONT)  # a stopped process dies on SIGKILL too; this keeps wait() prompt
    proc.kill()
    proc.wait(10)


def etcd_url(cp: ControlPlane) -> str:
    """etcd's client URL, as the API server reaches it."""
    for arg in cp.components["etcd"].args:
        if arg.startswith("--listen-client-urls="):
            return arg.split("=", 1)[1]
    raise ControlPlaneError("etcd has no --listen-client-urls")


def wait_healthy(cp: ControlPlane, name: str, timeout: float = 60.0) -> float:
    """Polls `name`'s health endpoint until it answers 200; returns the seconds it took."""
    checks = {
        "etcd": lambda: _http_ok(f"{etcd_url(cp)}/health"),
        "kube-apiserver": lambda: _http_ok(cp.server + "/readyz", context=cp.ssl_context()),
    }
    if name not in checks:
        raise ValueError(f"no health check for {name} (known: {', '.join(checks)})")
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if not cp.components[name].alive():
            raise ControlPlaneError(f"{name} exited while restarting\n{cp.logs()}")
        if checks[name]():
            return time.monotonic() - started
        time.sleep(0.2)
    raise ControlPlaneError(f"{name} not healthy {timeout:.0f}s after restart\n{cp.logs()}")


def restart(cp: ControlPlane, name: str, *, extra_args: list[str] | None = None, hard: bool = True) -> float:
    """Kill (`hard`) or stop `name`, start it again with the same flags plus `extra_args` (kept for later
    restarts), and wait until it is healthy; returns the seconds from start to healthy."""
    component = cp.components[name]
    if hard:
        kill(cp, name)
    else:
        component.stop()
    if extra_args:
        component.args = [*component.args, *extra_args]
    component.start()
    return wait_healthy(cp, name)
