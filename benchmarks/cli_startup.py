"""CPU time of short `gpudra` calls against a bare `python -c pass`, measured in the same run (issue 27: <= 8x for
commands that do not need the heavy parts).

Each command runs `--runs` times in a child process; CPU is the children's user + system time
(`getrusage(RUSAGE_CHILDREN)`), which a loaded machine does not inflate the way wall time is. The modules are
byte-compiled first (`compileall`), as an install from a wheel leaves them; `--no-compile` measures as found.
Prints one JSON object: seconds per call and the ratio to `python -c pass` per command, with gpudra's user cache
(parse trees, policy files and claim verdicts seen before: `dra.user_cache`) warm, as every call after the first
finds it, and `without_user_cache` with it turned off (GPUDRA_NO_PARSER_CACHE=1), as the first call after an
install or upgrade runs.

    python benchmarks/cli_startup.py [--runs 10] [--smoke]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POD = ROOT / "examples" / "pod-legacy-vram.yaml"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "gpudra --help": ["-m", "gpudra", "--help"],
    "gpudra cel eval 1": ["-m", "gpudra", "cel", "eval", "1"],
    "gpudra translate (one pod)": ["-m", "gpudra", "translate", str(POD)],
    "gpudra policy lint policies": ["-m", "gpudra", "policy", "lint", str(ROOT / "policies")],
}
UNCACHED = ("gpudra cel eval 1", "gpudra translate (one pod)")
PACKAGES = (
    "gpudra",
    "dra",
    "workloads",
    "policyengine",
    "kubeapi",
    "recommender",
    "webhook",
    "manifest_translation",
    "simulator",
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_per_call(args: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    before = _children_cpu()
    for _ in range(runs):
        done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, check=False, env=env)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr.decode()[-1000:]}")
    return (_children_cpu() - before) / runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="two runs each, to check the benchmark itself works")
    args = parser.parse_args(argv)
    runs = 2 if args.smoke else args.runs
    if not args.no_compile:
        for package in PACKAGES:
            compileall.compile_dir(ROOT / package, quiet=1)
    for cmd in COMMANDS.values():  # warm the page cache and gpudra's parser-table cache
        subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, check=False)
    seconds = {name: cpu_per_call(cmd, runs) for name, cmd in COMMANDS.items()}
    bare = seconds["python -c pass"] or 1e-9
    uncached_env = {**os.environ, "GPUDRA_NO_PARSER_CACHE": "1"}
    uncached = {name: cpu_per_call(COMMANDS[name], runs, uncached_env) for name in UNCACHED}
    out = {
        "runs": runs,
        "byte_compiled": not args.no_compile,
        "cpu_seconds": {k: round(v, 4) for k, v in seconds.items()},
        "ratio_to_python": {k: round(v / bare, 2) for k, v in seconds.items() if k != "python -c pass"},
        "without_user_cache": {
            "cpu_seconds": {k: round(v, 4) for k, v in uncached.items()},
            "ratio_to_python": {k: round(v / bare, 2) for k, v in uncached.items()},
        },
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
