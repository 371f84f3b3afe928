"""The simulator's CPU time per strategy against an older checkout, measured in the same run (issue 24's bound).

Runs `benchmarks/simulate.py` of this checkout and of BASELINE_DIR (a `git worktree` of the commit to compare with)
one strategy at a time, alternating, on the full openb trace at the given scales, and prints one JSON object with
each side's CPU seconds and the ratio this/baseline per (strategy, scale). Issue 24 asks for <= 1.5 against the
simulator before kube-scheduler's model (`git worktree add /tmp/base a8069ac^`; that commit's CEL parser needs
cel-python: `pip install --target /tmp/celpy cel-python` and `--baseline-pythonpath /tmp/celpy`).

    python benchmarks/simulate_vs_baseline.py BASELINE_DIR [TRACE_DIR] [--strategies a,b] [--scales 1,2,4,8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
DEFAULT_DIR = str(HERE.parent / "shared" / "traces" / "alibaba-gpu-v2023")


def _cpu_seconds(tree: Path, trace_dir: str, strategy: str, scales: str, pythonpath: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(tree / "benchmarks" / "simulate.py"), trace_dir, "--strategies", strategy]
    done = subprocess.run([*cmd, "--scales", scales], cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: benchmarks/simulate.py failed:\n{done.stderr[-2000:]}")
    rows = json.loads(done.stdout)["strategies"][strategy]
    return {k: v["cpu_s"] for k, v in rows.items() if isinstance(v, dict)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline_dir")
    parser.add_argument("trace_dir", nargs="?", default=DEFAULT_DIR)
    parser.add_argument("--strategies", default="device-plugin,dra-whole,gpudra")
    parser.add_argument("--scales", default="1,2,4,8")
    parser.add_argument("--baseline-pythonpath", default=None)
    args = parser.parse_args(argv)
    base = Path(args.baseline_dir).resolve()
    if not (base / "benchmarks" / "simulate.py").is_file():
        raise SystemExit(f"{base}: no benchmarks/simulate.py (give a checkout of the commit to compare with)")
    if not Path(args.trace_dir).is_dir():
        raise SystemExit(
            f"{args.trace_dir}: no trace directory (openb_node_list_all_node.csv, openb_pod_list_default.csv)"
        )
    out: dict[str, Any] = {}
    for strategy in args.strategies.split(","):
        before = _cpu_seconds(base, args.trace_dir, strategy, args.scales, args.baseline_pythonpath)
        after = _cpu_seconds(HERE, args.trace_dir, strategy, args.scales, None)
        out[strategy] = {
            scale: {
                "baseline_cpu_s": before[scale],
                "cpu_s": after[scale],
                "ratio": round(after[scale] / before[scale], 3),
            }
            for scale in after
            if scale in before
        }
        print(json.dumps({strategy: out[strategy]}), file=sys.stderr, flush=True)
    worst = max(row["ratio"] for rows in out.values() for row in rows.values())
    print(
        json.dumps(
            {"baseline": str(base), "strategies": out, "worst_ratio": worst, "within_1_5x": worst <= 1.5}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
