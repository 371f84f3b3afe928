"""The shipped webhook configurations (manifests/base) pointed at a test's `gpudra serve`, for e2e tests that share
one control plane: each test module's configurations reach only namespaces labelled `gpudra-e2e: <scope>`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def shipped_webhook_configurations(name: str, port: int, ca_bundle: str, scope: str) -> list[dict[str, Any]]:
    """The mutating and validating configurations as shipped, named `name`, calling https://127.0.0.1:`port`."""
    configs = []
    for file, path in (("mutatingwebhook.yaml", "/mutate"), ("validatingwebhook.yaml", "/validate")):
        config = yaml.safe_load((ROOT / "manifests" / "base" / file).read_text())
        config["metadata"]["name"] = name
        for hook in config["webhooks"]:
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
            hook["namespaceSelector"]["matchExpressions"].append(
                {"key": "gpudra-e2e", "operator": "In", "values": [scope]}
            )
        configs.append(config)
    return configs
