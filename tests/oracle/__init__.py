"""Go oracles of the upstream DRA allocator and Kubernetes CEL, and their self-tests."""
