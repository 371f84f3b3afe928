"""The real Kubernetes control plane for the e2e tests: build script, process runner, fixtures, helpers."""
