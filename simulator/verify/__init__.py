"""Verification of the simulator's scheduling against the real kube-scheduler: a control plane on loopback
(`controlplane`), the workload replayed through it one settled event at a time (`replay`), each decision compared
with the model's in the same state (`compare`); `verify_scheduler` does it all for `gpudra simulate`."""

from .binaries import COMPONENTS, KUBERNETES_VERSION, MissingBinaries, find_components
from .controlplane import ControlPlane, ControlPlaneError
from .replay import ReplayError
from .verification import verification_inputs, verify_scheduler

__all__ = [
    "COMPONENTS",
    "KUBERNETES_VERSION",
    "ControlPlane",
    "ControlPlaneError",
    "MissingBinaries",
    "ReplayError",
    "find_components",
    "verification_inputs",
    "verify_scheduler",
]
