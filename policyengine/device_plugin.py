"""The NVIDIA device plugin's vocabulary, read from its own config: what each resource name a pod may ask for means.

The schema is NVIDIA/k8s-device-plugin `api/config/v1` (`config.go` Config{version, flags, resources, sharing},
`sharing.go` Sharing{timeSlicing, mps}, `replicas.go` ReplicatedResources and ReplicaResource{name, rename, devices,
replicas}, `consts.go` DefaultSharedResourceNameSuffix ".shared"); the GPU Operator hands the plugin a ConfigMap
whose every data key is one such config, chosen per node by the label `nvidia.com/device-plugin.config`.
`migration(...)` turns it into the DeviceClasses and shared-gpu policy params that keep every existing pod working.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from dra.errors import InputError

from .facts import LEGACY_GPU, MIG_PREFIX, SHARED_SUFFIX

__all__ = ["NODE_CONFIG_LABEL", "Migration", "Replica", "migration", "read_configs", "replicas"]

# The GPU Operator's node label naming the config (a key of its ConfigMap) the device plugin runs with on that node.
NODE_CONFIG_LABEL = "nvidia.com/device-plugin.config"
_STRATEGIES = {"timeSlicing": "TimeSlicing", "mps": "MPS"}
_SHARE_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu' "
    "&& device.allowMultipleAllocations"
)


@dataclass(frozen=True, slots=True)
class Replica:
    """One replicated resource of one config: what pods ask for (`resource`), what it replicates, how, how often."""

    config: str
    resource: str
    replicates: str
    strategy: str
    replicas: int


@dataclass(frozen=True)
class Migration:
    """What `gpudra migrate` prints: the DeviceClasses, the shared-gpu params, and what a reader must know."""

    device_classes: tuple[dict[str, Any], ...]
    params: dict[str, Any]
    warnings: tuple[str, ...] = field(default=())
    # A config runs migStrategy single: the mig-single policy's `migStrategySingle` param is to be set.
    mig_single: bool = False


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a mapping (got {type(value).__name__})")
    return value


def _config(data: Any, where: str) -> dict[str, Any]:
    config = _mapping(data, where)
    version = config.get("version", "v1")
    if version != "v1":  # config.go parseConfigFrom: "unknown version"
        raise InputError(f"{where}.version: the device plugin reads config version v1 (got {version!r})")
    return config


def read_configs(documents: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Config name -> config, from device plugin config files (named "default") or the GPU Operator's ConfigMaps
    (every data key a config in YAML); `InputError` names the document and key that is not one."""
    configs: dict[str, dict[str, Any]] = {}
    for index, document in enumerate(documents):
        doc = _mapping(document, f"document {index}")
        if doc.get("kind") == "ConfigMap":
            for key, text in _mapping(doc.get("data"), f"document {index} data").items():
                where = f"ConfigMap {_mapping(doc.get('metadata'), 'metadata').get('name', '')} data[{key}]"
                try:
                    parsed = yaml.safe_load(str(text))
                except yaml.YAMLError as exc:
                    raise InputError(f"{where}: not YAML: {exc}") from exc
                configs[str(key)] = _config(parsed, where)
        elif "sharing" in doc or "flags" in doc or "resources" in doc or doc.get("version") == "v1":
            configs["default" if "default" not in configs else f"default-{index}"] = _config(doc, f"document {index}")
        else:
            raise InputError(
                f"document {index}: neither a device plugin config (version: v1) nor a ConfigMap of configs "
                f"(kind {doc.get('kind')!r})"
            )
    if not configs:
        raise InputError("no device plugin config found (a config file, or the GPU Operator's ConfigMap)")
    return configs


