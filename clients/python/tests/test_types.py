"""The client's types and error classes agree with docs/openapi.yaml (and with the error codes
the daemon's source names): a change to the API that the client does not follow fails here."""

from __future__ import annotations

import dataclasses
import http
import os
import re
import types
import typing
from pathlib import Path
from typing import Any, Union

import pytest
from harness import REPO

from seal_client import (
    ERROR_CLASSES,
    ApiErrorBody,
    BlobStored,
    FinalizeAnswer,
    InclusionProof,
    RollAnswer,
    RollSummary,
    RunResult,
    RunState,
    SealClient,
    SealCorruptStore,
    Stored,
    VerifyReport,
)
from seal_client.errors import class_for_status
from seal_client.types import wire_fields


def openapi() -> dict[str, Any]:
    try:
        import yaml
    except ImportError:
        if os.environ.get("SEAL_REQUIRE_PYTHON") == "1":
            pytest.fail("SEAL_REQUIRE_PYTHON=1 but PyYAML is not installed")
        pytest.skip("PyYAML is not installed (pip install pyyaml)")
    doc: dict[str, Any] = yaml.safe_load((REPO / "docs" / "openapi.yaml").read_text())
    return doc


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = doc
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def schema_kinds(doc: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema admits ("any" for an empty schema)."""
    schema = resolve(doc, schema)
    names = {bool: "boolean", str: "string", int: "integer", float: "number", type(None): "null"}
    if "type" in schema:
        t = schema["type"]
        return set(t) if isinstance(t, list) else {t}
    if "enum" in schema:
        return {names[type(v)] for v in schema["enum"]}
    if "const" in schema:
        return {names[type(schema["const"])]}
    return {"any"}


def hint_kinds(hint: Any) -> set[str]:
    """The JSON types a field's annotation admits."""
    if hint is Any:
        return {"any"}
    if typing.get_origin(hint) in (Union, types.UnionType):
        return set().union(*(hint_kinds(h) for h in typing.get_args(hint)))
    if typing.get_origin(hint) is tuple:
        return {"array"}
    if dataclasses.is_dataclass(hint):
        return {"object"}
    return {
        bool: {"boolean"},
        str: {"string"},
        int: {"integer"},
        float: {"number"},
        type(None): {"null"},
    }[hint]


# The schema each answer type follows.
def schemas(doc: dict[str, Any]) -> list[tuple[type, dict[str, Any]]]:
    c = doc["components"]
    run_state = c["schemas"]["RunState"]
    return [
        (RollAnswer, c["schemas"]["RollAnswer"]),
        (FinalizeAnswer, c["schemas"]["FinalizeAnswer"]),
        (RunResult, c["schemas"]["FinalizeAnswer"]),
        (RunState, run_state),
        (RollSummary, run_state["properties"]["rolls"]["items"]),
        (VerifyReport, c["schemas"]["VerifyReport"]),
        (InclusionProof, c["schemas"]["InclusionProof"]),
        (Stored, c["responses"]["Stored"]["content"]["application/json"]["schema"]),
        (BlobStored, c["responses"]["Blob"]["content"]["application/json"]["schema"]),
        (ApiErrorBody, c["schemas"]["Error"]["properties"]["error"]),
    ]


def test_answer_types_have_the_properties_optionality_and_types_of_their_openapi_schemas() -> None:
    doc = openapi()
    for cls, schema in schemas(doc):
        props = schema["properties"]
        required = set(schema.get("required", []))
        fields = {name: (f, hint) for f, name, hint in wire_fields(cls)}
        assert set(fields) == set(props), (
            f"{cls.__name__}: fields {sorted(fields)} vs schema {sorted(props)}"
        )
        for name, (f, hint) in fields.items():
            has_default = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            assert has_default == (name not in required), (
                f"{cls.__name__}.{name}: required is {name in required}"
            )
            want = schema_kinds(doc, props[name]) | (set() if name in required else {"null"})
            want = {"any"} if "any" in want else want
            assert hint_kinds(hint) == want, f"{cls.__name__}.{name}: {hint} vs {want}"


def test_each_client_call_returns_the_type_of_its_operations_200_answer() -> None:
    doc = openapi()
    by_schema = {id(s): cls for cls, s in schemas(doc) if cls is not RunResult}
    calls = {
        "putHeader": SealClient.put_header,
        "putBrief": SealClient.put_brief,
        "putPlaySpec": SealClient.put_play_spec,
        "putBlob": SealClient.put_blob,
        "postRoll": SealClient.post_roll,
        "postFinalize": SealClient.finalize,
        "getRun": SealClient.get_run,
        "getVerify": SealClient.verify,
        "getLogProof": SealClient.log_proof,
    }
    operations = {
        op["operationId"]: op
        for path in doc["paths"].values()
        for op in path.values()
        if isinstance(op, dict) and "operationId" in op
    }
    for op_id, method in calls.items():
        answer = operations[op_id]["responses"]["200"]
        if "$ref" in answer:
            answer = resolve(doc, answer)
        schema = answer["content"]["application/json"]["schema"]
        schema = resolve(doc, schema) if "$ref" in schema else schema
        assert typing.get_type_hints(method)["return"] is by_schema[id(schema)], op_id


def test_every_error_code_of_the_openapi_document_has_its_exception_class() -> None:
    doc = openapi()
    text = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"][
        "description"
    ]
    codes = {c for c in re.split(r"[\s,]+", text) if re.fullmatch(r"[a-z_]+", c)}
    assert len(codes) >= 30, codes
    assert sorted(codes - set(ERROR_CLASSES)) == []


# Names of the `http` crate that Python's HTTPStatus spells otherwise (or only in newer versions).
HTTP_CRATE_NAMES = {"PAYLOAD_TOO_LARGE": 413, "URI_TOO_LONG": 414, "UNPROCESSABLE_ENTITY": 422}


def status_number(name: str) -> int:
    if name in HTTP_CRATE_NAMES:
        return HTTP_CRATE_NAMES[name]
    return http.HTTPStatus[name].value


def rust_sources() -> list[Path]:
    return [p for top in ("src", "crates") for p in (REPO / top).rglob("*.rs")]


def test_every_error_code_the_daemon_names_has_the_class_of_its_status() -> None:
    tuples: set[tuple[str, str]] = set()
    bare: set[str] = set()
    for p in rust_sources():
        text = p.read_text(errors="replace")
        tuples |= {
            (m[1], m[2])
            for m in re.finditer(r'StatusCode::([A-Z_]+)(?:,\s*|\s*=>\s*)"([a-z_]+)"', text)
        }
        bare |= set(re.findall(r'\bcode:\s*"([a-z_]+)"', text))
        bare |= set(re.findall(r'\\?"code\\?"\s*:\s*\\?"([a-z_]+)', text))
    assert len(tuples) >= 25, f"the scan of the daemon's source found only {sorted(tuples)}"
    for status_name, code in sorted(tuples):
        assert code in ERROR_CLASSES, f"{code} ({status_name}) has no exception class"
        status = status_number(status_name)
        expected = class_for_status(status)
        if ERROR_CLASSES[code] is SealCorruptStore:
            assert status == 500, code
        else:
            assert ERROR_CLASSES[code] is expected, (
                f"{code}: {ERROR_CLASSES[code].__name__} vs {status}"
            )
    assert sorted(bare - set(ERROR_CLASSES)) == []
