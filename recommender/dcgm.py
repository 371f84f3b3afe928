"""The one reader of the NVIDIA DCGM exporter's series: metric names, which label says which pod, and whether a
series can be attributed to a container at all. `gpudra recommend` and `gpudra simulate --sizing observed:FILE` both
read series through `series_identity`; stdlib and `dra` only, so that it can move with the recommender.

Facts from github.com/NVIDIA/dcgm-exporter at d5e5f510a1b6b393f39a43293ccd9dc985defc79 (2026-05-12):

- `etc/default-counters.csv`: `DCGM_FI_DEV_FB_USED` / `DCGM_FI_DEV_FB_FREE` / `DCGM_FI_DEV_FB_RESERVED` are gauges
  "Framebuffer memory used / free / reserved (in MiB)"; `DCGM_FI_DEV_GPU_UTIL` is a gauge "GPU utilization (in %)";
  `DCGM_FI_PROF_GR_ENGINE_ACTIVE` a gauge "Ratio of time the graphics engine is active" (0..1).
- `internal/pkg/rendermetrics/render_metrics.go` (gpuMetricsFormat): every GPU series carries `gpu` (the index),
  `UUID`, `pci_bus_id`, `device` (nvidia0), `modelName` (the NVML product name, e.g. "NVIDIA H100 80GB HBM3"), on a
  MIG instance also `GPU_I_PROFILE` (e.g. "1g.10gb") and `GPU_I_ID`, and `hostname` unless --no-hostname (releases
  before 3.3 wrote `Hostname`; both are read).
- `internal/pkg/transformation/const.go` and `kubernetes.go` (PodMapper.Process, at 3541fe3d / eb95c71f): with
  `--kubernetes` the pod a device is assigned to (from the kubelet's pod-resources API) adds `pod`, `namespace`,
  `container`; with `--kubernetes-use-old-namespace` (`UseOldNamespace`) it writes `pod_name`, `pod_namespace`,
  `container_name` instead, never both. `--kubernetes-enable-pod-uid` adds `pod_uid`; `--kubernetes-enable-dra` adds
  `dra_claim_name`, `dra_claim_namespace`, `dra_driver_name`, `dra_pool_name`, `dra_device_name`, `dra_mig_profile`,
  `dra_mig_device_uuid`.
- Prometheus `scrape_config.honor_labels` (default false): "label conflicts are resolved by renaming conflicting
  labels in the scraped data to exported_<original-label>". A ServiceMonitor that attaches the exporter's own
  `pod`/`namespace`/`container` as target labels therefore leaves the workload's in `exported_pod`,
  `exported_namespace`, `exported_container`, and `pod`/`namespace`/`container` name the exporter itself.

So each of pod, namespace and container is read from the first non-empty label of: `exported_<new>`,
`exported_<old>`, `<old>`, `<new>` (the exporter's own value before a target label of the same name; the old name
before the new because the new names are what target labels use).

Kubernetes validates the names these labels carry (pkg/apis/core/validation, k8s.io/apimachinery
pkg/util/validation): a namespace is a DNS-1123 label (ValidateNamespaceName = NameIsDNSLabel, <= 63), a pod name a
DNS-1123 subdomain (ValidatePodName = NameIsDNSSubdomain, <= 253), a container name a DNS-1123 label
(validateContainerCommon: ValidateDNS1123Label). A series whose labels are not such names is not from a pod: it is
rejected here, so no label value ever reaches an API request path or an object unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dra.names import DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, is_dns1123_label, is_dns1123_subdomain

__all__ = [
    "CONTAINER",
    "FB_FREE",
    "FB_RESERVED",
    "FB_USED",
    "GPU_UTIL",
    "GR_ENGINE_ACTIVE",
    "MIB",
    "NAMESPACE",
    "POD",
    "DeviceSeries",
    "Rejected",
    "fb_selector",
    "invalid_name",
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
DRA_MIG_PROFILE = "dra_mig_profile"


def _fallbacks(new: str, old: str) -> tuple[str, ...]:
    return (f"exported_{new}", f"exported_{old}", old, new)


# Kubernetes labels, in the order they are read (module docstring).
POD = _fallbacks("pod", "pod_name")
NAMESPACE = _fallbacks("namespace", "pod_namespace")
CONTAINER = _fallbacks("container", "container_name")

# What each name must be (Kubernetes validation), and its longest valid length.
_RULES = {
    "namespace": ("a DNS-1123 label", DNS1123_LABEL_MAX, is_dns1123_label),
    "pod": ("a DNS-1123 subdomain", DNS1123_SUBDOMAIN_MAX, is_dns1123_subdomain),
    "container": ("a DNS-1123 label", DNS1123_LABEL_MAX, is_dns1123_label),
}


def invalid_name(kind: str, value: str) -> str | None:
    """Why `value` cannot be the name of a `kind` ("namespace", "pod" or "container"; pod rules also hold for
    workload owners), or None when Kubernetes would accept it."""
    what, longest, check = _RULES[kind]
    if len(value) > longest:  # before the regex: a label value can be megabytes
        return f"{len(value)} characters, more than the {longest} of {what}"
    errors = check(value)
    return f"not {what}: {errors[0]}" if errors else None


def _first(labels: Mapping[str, object], names: tuple[str, ...]) -> str:
    for name in names:
        value = labels.get(name)
        if isinstance(value, str) and value:
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


@dataclass(frozen=True, slots=True)
class Rejected:
    """Why a series cannot be attributed to a container: `reason` is short and bounded (a metric label:
    "no pod label", "no namespace, container label", "invalid container label"), `detail` says what was seen."""

    reason: str
    detail: str


def _shown(value: str) -> str:
    return repr(value[:64] + "…") if len(value) > 64 else repr(value)


def series_identity(labels: Mapping[str, object]) -> DeviceSeries | Rejected:
    """The series' pod, container and device, or why it cannot be attributed to one (labels missing, or not valid
    Kubernetes names). Labels a scrape adds (`instance`, `job`) are not part of the identity, so the same device
    scraped twice (two Prometheus jobs, an HA exporter pair) is recognised as a duplicate."""
    names = {"namespace": _first(labels, NAMESPACE), "pod": _first(labels, POD), "container": _first(labels, CONTAINER)}
    missing = [kind for kind in ("pod", "namespace", "container") if not names[kind]]
    if missing:
        reason = f"no {', '.join(missing)} label"
        return Rejected(reason, reason)
    for kind in ("namespace", "pod", "container"):
        why = invalid_name(kind, names[kind])
        if why is not None:
            return Rejected(f"invalid {kind} label", f"{kind} {_shown(names[kind])}: {why}")
    hostname = _first(labels, HOSTNAME)
    return DeviceSeries(
        namespace=names["namespace"],
        pod=names["pod"],
        container=names["container"],
        device=_first(labels, (UUID,)) or f"{hostname}/{_first(labels, (GPU,))}",
        mig_instance=_first(labels, (MIG_INSTANCE,)),
        model_name=_first(labels, (MODEL_NAME,)),
        mig_profile=_first(labels, (MIG_PROFILE, DRA_MIG_PROFILE)),
        hostname=hostname,
    )


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fb_selector(metric: str = FB_USED, namespace: str | None = None, *, over: str | None = None) -> str:
    """PromQL for one framebuffer gauge of every series that names a pod by any of the labels `series_identity`
    reads (in `namespace` when given): one selector per label, joined by `or` (which keeps one copy of a series
    two selectors both match). With `over` (a range such as `168h`), each selector is wrapped in
    `last_over_time(...[over])`. `namespace` selects a superset; `series_identity` decides."""
    if namespace is not None and invalid_name("namespace", namespace):
        raise ValueError(f"namespace {namespace!r}: {invalid_name('namespace', namespace)}")
    labels = NAMESPACE if namespace else POD
    selectors = [f"{metric}{{{label}={_quote(namespace)}}}" if namespace else f'{metric}{{{label}!=""}}'
                 for label in labels]  # fmt: skip
    if over is not None:
        selectors = [f"last_over_time({s}[{over}])" for s in selectors]
    return " or ".join(selectors)
