"""Capture this machine's GPUs read-only into a gpudra inventory snapshot, and check the slices built from it.

Usage (from a checkout, on a machine with an NVIDIA driver):
    python scripts/capture_inventory.py OUT.json [--node NAME]
Only NVML queries are made (no setting, MIG mode or partition is changed). The script captures twice and
fails if anything changed between the two reads (MIG mode and instances included), then prints a summary and
the ResourceSlices each mode would publish, with their limit check. Exit 3 when there is no GPU or driver.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dra.gpus import node_resource_slices, slice_limit_errors  # noqa: E402
from dra.inventory import NvmlUnavailable, capture, default_node_name, node_from_snapshot, save_snapshot  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--node", default="")
    args = parser.parse_args()
    node_name = args.node or default_node_name()
    try:
        first = capture(node_name=node_name)
        second = capture(node_name=node_name)
    except NvmlUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    if first != second:
        print("error: two consecutive reads differ; not writing a snapshot", file=sys.stderr)
        return 1
    save_snapshot(first, args.out)
    node = node_from_snapshot(first)
    print(f"wrote {args.out}: node {node.node_name}, driver {node.driver_version}, CUDA {node.cuda_driver_version}")
    for gpu in node.gpus:
        mig = "MIG on" if gpu.mig_enabled else ("MIG off" if gpu.mig_capable else "no MIG")
        profiles = len(gpu.mig.profiles) if gpu.mig else 0
        print(
            f"  gpu-{gpu.minor}: {gpu.product_name}, {gpu.memory_bytes // 2**20} MiB, {gpu.architecture} "
            f"{gpu.compute_capability}, {gpu.pci_bus_id} root={gpu.pcie_root} numa={gpu.numa_node}, {mig}, "
            f"{profiles} GI profiles, {len(gpu.mig_instances)} instances"
        )
    print(f"  NVLink groups: {node.topology.groups()} (NVSwitch: {node.topology.nvswitch})")
    status = 0
    for mode in ("none", "static", "dynamic"):
        for version in ("1.34", "1.35"):
            slices = node_resource_slices(node, mig_mode=mode, k8s_version=version)
            errors = slice_limit_errors(slices, version)
            count = sum(len(s["spec"].get("devices", [])) for s in slices)
            print(
                f"  {mode:8s} k8s {version}: {len(slices)} slice(s), {count} devices, limit errors: {errors or 'none'}"
            )
            status = status or (1 if errors else 0)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
