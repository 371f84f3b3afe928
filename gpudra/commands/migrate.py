"""`gpudra migrate --device-plugin-config FILE`: what keeps every pod of the device plugin's vocabulary working.

Reads the NVIDIA device plugin's config (or the GPU Operator's ConfigMap of configs) and prints, as one YAML stream,
the DeviceClasses that map its renamed replicas (KEP-5004 `extendedResourceName`), the shared-gpu policy params
(`sharedResources`, `sharedNodeConfigs`) and, where a config runs migStrategy single, the mig-single policy's
`migStrategySingle: true`; each replica that does not become a share is a warning on stderr.
Exit codes: 0 ok, 2 unreadable input.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dra.documents import read_documents
from dra.errors import InputError
from policyengine.device_plugin import migration, read_configs

from ..outcome import Outcome
from ..render.documents import yaml_stream
from ..signature import add_command

EXIT_INPUT = 2


@dataclass(frozen=True, slots=True)
class MigrateOptions:
    """`gpudra migrate`'s options as typer shows them (the command's one signature)."""

    device_plugin_config: Annotated[
        Path,
        typer.Option(
            "--device-plugin-config",
            help="The device plugin's config file (api/config/v1), or the GPU Operator's ConfigMap of configs.",
        ),
    ]


def _params_document(params: dict[str, Any], policy: str = "shared-gpu") -> dict[str, Any]:
    """A policy's params as a partial GPUClaimPolicy: merge its spec.params into policies/<policy>.yaml."""
    return {
        "apiVersion": "gpudra.io/v1alpha1",
        "kind": "GPUClaimPolicy",
        "metadata": {"name": policy},
        "spec": {"params": params},
    }


def migrate(options: MigrateOptions) -> Outcome:
    """The DeviceClasses and the shared-gpu params for the config's vocabulary, warnings on stderr."""
    try:
        documents = [d.data for d in read_documents(options.device_plugin_config)]
        found = migration(read_configs(documents))
    except InputError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    documents = [*found.device_classes, _params_document(found.params)]
    if found.mig_single:
        documents.append(_params_document({"migStrategySingle": True}, "mig-single"))
    stream = yaml_stream(documents)
    return Outcome(stdout=stream, stderr="".join(f"warning: {w}\n" for w in found.warnings))


def register(app: typer.Typer) -> None:
    add_command(app, "migrate", migrate, help=HELP)


HELP = "Print the DeviceClasses and shared-gpu params that keep the device plugin's resource names working."
