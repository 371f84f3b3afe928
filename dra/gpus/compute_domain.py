"""ResourceSlices of the NVIDIA DRA driver's compute-domain kubelet plugin (IMEX channels, ComputeDomain daemons).

Read from the driver's source (`cmd/compute-domain-kubelet-plugin`, the same at v25.8.1, v25.12.0 and main):
the plugin enumerates 2048 IMEX channels (`getImexChannelCount`, a constant) and one daemon (`id` 0), but
publishes, under driver `compute-domain.nvidia.com`, one slice in pool `<node name>` holding only `channel-0`
and `daemon-0` (driver.go skips every channel with an id other than 0). Each device carries exactly two
attributes, `type` (`channel` | `daemon`) and `id` (int), and no capacity (deviceinfo.go). The plugin runs
where the chart's kubelet-plugin DaemonSet does when `resources.computeDomains.enabled`; its channels serve IMEX
(multi-node NVLink) workloads, so gpudra publishes these slices only for a node declared IMEX-capable
(`imex_capable=True`), never by default.

The DeviceClasses are the chart's `compute-domain-default-channel.nvidia.com` (channel 0) and
`compute-domain-daemon.nvidia.com` (templates/deviceclass-compute-domain-*.yaml).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "COMPUTE_DOMAIN_DAEMON_CLASS",
    "COMPUTE_DOMAIN_DEFAULT_CHANNEL_CLASS",
    "COMPUTE_DOMAIN_DRIVER",
    "IMEX_CHANNEL_COUNT",
    "compute_domain_device_classes",
    "compute_domain_slices",
]

COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
COMPUTE_DOMAIN_DEFAULT_CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
COMPUTE_DOMAIN_DAEMON_CLASS = "compute-domain-daemon.nvidia.com"
# The channels the plugin enumerates (nvlib.go getImexChannelCount); only channel 0 is published.
IMEX_CHANNEL_COUNT = 2048
API_VERSION = "resource.k8s.io/v1"


def _device(kind: str, ident: int) -> dict[str, Any]:
    """`ComputeDomain{Channel,Daemon}Info.GetDevice`: name `<type>-<id>`, attributes `type` and `id`."""
    return {"name": f"{kind}-{ident}", "attributes": {"id": {"int": ident}, "type": {"string": kind}}}


def compute_domain_slices(node_name: str, *, imex_capable: bool, generation: int = 1) -> list[dict[str, Any]]:
    """The compute-domain plugin's ResourceSlices for `node_name`: one slice, pool `<node name>`, holding
    `channel-0` and `daemon-0`; no slice at all unless the node is declared `imex_capable` (the plugin runs
    only where ComputeDomains are enabled)."""
    if not node_name:
        raise ValueError("compute_domain_slices: node_name must not be empty (it names the pool)")
    if not imex_capable:
        return []
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            # The kubelet plugin uses generateName `<node>-<driver>-`; gpudra names the one slice `-0`.
            "metadata": {"name": f"{node_name}-{COMPUTE_DOMAIN_DRIVER}-0"},
            "spec": {
                "driver": COMPUTE_DOMAIN_DRIVER,
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": generation, "resourceSliceCount": 1},
                "devices": [_device("channel", 0), _device("daemon", 0)],
            },
        }
    ]


def compute_domain_device_classes(api_version: str = API_VERSION) -> list[dict[str, Any]]:
    """The chart's two ComputeDomain DeviceClasses, with their CEL selectors exactly as the templates write them."""
    domain = f"device.attributes['{COMPUTE_DOMAIN_DRIVER}']"
    driver = f"device.driver == '{COMPUTE_DOMAIN_DRIVER}'"
    expressions = {
        COMPUTE_DOMAIN_DEFAULT_CHANNEL_CLASS: f"{driver} && {domain}.type == 'channel' && {domain}.id == 0",
        COMPUTE_DOMAIN_DAEMON_CLASS: f"{driver} && {domain}.type == 'daemon'",
    }
    return [
        {
            "apiVersion": api_version,
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        for name, expression in expressions.items()
    ]
