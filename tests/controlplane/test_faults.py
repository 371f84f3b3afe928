"""faults.stop_process returns only once every thread of the process is stopped (SIGSTOP is asynchronous: threads
running on another core keep running until the one that takes the signal stops them), and continue_process only
once none is."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.controlplane import faults

# Eight threads that never block: at any moment most are running or runnable, as a busy API server's are.
BUSY = """
import threading
def spin():
    while True:
        pass
for _ in range(8):
    threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
"""


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        yield proc
    finally:
        proc.kill()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("attempt", range(20))
def test_stopped_means_every_thread_stopped(busy: subprocess.Popen[bytes], attempt: int) -> None:
    faults.stop_process(busy)
    states = faults.thread_states(busy.pid)
    assert len(states) == 9 and set(states) == {"T"}, states
    faults.continue_process(busy)
    assert "T" not in faults.thread_states(busy.pid)
