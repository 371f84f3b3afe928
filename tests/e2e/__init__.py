"""End-to-end tests against the real control plane (tests/controlplane)."""
