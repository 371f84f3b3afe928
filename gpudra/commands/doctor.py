"""`gpudra doctor`: which of gpudra's protections the cluster has (client auth, NetworkPolicy, the admission policies,
the namespace quota, the replicas' spread), read back from the installed objects (housekeeping.check_install).

Exit codes: 0 every protection on, 3 the API server failed a read, 4 some protection is off (each says how to turn
it on).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from housekeeping import InstallReader, Protection, check_install
from kubeapi import ApiServerError, KubeInstallReader, api_client

from ..coercion import command_class
from ..outcome import Outcome, emit

EXIT_API, EXIT_OFF = 3, 4


def _text(protections: list[Protection]) -> str:
    lines = []
    for p in protections:
        lines.append(f"{'on ' if p.on else 'OFF'}  {p.name}: {p.detail}")
        if p.fix:
            lines.append(f"     to turn it on: {p.fix}")
    return "\n".join(lines) + "\n"


def doctor_once(reader: InstallReader, *, namespace: str, prefix: str, as_json: bool) -> Outcome:
    """The protections as an `Outcome` (text or JSON), or the API server's failure on stderr."""
    try:
        protections = check_install(reader, namespace, prefix)
    except ApiServerError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_API)
    text = json.dumps([p.as_dict() for p in protections]) + "\n" if as_json else _text(protections)
    return Outcome(stdout=text, code=0 if all(p.on for p in protections) else EXIT_OFF)


def register(app: typer.Typer) -> None:
    @app.command("doctor", cls=command_class())
    def _doctor(
        kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="kubeconfig (default: ~/.kube/config)."),
        namespace: str = typer.Option("gpudra-system", "--namespace", "-n", help="The namespace gpudra runs in."),
        prefix: str = typer.Option(
            "gpudra", "--prefix", help="The objects' name prefix (the Helm chart: its fullname)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the protections as a JSON list."),
        timeout: float = typer.Option(10.0, "--timeout", min=1, help="Seconds per API call."),
    ) -> None:
        """Say which of gpudra's protections the cluster has, and how to turn on the ones that are off."""
        reader = KubeInstallReader(api_client(str(kubeconfig) if kubeconfig else None), timeout=timeout)
        emit(doctor_once(reader, namespace=namespace, prefix=prefix, as_json=as_json))
