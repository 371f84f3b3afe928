"""A test double of the pynvml functions, and the table of catalog-built snapshot files (shared by the tests).

No NVIDIA GPU is available where these tests run, so the live capture path (`dra.inventory.nvml.capture`) is
exercised against `FakeNvml`: an object with the same function names, signatures, constants and error classes
as pynvml, answering from a recorded snapshot. The real pynvml module supplies the error classes and ctypes
structures, so error handling and the ctypes placement call run as they would against the driver.
Run `python tests/dra/inventory/nvml_double.py` to rewrite the catalog-built snapshot files.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

SNAPSHOTS = Path(__file__).parent / "snapshots"

# file name -> (catalog model, node name, GPU count, static MIG layouts {gpu: [(profile, start)]})
CATALOG_SNAPSHOTS: dict[str, tuple[str, str, int, dict[int, list[tuple[str, int]]]]] = {
    "hgx-h100-8.json": ("H100-SXM5-80GB", "hgx-h100-0", 8, {}),
    "dgx-a100-8-mig.json": (
        "A100-SXM4-80GB",
        "dgx-a100-0",
        8,
        {
            0: [("3g.40gb", 0), ("3g.40gb", 4)],
            1: [("1g.10gb", i) for i in range(7)],
            2: [("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)],
        },
    ),
    "h100-nvl-4.json": ("H100-NVL-94GB", "nvl-0", 4, {}),
    "dgx1-v100-8.json": ("V100-SXM2-32GB", "dgx1-0", 8, {}),
    "l40s-4.json": ("L40S", "l40s-0", 4, {}),
}


def build_catalog_snapshot(name: str) -> dict[str, Any]:
    from dra.gpus import get, synthetic_node
    from dra.inventory import snapshot_from_node

    model, node, count, layouts = CATALOG_SNAPSHOTS[name]
    return snapshot_from_node(synthetic_node(get(model), node, count, mig_layouts=layouts))


def _err(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


class FakeNvml:
    """The pynvml functions gpudra's capture calls, answering from a snapshot; every call is logged in `calls`."""

    NVMLError = pynvml.NVMLError
    c_nvmlGpuInstancePlacement_t = pynvml.c_nvmlGpuInstancePlacement_t
    NVML_GPU_INSTANCE_PROFILE_COUNT = pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT
    NVML_NVLINK_MAX_LINKS = pynvml.NVML_NVLINK_MAX_LINKS
    NVML_P2P_CAPS_INDEX_NVLINK = pynvml.NVML_P2P_CAPS_INDEX_NVLINK
    NVML_P2P_CAPS_INDEX_READ = pynvml.NVML_P2P_CAPS_INDEX_READ  # the tuple quirk, kept
    NVML_DEVICE_MIG_ENABLE = pynvml.NVML_DEVICE_MIG_ENABLE

    def __init__(self, snapshot: dict[str, Any], *, init_error: int | None = None, old_driver: bool = False) -> None:
        self.snap = snapshot
        self.init_error = init_error
        self.old_driver = old_driver  # no nvmlDeviceGetGpuInstanceProfileInfoV: only the v1 struct, without names
        self.calls: list[str] = []
        self.initialised = False

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml"):
            object.__getattribute__(self, "calls").append(name)
            if name not in ("nvmlInit", "nvmlShutdown") and not object.__getattribute__(self, "initialised"):
                raise AssertionError(f"{name} called before nvmlInit")
        return object.__getattribute__(self, name)

    # -- lifecycle / system ---------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise _err(self.init_error)
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.snap["driverVersion"])

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        if self.snap["cudaDriverVersion"] is None:
            raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(self.snap["cudaDriverVersion"])

    def nvmlSystemGetNVMLVersion(self) -> str:
        return str(self.snap.get("nvmlVersion") or "")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.snap["gpus"])

    # -- devices: a handle is ("gpu", i) or ("mig", i, k) ---------------------------------------------
    def nvmlDeviceGetHandleByIndex(self, i: int) -> tuple[Any, ...]:
        if not 0 <= i < len(self.snap["gpus"]):
            raise _err(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return ("gpu", i)

    def _gpu(self, h: tuple[Any, ...]) -> dict[str, Any]:
        assert h[0] == "gpu", f"GPU handle expected, got {h}"
        return dict(self.snap["gpus"][h[1]])

    def _field(self, h: tuple[Any, ...], key: str) -> Any:
        value = self._gpu(h)[key]
        if value is None:
            raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetName(self, h: tuple[Any, ...]) -> str:
        if h[0] == "mig":
            return str(self.snap["gpus"][h[1]]["migInstances"][h[2]]["name"])
        return str(self._gpu(h)["name"])

    def nvmlDeviceGetUUID(self, h: tuple[Any, ...]) -> str:
        if h[0] == "mig":
            return str(self.snap["gpus"][h[1]]["migInstances"][h[2]]["uuid"])
        return str(self._gpu(h)["uuid"])

    def nvmlDeviceGetMinorNumber(self, h: tuple[Any, ...]) -> int:
        return int(self._field(h, "minor"))

    def nvmlDeviceGetBrand(self, h: tuple[Any, ...]) -> int:
        return int(self._field(h, "brand"))

    def nvmlDeviceGetArchitecture(self, h: tuple[Any, ...]) -> int:
        return int(self._field(h, "architecture"))

    def nvmlDeviceGetCudaComputeCapability(self, h: tuple[Any, ...]) -> tuple[int, int]:
        major, minor = self._field(h, "cudaComputeCapability")
        return int(major), int(minor)

    def nvmlDeviceGetMemoryInfo(self, h: tuple[Any, ...]) -> SimpleNamespace:
        if h[0] == "mig":
            total = self.snap["gpus"][h[1]]["migInstances"][h[2]]["memoryTotal"]
        else:
            total = self._gpu(h)["memoryTotal"]
        return SimpleNamespace(total=total, free=total, used=0)

    def nvmlDeviceGetPciInfo(self, h: tuple[Any, ...]) -> SimpleNamespace:
        return SimpleNamespace(busId=self._gpu(h)["pciBusId"].encode())

    def nvmlDeviceGetNumaNodeId(self, h: tuple[Any, ...]) -> int:
        return int(self._field(h, "numaNode"))

    def nvmlDeviceGetMigMode(self, h: tuple[Any, ...]) -> list[int]:
        mode = self._field(h, "migMode")
        return [mode["current"], mode["pending"]]

    # -- MIG ------------------------------------------------------------------------------------------
    def _profile(self, h: tuple[Any, ...], *, index: int | None = None, pid: int | None = None) -> dict[str, Any]:
        for p in self._gpu(h)["migProfiles"]:
            if (index is not None and p["profileIndex"] == index) or (pid is not None and p["id"] == pid):
                return dict(p)
        raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetGpuInstanceProfileInfo(self, h: tuple[Any, ...], index: int, version: int = 2) -> Any:
        if version == 2 and self.old_driver:
            raise _err(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        p = self._profile(h, index=index)
        if version == 1:
            info1 = pynvml.c_nvmlGpuInstanceProfileInfo_t()
            for key in ("id", "sliceCount", "instanceCount", "multiprocessorCount", "copyEngineCount"):
                setattr(info1, key, p[key])
            for key in ("decoderCount", "encoderCount", "jpegCount", "ofaCount", "memorySizeMB"):
                setattr(info1, key, p[key])
            return info1
        info = pynvml.c_nvmlGpuInstanceProfileInfo_v2_t()
        for key in ("id", "sliceCount", "instanceCount", "multiprocessorCount", "copyEngineCount", "decoderCount"):
            setattr(info, key, p[key])
        for key in ("encoderCount", "jpegCount", "ofaCount", "memorySizeMB"):
            setattr(info, key, p[key])
        info.name = p["name"].encode()
        return info

    def nvmlDeviceGetGpuInstancePossiblePlacements(
        self, h: tuple[Any, ...], profile_id: int, placements: Any, count_ref: Any
    ) -> int:
        p = self._profile(h, pid=profile_id)
        count = ctypes.cast(count_ref, ctypes.POINTER(ctypes.c_uint)).contents
        if placements is None:
            count.value = len(p["placements"])
            return 0
        if count.value < len(p["placements"]):
            raise _err(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
        for i, pl in enumerate(p["placements"]):
            placements[i].start = pl["start"]
            placements[i].size = pl["size"]
        count.value = len(p["placements"])
        return 0

    def nvmlDeviceGetMaxMigDeviceCount(self, h: tuple[Any, ...]) -> int:
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: tuple[Any, ...], k: int) -> tuple[Any, ...]:
        if k >= len(self._gpu(h)["migInstances"]):
            raise _err(pynvml.NVML_ERROR_NOT_FOUND)
        return ("mig", h[1], k)

    def nvmlDeviceGetGpuInstanceId(self, h: tuple[Any, ...]) -> int:
        return int(self.snap["gpus"][h[1]]["migInstances"][h[2]]["gpuInstanceId"])

    def nvmlDeviceGetComputeInstanceId(self, h: tuple[Any, ...]) -> int:
        return int(self.snap["gpus"][h[1]]["migInstances"][h[2]]["computeInstanceId"])

    def nvmlDeviceGetGpuInstanceById(self, h: tuple[Any, ...], gi_id: int) -> tuple[Any, ...]:
        for inst in self._gpu(h)["migInstances"]:
            if inst["gpuInstanceId"] == gi_id:
                return ("gi", h[1], gi_id)
        raise _err(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlGpuInstanceGetInfo(self, gi: tuple[Any, ...]) -> SimpleNamespace:
        for inst in self.snap["gpus"][gi[1]]["migInstances"]:
            if inst["gpuInstanceId"] == gi[2]:
                if inst["placement"] is None:
                    raise _err(pynvml.NVML_ERROR_NO_PERMISSION)
                placement = SimpleNamespace(**inst["placement"])
                return SimpleNamespace(id=gi[2], profileId=inst["profileId"], placement=placement)
        raise _err(pynvml.NVML_ERROR_NOT_FOUND)

    # -- NVLink ---------------------------------------------------------------------------------------
    def _link(self, h: tuple[Any, ...], link: int) -> dict[str, Any]:
        for entry in self._gpu(h)["nvlinks"]:
            if entry["link"] == link:
                return dict(entry)
        raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED if link < 18 else pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetNvLinkState(self, h: tuple[Any, ...], link: int) -> int:
        return int(self._link(h, link)["state"])

    def nvmlDeviceGetNvLinkVersion(self, h: tuple[Any, ...], link: int) -> int:
        return int(self._link(h, link)["version"])

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: tuple[Any, ...], link: int) -> SimpleNamespace:
        return SimpleNamespace(busId=str(self._link(h, link)["remotePciBusId"]).encode())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: tuple[Any, ...], link: int) -> int:
        value = self._link(h, link)["remoteDeviceType"]
        if value is None:
            raise _err(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        return int(value)

    def nvmlDeviceGetP2PStatus(self, h1: tuple[Any, ...], h2: tuple[Any, ...], index: Any) -> int:
        if not isinstance(index, int):
            raise TypeError(f"p2p index must be an int (got {index!r}; pynvml's _READ constant is a tuple)")
        if index != pynvml.NVML_P2P_CAPS_INDEX_NVLINK:
            raise AssertionError(f"only the NVLink P2P index is expected, got {index}")
        value = self.snap["p2pNvlink"].get(f"{h1[1]}-{h2[1]}")
        if value is None:
            raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(value)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    for file_name in CATALOG_SNAPSHOTS:
        text = json.dumps(build_catalog_snapshot(file_name), indent=2, sort_keys=True) + "\n"
        (SNAPSHOTS / file_name).write_text(text)
        print("wrote", SNAPSHOTS / file_name)
