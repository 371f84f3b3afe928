"""Load `GPUClaimPolicy` files, validate them and compile every CEL expression up front.

A broken document is reported in `PolicySet.errors` (file:line:column, the expression, expected vs. got) and
left out; the other policies still load. Nothing here evaluates a pod: see `engine.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from dra.errors import CelCompileError, InputError, PolicyError

from . import _cel
from ._form import API_VERSION, KIND, is_expression
from ._yaml import LocatedDocument, Path, Positions, load_located

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "MAX_POLICY_BYTES",
    "CompiledClaim",
    "CompiledExpr",
    "CompiledPolicy",
    "CompiledRule",
    "load_policy_text",
]

_SUFFIXES = (".yaml", ".yml")
# A policy file is a ConfigMap key, and a ConfigMap holds at most 1 MiB (k8s.io/api/core/v1 MaxSecretSize, the
# same for ConfigMaps): a larger file was not written for the webhook, and a file of this size loads in well under a
# second. The one number for the policy files' size: docs/webhook-reliability.md quotes it (checked by the tests).
MAX_POLICY_BYTES: Final = 2**20


@dataclass(frozen=True)
class CompiledExpr:
    """One compiled expression and where it came from, so every error can point at it.

    `compiled` is None only in policies taken back from `policyengine.verified` (this source compiled before,
    under this code): `program` compiles it on first use then. Pickling drops the program (closures)."""

    source: str
    field_path: str
    file: str
    line: int | None
    column: int | None
    compiled: _cel.Program | None = field(default=None, repr=False, compare=False)

    @property
    def program(self) -> _cel.Program:
        program = self.compiled
        if program is None:  # two threads may both compile: the same program either way
            program = _cel.compile_admission(self.source)
            object.__setattr__(self, "compiled", program)
        return program

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "compiled": None}

    def error(self, message: str) -> PolicyError:
        return PolicyError(
            f"{self.field_path}: {message}",
            file=self.file,
            line=self.line,
            column=self.column,
            expression=self.source,
        )


@dataclass(frozen=True)
class CompiledRule:
    """A validation or warning: the condition, and a literal message or a message expression."""

    expression: CompiledExpr
    message: str | None
    message_expression: CompiledExpr | None
    reason: str


@dataclass(frozen=True)
class CompiledClaim:
    """Per-container variables and the claim tree whose leaves are literals or `CompiledExpr`."""

    variables: tuple[tuple[str, CompiledExpr], ...]
    tree: dict[str, Any]


@dataclass(frozen=True)
class CompiledPolicy:
    """A policy ready to evaluate: sorted by (-priority, name) in a `PolicySet`."""

    name: str
    file: str
    line: int
    mode: str
    priority: int
    failure_policy: str
    params: Any = field(repr=False)
    match_conditions: tuple[tuple[str, CompiledExpr], ...]
    variables: tuple[tuple[str, CompiledExpr], ...]
    claim: CompiledClaim | None
    validations: tuple[CompiledRule, ...]
    warnings: tuple[CompiledRule, ...]
    extended_resource_mapping: str
    on_unsatisfiable: str = "Deny"  # spec.onUnsatisfiable (policyengine.claim_check)
    # `_memo.Analysis`, set on first ask by the memo (derived from the sources above; pickled with the policy)
    memo_analysis: Any = field(default=None, repr=False, compare=False)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class _Compiler:
    """Compiles one document, collecting every error rather than stopping at the first."""

    def __init__(self, file: str, positions: Positions) -> None:
        self.file = file
        self.positions = positions
        self.errors: list[PolicyError] = []

    def error(self, path: Path, message: str, expression: str = "", offset: int | None = None) -> None:
        line, column = self.positions.offset(path, offset) if expression else self.positions.at(path)
        where = _dotted(path)
        text = f"{where}: {message}" if where else message
        self.errors.append(PolicyError(text, file=self.file, line=line, column=column, expression=expression))

    def expr(self, source: str, path: Path) -> CompiledExpr | None:
        try:
            program = _cel.compile_admission(source)
        except CelCompileError as exc:
            self.error(path, f"CEL compile error: {exc.message}", source, exc.position)
            return None
        line, column = self.positions.at(path)
        return CompiledExpr(source, _dotted(path), self.file, line, column, program)

    def selector(self, source: str, path: Path) -> None:
        try:
            _cel.compile_selector(source)
        except CelCompileError as exc:
            self.error(path, f"device selector does not compile: {exc.message}", source, exc.position)

    def named(self, entries: list[dict[str, Any]], path: Path) -> tuple[tuple[str, CompiledExpr], ...]:
        out: list[tuple[str, CompiledExpr]] = []
        for index, entry in enumerate(entries):
            compiled = self.expr(entry["expression"], (*path, index, "expression"))
            if compiled is not None:
                out.append((entry["name"], compiled))
        return tuple(out)

    def rules(self, entries: list[dict[str, Any]], path: Path, default_reason: str) -> tuple[CompiledRule, ...]:
        out: list[CompiledRule] = []
        for index, entry in enumerate(entries):
            condition = self.expr(entry["expression"], (*path, index, "expression"))
            message_source = entry.get("messageExpression")
            message_expr = None
            if message_source is not None:
                message_expr = self.expr(message_source, (*path, index, "messageExpression"))
            if condition is not None and (message_source is None or message_expr is not None):
                reason = str(entry.get("reason", default_reason))
                out.append(CompiledRule(condition, entry.get("message"), message_expr, reason))
        return tuple(out)

    def tree(self, value: Any, path: Path) -> Any:
        """Literal data with every `{expression: ...}` mapping replaced by its compiled program."""
        if is_expression(value):
            return self.expr(value["expression"], (*path, "expression"))
        if isinstance(value, dict):
            return {key: self.tree(item, (*path, key)) for key, item in value.items()}
        if isinstance(value, list):
            if path and path[-1] == "selectors":
                for index, item in enumerate(value):
                    if isinstance(item, str):
                        self.selector(item, (*path, index))
            return [self.tree(item, (*path, index)) for index, item in enumerate(value)]
        return value


_VARIABLE_REF = re.compile(r"(?<![\w.])variables\.([A-Za-z_]\w*)")


def _expressions(value: Any, path: Path) -> Iterator[tuple[Path, str]]:
    if is_expression(value):
        yield (*path, "expression"), value["expression"]
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _expressions(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _expressions(item, (*path, index))


def _check_variable_references(compiler: _Compiler, spec: dict[str, Any]) -> None:
    """`variables.x` must name a variable visible there: earlier ones only, none in matchConditions (as VAP)."""
    checks: list[tuple[Path, str, list[str]]] = []
    for index, entry in enumerate(spec.get("matchConditions", [])):
        checks.append((("spec", "matchConditions", index, "expression"), entry["expression"], []))
    pod_names = [v["name"] for v in spec.get("variables", [])]
    for index, entry in enumerate(spec.get("variables", [])):
        checks.append((("spec", "variables", index, "expression"), entry["expression"], pod_names[:index]))
    for section in ("validations", "warnings"):
        for index, entry in enumerate(spec.get(section, [])):
            for key in ("expression", "messageExpression"):
                if entry.get(key):
                    checks.append((("spec", section, index, key), entry[key], pod_names))
    claim = spec.get("claim") or {}
    claim_names = [v["name"] for v in claim.get("variables", [])]
    for index, entry in enumerate(claim.get("variables", [])):
        path: Path = ("spec", "claim", "variables", index, "expression")
        checks.append((path, entry["expression"], pod_names + claim_names[:index]))
    rest = {k: v for k, v in claim.items() if k != "variables"}
    for path, source in _expressions(rest, ("spec", "claim")):
        checks.append((path, source, pod_names + claim_names))
    for path, source, visible in checks:
        for match in _VARIABLE_REF.finditer(source):
            name = match.group(1)
            if name in visible:
                continue
            if path[1] == "matchConditions":
                why = "matchConditions run before variables and cannot read them"
            elif name in pod_names or name in claim_names:
                why = f"variables.{name} is defined later (a variable may only read the ones before it)"
            else:
                known = ", ".join(visible) or "none"
                why = f"no variable named {name!r} (visible here: {known})"
            compiler.error(path, why, source, match.start())


def _validation_errors(exc: ValidationError, compiler: _Compiler) -> None:
    for item in exc.errors():
        path: Path = tuple(p for p in item["loc"] if isinstance(p, str | int))
        # Union members add their own type names to the location; keep only the document's field names.
        clean: list[str | int] = []
        for part in path:
            if isinstance(part, str) and ("[" in part or part in {"Expression", "str", "int", "bool"}):
                continue
            clean.append(part)
        got = item.get("input")
        shown = f" (got {got!r})" if not isinstance(got, dict | list) and got is not None else ""
        compiler.error(tuple(clean), f"{item['msg']}{shown}")


def _compile_document(doc: LocatedDocument, file: str) -> tuple[CompiledPolicy | None, list[PolicyError]]:
    compiler = _Compiler(file, doc.positions)
    data = doc.data
    if not isinstance(data, dict):
        compiler.error((), f"expected a {KIND} mapping, got {type(data).__name__}")
        return None, compiler.errors
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        got = f"{data.get('apiVersion')}/{data.get('kind')}"
        compiler.error((), f"expected apiVersion {API_VERSION} and kind {KIND} (got {got})")
        return None, compiler.errors
    from pydantic import ValidationError

    from .model import GPUClaimPolicy  # pydantic's models: built when a document is first validated

    try:
        document = GPUClaimPolicy.model_validate(data)
    except ValidationError as exc:
        _validation_errors(exc, compiler)
        return None, compiler.errors
    spec: dict[str, Any] = data["spec"]
    matches = compiler.named(spec.get("matchConditions", []), ("spec", "matchConditions"))
    variables = compiler.named(spec.get("variables", []), ("spec", "variables"))
    validations = compiler.rules(spec.get("validations", []), ("spec", "validations"), "Invalid")
    warnings = compiler.rules(spec.get("warnings", []), ("spec", "warnings"), "")
    claim = None
    if spec.get("claim") is not None:
        raw = dict(spec["claim"])
        claim_vars = compiler.named(raw.pop("variables", []), ("spec", "claim", "variables"))
        claim = CompiledClaim(claim_vars, compiler.tree(raw, ("spec", "claim")))
    _check_variable_references(compiler, spec)
    if compiler.errors:
        return None, compiler.errors
    policy = CompiledPolicy(
        name=document.metadata.name,
        file=file,
        line=doc.line,
        mode=document.spec.mode,
        priority=document.spec.priority,
        failure_policy=document.spec.failurePolicy,
        params=_cel.from_json(document.spec.params),
        match_conditions=matches,
        variables=variables,
        claim=claim,
        validations=validations,
        warnings=warnings,
        extended_resource_mapping=document.spec.extendedResourceMapping,
        on_unsatisfiable=document.spec.onUnsatisfiable,
    )
    return policy, []


def load_policy_text(text: str, file: str = "<string>") -> tuple[list[CompiledPolicy], list[PolicyError]]:
    """Compile every policy document in one YAML stream; bad documents become errors, good ones load. A stream
    longer than `MAX_POLICY_BYTES`, with duplicate keys or with aliases that expand too far is one error."""
    try:
        documents = load_located(text, file, max_bytes=MAX_POLICY_BYTES)
    except InputError as exc:
        return [], [PolicyError(exc.message, file=file, line=exc.line)]
    policies: list[CompiledPolicy] = []
    errors: list[PolicyError] = []
    for doc in documents:
        if doc.data is None:
            continue
        policy, doc_errors = _compile_document(doc, file)
        errors.extend(doc_errors)
        if policy is not None:
            policies.append(policy)
    return policies, errors
