"""CPU time of short `gpudra` calls against a bare `python -c pass`, measured in the same run (issue 27, issue 41:
<= 8x for commands that do not need the heavy parts, as installed).

Each command runs `--runs` times in a child process, the commands alternating round by round; a run's CPU is that
child's user + system time (`os.wait4`), which a loaded machine inflates far less than wall time. Each command
reports the min and the median of its runs, and the ratio of each to the bare interpreter's min and median.

What runs: by default `python -m gpudra` from this checkout, its modules byte-compiled first (`compileall`) as a wheel
install leaves them (`--no-compile`: as found). With `--gpudra PATH` an installed console script runs as a user runs
it (from a scratch directory), and the bare baseline is the interpreter its `#!` line names, so both pay the same
`site` (an editable install's finder, other `.pth` files).

Two states of gpudra's user cache (parse trees, policy files, claim verdicts and catalog checks seen before:
`dra.user_cache`), each in a private cache directory of the benchmark's own:
- `warm`: filled by one call first, as every call after the first finds it;
- `first_call`: empty at every run, as the first call after an install or an upgrade finds it; with
  `--drop-bytecode` the packages' `__pycache__` is removed before each of these runs too (an editable install's first
  call, which compiles what it imports; a regular install is compiled by pip).
The calls run without PYTHONDONTWRITEBYTECODE, as a user's shell runs them: where it is set, an editable install never
keeps its `.pyc` and compiles every module it imports at every call.

    python benchmarks/cli_startup.py [--runs 10] [--gpudra PATH] [--drop-bytecode] [--smoke]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POD = ROOT / "examples" / "pod-legacy-vram.yaml"
BARE = "python -c pass"
ARGUMENTS: dict[str, list[str]] = {
    "gpudra --help": ["--help"],
    "gpudra cel eval 1": ["cel", "eval", "1"],
    "gpudra translate (one pod)": ["translate", str(POD)],
    "gpudra policy lint policies": ["policy", "lint", str(ROOT / "policies")],
}
FIRST_CALL = ("gpudra cel eval 1", "gpudra translate (one pod)")
PACKAGES = (
    "gpudra",
    "dra",
    "pki",
    "workloads",
    "policyengine",
    "kubeapi",
    "recommender",
    "webhook",
    "housekeeping",
    "manifest_translation",
    "simulator",
)


def interpreter_of(script: Path) -> str:
    """The interpreter a console script's `#!` line names."""
    first = script.read_bytes().split(b"\n", 1)[0].decode()
    if not first.startswith("#!"):
        raise SystemExit(f"{script}: no #! line")
    return first[2:].strip().split()[0]


def packages_root(python: str) -> Path:
    """Where `python` imports gpudra's packages from (site-packages, or the checkout for an editable install)."""
    code = "import gpudra, os; print(os.path.dirname(os.path.dirname(os.path.abspath(gpudra.__file__))))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return Path(done.stdout.strip())


def drop_bytecode(root: Path) -> None:
    for package in PACKAGES:
        for cache in (root / package).rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)


def cpu_of(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """One run's CPU seconds (the child's user + system time)."""
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}: {stderr.decode()[-1000:]}")
    return usage.ru_utime + usage.ru_stime


def measure(
    commands: dict[str, list[str]], runs: int, cwd: Path, env_for: Callable[[], dict[str, str]],
    before_each: Callable[[], None] = lambda: None,
) -> dict[str, list[float]]:  # fmt: skip
    """`runs` rounds; each round runs every command once, in order (a noisy spell spreads over all of them)."""
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            before_each()
            seconds[name].append(cpu_of(argv, cwd, env_for()))
    return seconds


def summary(seconds: dict[str, list[float]], bare: list[float]) -> dict[str, dict[str, float]]:
    low, mid = min(bare), statistics.median(bare)
    out = {}
    for name, values in seconds.items():
        out[name] = {
            "min_s": round(min(values), 4),
            "median_s": round(statistics.median(values), 4),
            "ratio_min": round(min(values) / low, 2),
            "ratio_median": round(statistics.median(values) / mid, 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--gpudra", type=Path, help="an installed `gpudra` console script to measure")
    parser.add_argument("--no-compile", action="store_true", help="without --gpudra: do not byte-compile first")
    parser.add_argument("--drop-bytecode", action="store_true", help="first_call runs without the packages' .pyc")
    parser.add_argument("--smoke", action="store_true", help="two runs each, to check the benchmark itself works")
    args = parser.parse_args(argv)
    runs = 2 if args.smoke else args.runs
    work = Path(tempfile.mkdtemp(prefix="gpudra-startup-"))
    try:
        if args.gpudra is not None:
            script = args.gpudra.resolve()
            python, prefix, cwd = interpreter_of(script), [str(script)], work
        else:
            python, prefix, cwd = sys.executable, [sys.executable, "-m", "gpudra"], ROOT
            if not args.no_compile:
                for package in PACKAGES:
                    compileall.compile_dir(ROOT / package, quiet=1)
        commands = {BARE: [python, "-c", "pass"]} | {name: prefix + rest for name, rest in ARGUMENTS.items()}
        warm_cache = work / "warm"
        warm_env = {**os.environ, "XDG_CACHE_HOME": str(warm_cache)}
        warm_env.pop("GPUDRA_NO_PARSER_CACHE", None)
        # as a user's shell has it: imports write their .pyc (an editable install's first call leaves them for the
        # next); with PYTHONDONTWRITEBYTECODE set, an editable install compiles every module at every call
        bytecode_env = warm_env.pop("PYTHONDONTWRITEBYTECODE", None)
        for cmd in commands.values():  # the page cache, and the user cache of the `warm` runs
            subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=warm_env)
        warm = measure(commands, runs, cwd, lambda: warm_env)

        fresh = iter(range(1 << 30))

        def empty_cache_env() -> dict[str, str]:
            return {**warm_env, "XDG_CACHE_HOME": str(work / f"empty-{next(fresh)}")}

        root = packages_root(python) if args.drop_bytecode else None
        first = measure(
            {BARE: commands[BARE]} | {name: commands[name] for name in FIRST_CALL},
            runs,
            cwd,
            empty_cache_env,
            before_each=(lambda: drop_bytecode(root)) if root is not None else (lambda: None),
        )
        bare_first = first.pop(BARE)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "runs": runs,
        "gpudra": str(args.gpudra) if args.gpudra is not None else f"{sys.executable} -m gpudra",
        "python": python,
        "byte_compiled": args.gpudra is not None or not args.no_compile,
        "PYTHONDONTWRITEBYTECODE_unset": bytecode_env is not None,
        "bare_python_s": {"min": round(min(warm[BARE]), 4), "median": round(statistics.median(warm[BARE]), 4)},
        "warm": summary({k: v for k, v in warm.items() if k != BARE}, warm[BARE]),
        "first_call": {"drop_bytecode": args.drop_bytecode, **summary(first, bare_first)},
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
