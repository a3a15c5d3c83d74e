"""The daemon's answers as typed, frozen dataclasses, kept by hand after docs/openapi.yaml.

Each field that comes from the wire names its JSON property in `metadata["json"]`; fields the
client adds (the 201-vs-200 `created` flag, the raw answer, a run's roll answers) say
`metadata["local"]`. `tests/test_types.py` compares these fields, their optionality and their
types with the schemas of docs/openapi.yaml, so a change to the API that the client does not
follow fails CI.

Parsing is strict where the client relies on a value (a required property missing, or of the
wrong JSON type, raises `SealProtocolError`) and lenient elsewhere: properties the document
does not name are kept in `raw` and ignored, so a daemon newer than the client still works.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from .errors import SealProtocolError


def _j(name: str) -> Any:
    """A required field read from the JSON property `name`."""
    return field(metadata={"json": name})


def _jo(name: str) -> Any:
    """An optional field (absent or null in the answer) read from the JSON property `name`."""
    return field(default=None, metadata={"json": name})


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False, metadata={"local": True})


@dataclass(frozen=True)
class Stored:
    """`PUT /v1/runs/{id}`, `/brief`, `/play-spec`: stored (201) or already stored (200). The
    same document re-sent to a finalizing or decided run is 200 with `phase` (and, once decided,
    its `outcome` and `decision`)."""

    run_id: str = _j("runId")
    key: str = _j("key")
    sha256: str = _j("sha256")
    phase: str | None = _jo("phase")
    outcome: str | None = _jo("outcome")
    decision: Any = _jo("decision")
    created: bool = field(default=False, metadata={"local": True})
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class BlobStored:
    """`PUT /v1/blobs/sha256/{hex}`: stored (201) or already stored (200)."""

    key: str = _j("key")
    sha256: str = _j("sha256")
    bytes: int = _j("bytes")
    created: bool = field(default=False, metadata={"local": True})
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class RollAnswer:
    """`POST /v1/runs/{id}/rolls/{n}`: the judged roll, or the stored answer to a resubmission.

    `next` is `"roll-2"` (play again with a new seed) or `"finalize"`.
    """

    run_id: str = _j("runId")
    roll_id: str = _j("rollId")
    roll_outcome: str = _j("rollOutcome")
    decision: Any = _j("decision")
    degraded: bool = _j("degraded")
    conflicts: Any = _j("conflicts")
    errors: tuple[Any, ...] = _j("errors")
    cost_rmb: float = _j("costRmb")
    consensus_ref: str | None = _j("consensusRef")
    consensus_hash: str | None = _j("consensusHash")
    next: Any = _j("next")
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class FinalizeAnswer:
    """`POST /v1/runs/{id}/finalize`: the sealed decision, the same for every caller."""

    run_id: str = _j("runId")
    outcome: str | None = _j("outcome")
    decision: Any = _j("decision")
    source_roll_id: str | None = _j("sourceRollId")
    cost_rmb: float = _j("costRmb")
    evidence_ref: str = _j("evidenceRef")
    evidence_sha256: str = _j("evidenceSha256")
    seal_ref: str = _j("sealRef")
    seal_sha256: str = _j("sealSha256")
    key_id: str | None = _j("keyId")
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class RunResult(FinalizeAnswer):
    """What `SealClient.submit_run` returns: the sealed decision and the answer of each roll
    submitted (roll 1, and roll 2 when seal asked for it and the folder had it)."""

    rolls: tuple[RollAnswer, ...] = field(default=(), metadata={"local": True})

    @classmethod
    def of(cls, done: FinalizeAnswer, rolls: tuple[RollAnswer, ...]) -> RunResult:
        values = {f.name: getattr(done, f.name) for f in dataclasses.fields(FinalizeAnswer)}
        return cls(**values, rolls=rolls)

    def as_json(self) -> dict[str, Any]:
        """The finalize answer in the API's names, with each roll's id, outcome and cost."""
        out = as_json(self)
        out["rolls"] = [
            {"rollId": r.roll_id, "rollOutcome": r.roll_outcome, "costRmb": r.cost_rmb}
            for r in self.rolls
        ]
        return out


@dataclass(frozen=True)
class RollSummary:
    """One roll of `RunState.rolls`."""

    roll_id: str = _j("rollId")
    roll_outcome: str = _j("rollOutcome")
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class RunState:
    """`GET /v1/runs/{id}`: phase (`JUDGING`, `FINALIZING`, `DECIDED`), rolls and next step
    (`roll-1`, `roll-2`, `finalize`, or None once decided)."""

    run_id: str = _j("runId")
    phase: str = _j("phase")
    rolls: tuple[RollSummary, ...] = _j("rolls")
    next: str | None = _j("next")
    outcome: str | None = _jo("outcome")
    decision: Any = _jo("decision")
    evidence_sha256: str | None = _jo("evidenceSha256")
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class VerifyReport:
    """`GET /v1/runs/{id}/verify`: the `seal verify` report of a run."""

    run_id: str = _j("runId")
    verified: bool = _j("verified")
    problems: tuple[Any, ...] = _j("problems")
    outcome: Any = _jo("outcome")
    key_id: Any = _jo("keyId")
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class InclusionProof:
    """`GET /v1/runs/{id}/log-proof`: the run's seal in the transparency log (RFC 9162)."""

    run_id: str = _j("runId")
    leaf_index: int = _j("leafIndex")
    tree_size: int = _j("treeSize")
    entry: str = _j("entry")
    audit_path: tuple[str, ...] = _j("auditPath")
    checkpoint: str = _j("checkpoint")
    raw: Mapping[str, Any] = _raw()


