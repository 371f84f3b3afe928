"""Claims as users write them: v1beta1 demo claims (modelled on the NVIDIA DRA driver's demo/specs/quickstart/v1beta1
files, written here, not copied) and wrong claims the strict parse must reject, with the paths the API server names.

Shared by the unit tests and the e2e test that sends the same objects to a real kube-apiserver.
"""

from __future__ import annotations

from typing import Any

V1BETA1 = "resource.k8s.io/v1beta1"
V1BETA2 = "resource.k8s.io/v1beta2"
V1 = "resource.k8s.io/v1"


def _template(name: str, devices: dict[str, Any], version: str = V1BETA1) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": devices}},
    }


def _claim(name: str, devices: dict[str, Any], version: str = V1BETA1) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "ResourceClaim", "metadata": {"name": name}, "spec": {"devices": devices}}


def _gpu_config(strategy: str) -> dict[str, Any]:
    sharing: dict[str, Any] = {"strategy": strategy}
    if strategy == "MPS":
        sharing["mpsConfig"] = {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi"}
    else:
        sharing["timeSlicingConfig"] = {"interval": "Long"}
    return {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": sharing}


def _profile(profile: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]


# name -> v1beta1 object. One GPU; one GPU shared by two containers; MIG devices on one parent GPU; time-slicing and
# MPS configs per request; a prioritized list; all GPUs of a model with admin access and a toleration.
V1BETA1_DEMOS: dict[str, dict[str, Any]] = {
    "single-gpu": _template("single-gpu", {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}),
    "shared-gpu-claim": _claim("shared-gpu", {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}),
    "mig-devices": _template(
        "mig-devices",
        {
            "requests": [
                {"name": "mig-1g-5gb-0", "deviceClassName": "mig.nvidia.com", "selectors": _profile("1g.5gb")},
                {"name": "mig-1g-5gb-1", "deviceClassName": "mig.nvidia.com", "selectors": _profile("1g.5gb")},
                {"name": "mig-2g-10gb", "deviceClassName": "mig.nvidia.com", "selectors": _profile("2g.10gb")},
                {"name": "mig-3g-20gb", "deviceClassName": "mig.nvidia.com", "selectors": _profile("3g.20gb")},
            ],
            "constraints": [{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}],
        },
    ),
    "multiple-gpus": _template(
        "multiple-gpus",
        {
            "requests": [
                {"name": "ts-gpu", "deviceClassName": "gpu.nvidia.com"},
                {"name": "mps-gpu", "deviceClassName": "gpu.nvidia.com"},
            ],
            "config": [
                {
                    "requests": ["ts-gpu"],
                    "opaque": {"driver": "gpu.nvidia.com", "parameters": _gpu_config("TimeSlicing")},
                },
                {"requests": ["mps-gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": _gpu_config("MPS")}},
            ],
        },
    ),
    "mig-or-gpu": _template(
        "mig-or-gpu",
        {
            "requests": [
                {
                    "name": "accel",
                    "firstAvailable": [
                        {"name": "mig", "deviceClassName": "mig.nvidia.com", "selectors": _profile("3g.40gb")},
                        {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1},
                    ],
                }
            ]
        },
    ),
    "all-h100-admin": _claim(
        "all-h100",
        {
            "requests": [
                {
                    "name": "gpus",
                    "deviceClassName": "gpu.nvidia.com",
                    "allocationMode": "All",
                    "adminAccess": True,
                    "selectors": [
                        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.contains('H100')"}}
                    ],
                    "tolerations": [{"key": "nvidia.com/maintenance", "effect": "NoSchedule"}],
                }
            ]
        },
    ),
    "two-gpus-count": _claim(
        "two-gpus", {"requests": [{"name": "gpus", "deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": []}]}
    ),
}

# The v1 form the API server returns for each demo (its spec), as read from Kubernetes v1.37.2's conversion and
# defaulting code (pkg/apis/resource/v1beta1/conversion.go, defaults.go; v1/defaults.go).
V1_SPECS: dict[str, dict[str, Any]] = {
    "single-gpu": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1},
                    }
                ]
            }
        }
    },
    "all-h100-admin": {
        "devices": {
            "requests": [
                {
                    "name": "gpus",
                    "exactly": {
                        "deviceClassName": "gpu.nvidia.com",
                        "allocationMode": "All",
                        "adminAccess": True,
                        "selectors": [
                            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.contains('H100')"}}
                        ],
                        "tolerations": [{"key": "nvidia.com/maintenance", "operator": "Equal", "effect": "NoSchedule"}],
                    },
                }
            ]
        }
    },
    "mig-or-gpu": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "accel",
                        "firstAvailable": [
                            {
                                "name": "mig",
                                "deviceClassName": "mig.nvidia.com",
                                "selectors": _profile("3g.40gb"),
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                            {
                                "name": "gpu",
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        ],
                    }
                ]
            }
        }
    },
}

# Wrong claims, with the unknown-field paths the API server's strict decoding reports (in document order).
BAD_CLAIMS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "misspelled-devices",
        _claim("misspelled", {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}, V1)
        | {"spec": {"device": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
        ["spec.device"],
    ),
    (
        "misspelled-count",
        _claim(
            "cuont", {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "cuont": 4}}]}, V1
        ),
        ["spec.devices.requests[0].exactly.cuont"],
    ),
    (
        "several",
        _claim(
            "several",
            {
                "requests": [
                    {
                        "name": "a",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expresion": "true"}}]},
                    },
                    {"name": "b", "exactly": {"deviceClassName": "gpu.nvidia.com"}, "count": 2},
                ],
                "constraints": [{"matchAttributes": "gpu.nvidia.com/parentUUID"}],
            },
            V1,
        ),
        [
            "spec.devices.requests[0].exactly.selectors[0].cel.expresion",
            "spec.devices.requests[1].count",
            "spec.devices.constraints[0].matchAttributes",
        ],
    ),
    (
        "snake-case",
        _template("snake", {"requests": [{"name": "gpu", "exactly": {"device_class_name": "gpu.nvidia.com"}}]}, V1),
        ["spec.spec.devices.requests[0].exactly.device_class_name"],
    ),
    (
        "v1-shape-in-v1beta1",
        _claim("beta-exactly", {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}),
        ["spec.devices.requests[0].exactly"],
    ),
    (
        "v1beta1-typo",
        _template(
            "beta-typo",
            {
                "requests": [
                    {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "selector": [{"cel": {"expression": "true"}}]}
                ]
            },
        ),
        ["spec.spec.devices.requests[0].selector"],
    ),
    (
        "v1beta1-nested-typo",
        _claim(
            "beta-nested",
            {
                "requests": [
                    {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expr": "true"}}]}
                ]
            },
        ),
        ["spec.devices.requests[0].selectors[0].cel.expr"],
    ),
    (
        "top-level-and-metadata",
        _claim("top", {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}, V1)
        | {"metadata": {"name": "top", "label": {"a": "b"}}, "extra": 1},
        ["metadata.label", "extra"],
    ),
]

V1ALPHA2_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1alpha2",
    "kind": "ResourceClaim",
    "metadata": {"name": "classic"},
    "spec": {"resourceClassName": "gpu.nvidia.com"},
}
