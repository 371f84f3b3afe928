"""Keep N processes busy on the CPU for a bounded time, to show that tests pass on a loaded machine.

    python3 scripts/cpu_hog.py --procs 2 --seconds 900 &
    python3 -m pytest tests/e2e/test_webhook_faults_e2e.py

Each worker spins in pure Python (no I/O, no memory growth) and exits at its deadline; so does the parent, which
also stops its workers on SIGINT/SIGTERM or if it is killed (the workers watch their parent's pid).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time


def _spin(deadline: float, parent: int) -> None:
    checks = 0
    while time.monotonic() < deadline:
        for _ in range(200_000):
            checks += 1
        if os.getppid() != parent:  # the parent died without stopping us: stop too
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=2, help="busy processes (default 2)")
    parser.add_argument("--seconds", type=float, default=600.0, help="how long they spin (default 600, max 7200)")
    args = parser.parse_args(argv)
    if not 1 <= args.procs <= 256 or not 0 < args.seconds <= 7200:
        parser.error(f"--procs must be 1..256 and --seconds 0..7200 (got {args.procs}, {args.seconds})")
    deadline = time.monotonic() + args.seconds
    workers = [
        multiprocessing.Process(target=_spin, args=(deadline, os.getpid()), daemon=True) for _ in range(args.procs)
    ]
    for worker in workers:
        worker.start()

    def stop(signum: int, _frame: object) -> None:
        for worker in workers:
            worker.terminate()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"cpu_hog: {args.procs} busy processes for {args.seconds:.0f}s (pid {os.getpid()})", flush=True)
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()) + 5.0)
        if worker.is_alive():
            worker.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
