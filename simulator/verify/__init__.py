"""Verification of the simulator's scheduling against the real kube-scheduler: a control plane on loopback
(`controlplane`), the workload replayed through it one settled event at a time, each decision compared with the
simulator's in the same state."""
