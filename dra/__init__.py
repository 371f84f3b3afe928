"""gpudra's allocation core: the resource.k8s.io/v1 object model, Kubernetes CEL, the structured allocator,
the GPU catalog (MIG geometry, NVLink) and the NVML inventory. Imports no web framework, no Kubernetes client."""
