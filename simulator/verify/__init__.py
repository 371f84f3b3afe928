"""Verification of the simulator's scheduling against the real kube-scheduler: a control plane on loopback
(`controlplane`), the workload replayed through it one settled event at a time (`replay`), each decision compared
with the model's in the same state (`compare`); `verify_scheduler` does it all for `gpudra simulate`. With
`--whole-run`, `verify_whole_run` submits the sample in bulk (`bulk`) several times and sets the model's whole-run
figures (`timeline`) against the runs' spread (`spread`)."""

from .binaries import COMPONENTS, KUBERNETES_VERSION, MissingBinaries, find_components
from .controlplane import ControlPlane, ControlPlaneError
from .replay import ReplayError
from .verification import verification_inputs, verify_scheduler
from .wholerun import model_whole_runs, verify_whole_run

__all__ = [
    "COMPONENTS",
    "KUBERNETES_VERSION",
    "ControlPlane",
    "ControlPlaneError",
    "MissingBinaries",
    "ReplayError",
    "find_components",
    "model_whole_runs",
    "verification_inputs",
    "verify_scheduler",
    "verify_whole_run",
]