@dataclass(frozen=True)
class ApiErrorBody:
    """The `error` member of every error answer."""

    code: str = _j("code")
    message: str = _j("message")
    object: str | None = _j("object")
    raw: Mapping[str, Any] = _raw()


T = TypeVar("T")


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field's annotation (str, bool, int, float, tuples of a
    dataclass or of values, unions, Any)."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, h) for h in typing.get_args(hint))
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return isinstance(value, list) and all(_conforms(v, item) for v in value)
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return isinstance(value, hint)


def _convert(value: Any, hint: Any, what: str) -> Any:
    """Lists become tuples, objects of a dataclass type become that dataclass."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        inner = [h for h in typing.get_args(hint) if h is not type(None)]
        return value if value is None or len(inner) != 1 else _convert(value, inner[0], what)
    if origin is tuple and isinstance(value, list):
        item = typing.get_args(hint)[0]
        return tuple(_convert(v, item, what) for v in value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return parse(hint, value, what)
    return value


def wire_fields(cls: type) -> list[tuple[dataclasses.Field[Any], str, Any]]:
    """The fields of a type that come from the wire: (field, JSON name, resolved annotation)."""
    hints = typing.get_type_hints(cls)
    return [
        (f, f.metadata["json"], hints[f.name])
        for f in dataclasses.fields(cls)
        if "json" in f.metadata
    ]


def parse(cls: type[T], obj: Any, what: str, **local: Any) -> T:
    """Reads one answer into `cls`; `SealProtocolError` names what is missing or mistyped."""
    if not isinstance(obj, dict):
        raise SealProtocolError(
            "protocol", f"{what}: expected a JSON object, got {type(obj).__name__}"
        )
    values: dict[str, Any] = {}
    for f, name, hint in wire_fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if name not in obj:
            if required:
                raise SealProtocolError("protocol", f"{what}: property {name} is missing")
            continue
        value = obj[name]
        if value is None and not required:
            continue
        if not _conforms(value, hint):
            raise SealProtocolError(
                "protocol", f"{what}: property {name} is {type(value).__name__}, not {hint}"
            )
        values[f.name] = _convert(value, hint, f"{what}.{name}")
    make: Callable[..., T] = cls
    return make(**values, raw=obj, **local)


def as_json(value: Any) -> dict[str, Any]:
    """A parsed answer back in the API's names (nested dataclasses included)."""
    out: dict[str, Any] = {}
    for f, name, _ in wire_fields(type(value)):
        v = getattr(value, f.name)
        if isinstance(v, tuple):
            v = [as_json(x) if dataclasses.is_dataclass(x) else x for x in v]
        out[name] = v
    return out
