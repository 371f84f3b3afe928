"""The NVIDIA DCGM exporter's metric and label names, exactly as it exposes them.

Facts from github.com/NVIDIA/dcgm-exporter at d5e5f510a1b6b393f39a43293ccd9dc985defc79 (2026-05-12):

- `etc/default-counters.csv`: `DCGM_FI_DEV_FB_USED` / `DCGM_FI_DEV_FB_FREE` / `DCGM_FI_DEV_FB_RESERVED` are gauges
  "Framebuffer memory used / free / reserved (in MiB)"; `DCGM_FI_DEV_GPU_UTIL` is a gauge "GPU utilization (in %)";
  `DCGM_FI_PROF_GR_ENGINE_ACTIVE` a gauge "Ratio of time the graphics engine is active" (0..1).
- `internal/pkg/rendermetrics/render_metrics.go` (gpuMetricsFormat): every GPU series carries `gpu` (the index),
  `UUID`, `pci_bus_id`, `device` (nvidia0), `modelName` (the NVML product name, e.g. "NVIDIA H100 80GB HBM3"), on a
  MIG instance also `GPU_I_PROFILE` (e.g. "1g.10gb") and `GPU_I_ID`, and `hostname` unless --no-hostname (releases
  before 3.3 wrote `Hostname`; both are read).
- `internal/pkg/transformation/const.go`: with `--kubernetes` (`-k`, env DCGM_EXPORTER_KUBERNETES) the pod a device
  is assigned to (from the kubelet's pod-resources API) adds `pod`, `namespace`, `container`, and `pod_uid` with
  `--kubernetes-enable-pod-uid`; `--kubernetes-use-old-namespace` writes the legacy `pod_name`, `pod_namespace`,
  `container_name` instead (read as well). With `--kubernetes-enable-dra` DRA-allocated devices also get
  `dra_claim_name`, `dra_claim_namespace`, `dra_driver_name`, `dra_pool_name`, `dra_device_name`, `dra_mig_profile`,
  `dra_mig_device_uuid`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "FB_FREE",
    "FB_RESERVED",
    "FB_USED",
    "GPU_UTIL",
    "GR_ENGINE_ACTIVE",
    "MIB",
    "DeviceSeries",
    "fb_selector",
    "series_identity",
]

MIB = 1024 * 1024  # the framebuffer gauges are in MiB

FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

# Device labels (render_metrics.go).
GPU, UUID, PCI_BUS_ID, DEVICE, MODEL_NAME = "gpu", "UUID", "pci_bus_id", "device", "modelName"
MIG_PROFILE, MIG_INSTANCE = "GPU_I_PROFILE", "GPU_I_ID"
HOSTNAME = ("hostname", "Hostname")
# Kubernetes labels (transformation/const.go): the current names first, then the --kubernetes-use-old-namespace ones.
POD = ("pod", "pod_name")
NAMESPACE = ("namespace", "pod_namespace")
CONTAINER = ("container", "container_name")
DRA_MIG_PROFILE = "dra_mig_profile"


def _first(labels: Mapping[str, str], names: tuple[str, ...]) -> str:
    for name in names:
        value = labels.get(name)
        if value:
            return value
    return ""


@dataclass(frozen=True, slots=True)
class DeviceSeries:
    """Who one framebuffer series belongs to: a container of a pod, on one GPU (or MIG instance) of one node."""

    namespace: str
    pod: str
    container: str
    device: str  # UUID, else hostname/gpu: the device the samples were taken on
    mig_instance: str  # GPU_I_ID, "" on a whole GPU
    model_name: str  # modelName
    mig_profile: str  # GPU_I_PROFILE (or dra_mig_profile), "" on a whole GPU
    hostname: str


def series_identity(labels: Mapping[str, str]) -> DeviceSeries | str:
    """The series' pod, container and device, or the reason it cannot be attributed to a pod ("no pod label",
    "no namespace label"). Labels a scrape adds (`instance`, `job`) are not part of the identity, so the same device
    scraped twice (two Prometheus jobs, an HA exporter pair) is recognised as a duplicate."""
    pod = _first(labels, POD)
    if not pod:
        return "no pod label"
    namespace = _first(labels, NAMESPACE)
    if not namespace:
        return "no namespace label"
    hostname = _first(labels, HOSTNAME)
    device = labels.get(UUID) or f"{hostname}/{labels.get(GPU, '')}"
    return DeviceSeries(
        namespace=namespace,
        pod=pod,
        container=_first(labels, CONTAINER),
        device=device,
        mig_instance=labels.get(MIG_INSTANCE, ""),
        model_name=labels.get(MODEL_NAME, ""),
        mig_profile=labels.get(MIG_PROFILE) or labels.get(DRA_MIG_PROFILE, ""),
        hostname=hostname,
    )


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fb_selector(metric: str = FB_USED, namespace: str | None = None) -> str:
    """A PromQL selector for one framebuffer gauge of the series that name a pod (in `namespace` when given).

    Only the current label names are selected on (`pod`, `namespace`); an exporter run with
    `--kubernetes-use-old-namespace` needs `pod_name`/`pod_namespace`, which `series_identity` reads but this
    selector does not match."""
    matchers = ['pod!=""']
    if namespace:
        matchers.append(f"namespace={_quote(namespace)}")
    return f"{metric}{{{','.join(matchers)}}}"
