"""`gpudra translate POD.yaml`: the pod rewritten to DRA and its ResourceClaimTemplate.

Exit codes: 0 translated, 1 denied (the policy's message on stderr), 2 an unreadable file or a bad option.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from dra.errors import InputError
from webhook.policy import read_inputs
from webhook.translate import translate

from ..options import OptionError, output_format
from ..outcome import Outcome, emit
from ..render.documents import yaml_stream
from ..render.policy import policy_errors
from .policy import EXIT_DENIED, EXIT_INPUT, Source, policy_set


def translate_file(
    pod_file: Source, policies_dir: Source | None = None, output: str = "yaml", namespace_file: Source | None = None
) -> Outcome:
    """The mutated pod and its ResourceClaimTemplate(s) as a YAML stream, or the JSON object of the CLI contract."""
    try:
        fmt = output_format(output)
        pod, namespace = read_inputs(pod_file, namespace_file)
    except (OptionError, InputError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    policies = policy_set(policies_dir)
    decision = policies.evaluate(pod, namespace)
    errors = policy_errors(policies)
    if not decision.allowed:
        return Outcome(stderr=errors + f"denied: {decision.message}\n", code=EXIT_DENIED)
    result = translate(pod, decision)
    if fmt == "json":
        return Outcome(stdout=json.dumps(result.to_json(), indent=2) + "\n", stderr=errors)
    warnings = "".join(f"warning: {w}\n" for w in result.warnings)
    return Outcome(stdout=yaml_stream([result.pod, *result.templates]), stderr=errors + warnings)


def register(app: typer.Typer) -> None:
    @app.command("translate")
    def _translate(
        pod: Path = typer.Argument(..., help="Pod YAML or JSON (a Namespace document beside it is used too)."),
        policies: Path | None = typer.Option(None, "--policies", help="Policy directory (default: shipped)."),
        output: str = typer.Option("yaml", "-o", "--output", help="yaml (a YAML stream) or json."),
        namespace: Path | None = typer.Option(None, "--namespace", help="Namespace object YAML."),
    ) -> None:
        """Print the mutated pod and its ResourceClaimTemplate; exit 1 with the policy's message when denied."""
        emit(translate_file(pod, policies, output, namespace))
