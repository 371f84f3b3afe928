"""A tenant's attacks on the webhook, for benchmarks/tenant_attacks.py: the wire (`wire`), HTTP/2 (`http2`), connections
and bodies (`connections`), reviews (`reviews`)."""