def replicas(name: str, config: Mapping[str, Any]) -> tuple[list[Replica], list[str]]:
    """The replicated resources of one config, named as the plugin advertises them, and warnings. Only the
    default `.shared` rename is honoured: the plugin resets any other (`DisableResourceNamingInConfig`)."""
    found: list[Replica] = []
    warnings: list[str] = []
    sharing = _mapping(config.get("sharing"), f"{name}.sharing")
    resources = _mapping(config.get("resources"), f"{name}.resources")
    if resources.get("gpus") or resources.get("mig"):
        warnings.append(
            f"config {name!r}: resources.gpus/mig renames are ignored by the device plugin itself "
            "(api/config/v1 DisableResourceNamingInConfig): its pods ask for the standard names"
        )
    flags = _mapping(config.get("flags"), f"{name}.flags")
    if flags.get("migStrategy") == "single":
        warnings.append(
            f"config {name!r}: migStrategy single advertises each MIG device as {LEGACY_GPU}: the mig-single "
            f"policy's migStrategySingle: true (printed) gives a pod's {LEGACY_GPU} whole GPUs or MIG devices, "
            "without right-sizing or topology, as the device plugin did"
        )
    for key, strategy in _STRATEGIES.items():
        replicated = _mapping(sharing.get(key), f"{name}.sharing.{key}")
        rename = bool(replicated.get("renameByDefault"))
        for index, entry in enumerate(replicated.get("resources") or []):
            item = _mapping(entry, f"{name}.sharing.{key}.resources[{index}]")
            resource = str(item.get("name", ""))
            if "/" not in resource:  # resources.go NewResourceName: the nvidia.com prefix is implied
                resource = f"nvidia.com/{resource}"
            count = item.get("replicas")
            if type(count) is not int or count <= 0:  # replicas.go: "number of replicas must be >= 0"
                raise InputError(f"{name}.sharing.{key}.resources[{index}].replicas: expected a positive whole number")
            advertised = resource + SHARED_SUFFIX if rename else resource
            if item.get("rename") and item.get("rename") != advertised:
                warnings.append(
                    f"config {name!r}: rename {item['rename']!r} of {resource} is reset by the device plugin "
                    f"(DisableResourceNamingInConfig): pods ask for {advertised}"
                )
            found.append(Replica(name, advertised, resource, strategy, count))
    return found, warnings


def _class_name(resource: str) -> str:
    """A DeviceClass name for a replicated resource: `gpu-shared.gpudra.io` for nvidia.com/gpu.shared."""
    return resource.split("/", 1)[1].replace(".", "-").lower() + ".gpudra.io"


def _device_class(replica: Replica) -> dict[str, Any]:
    """The DeviceClass that maps a renamed replica (KEP-5004 extendedResourceName), so an untranslated pod asking
    for it is scheduled on DRA devices: a share of a GPU, or a MIG device of the profile."""
    if replica.replicates.startswith(MIG_PREFIX):
        profile = replica.replicates[len(MIG_PREFIX) :]
        selector = (
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' "
            f"&& device.attributes['gpu.nvidia.com'].profile == '{profile}'"
        )
    else:
        selector = _SHARE_SELECTOR
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": _class_name(replica.resource), "labels": {"app.kubernetes.io/managed-by": "gpudra"}},
        "spec": {"selectors": [{"cel": {"expression": selector}}], "extendedResourceName": replica.resource},
    }


def migration(configs: Mapping[str, Mapping[str, Any]]) -> Migration:
    """The DeviceClasses (one per renamed replica) and shared-gpu params (`sharedResources`, `sharedNodeConfigs`)
    that keep the pods of every config working, with a warning for each replica that is not a share."""
    shared: dict[str, str] = {}
    pinned: dict[str, str] = {}
    classes: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    mig_single = False
    for name, config in configs.items():
        flags = _mapping(config.get("flags"), f"{name}.flags")
        mig_single = mig_single or flags.get("migStrategy") == "single"
        found, notes = replicas(name, config)
        warnings.extend(notes)
        for replica in found:
            if replica.strategy == "MPS":
                warnings.append(
                    f"config {name!r}: {replica.resource} is an MPS replica ({replica.replicas} per device): the "
                    "NVIDIA DRA driver refuses MPS on shared (ConsumableShares) GPUs, so it becomes a share without MPS"
                )
            if replica.resource != replica.replicates:
                known = shared.get(replica.resource, replica.strategy).split(" or ")
                shared[replica.resource] = " or ".join(sorted({*known, replica.strategy}))
                classes.setdefault(replica.resource, _device_class(replica))
            elif replica.replicates == LEGACY_GPU:
                pinned[name] = replica.strategy
                warnings.append(
                    f"config {name!r}: {LEGACY_GPU} is replicated {replica.replicas}x without renaming: pods pinned "
                    f"to it (nodeSelector {NODE_CONFIG_LABEL}: {name}) become shares; a pod that lands there "
                    "unpinned is translated as whole GPUs"
                )
            else:
                warnings.append(
                    f"config {name!r}: {replica.resource} is replicated {replica.replicas}x without renaming: its pods "
                    "become whole MIG devices of that profile"
                )
    if classes:
        warnings.append(
            "the DeviceClasses need DRAExtendedResource (extendedResourceName, KEP-5004) and, for shares, "
            "DRAConsumableCapacity (allowMultipleAllocations): both beta and on by default from Kubernetes 1.36"
        )
    params = {"sharedResources": dict(sorted(shared.items())), "sharedNodeConfigs": dict(sorted(pinned.items()))}
    return Migration(tuple(classes[k] for k in sorted(classes)), params, tuple(warnings), mig_single)
