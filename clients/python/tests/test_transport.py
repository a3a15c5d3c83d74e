"""Retries and error mapping, against a scripted HTTP server (no daemon needed): what is retried,
how long the client waits, when it gives up, and which exception each answer becomes. The
live tests (test_live.py) show the same against `seal serve`; these pin the edges a real daemon
does not produce on demand (a 503 with a given Retry-After, a 502 from a proxy, a dropped
connection, an answer outside the contract)."""

from __future__ import annotations

import socket
import time
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from scripted import error, ok

from seal_client import (
    RetryPolicy,
    SealClient,
    SealConflict,
    SealCorruptStore,
    SealInternalError,
    SealInvalidDocument,
    SealProtocolError,
    SealUnavailable,
)
from seal_client.transport import retry_after_seconds

RUN_STATE = {"runId": "r1", "phase": "JUDGING", "rolls": [], "next": "roll-1"}
QUICK = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05)


def test_a_503_is_retried_after_its_retry_after(scripted: Any) -> None:
    s = scripted((503, {"Retry-After": "1"}, error("unavailable")), ok(RUN_STATE))
    state = SealClient(s.url, retry=QUICK).get_run("r1")
    assert state.phase == "JUDGING"
    assert len(s.requests) == 2
    assert s.requests[1]["at"] - s.requests[0]["at"] >= 0.95


@pytest.mark.parametrize("status", [408, 429, 502, 504])
def test_busy_timeouts_and_gateway_errors_are_retried(scripted: Any, status: int) -> None:
    s = scripted((status, {"Retry-After": "0"}, error("x")), ok(RUN_STATE))
    assert SealClient(s.url, retry=QUICK).get_run("r1").run_id == "r1"
    assert len(s.requests) == 2


def test_retries_are_bounded_and_end_in_seal_unavailable_with_the_daemons_code(
    scripted: Any,
) -> None:
    s = scripted(*[(503, {}, error("no_signing_key", "no key", None))] * 10)
    with pytest.raises(SealUnavailable) as e:
        SealClient(s.url, retry=RetryPolicy(attempts=3, base_delay=0.01)).finalize("r1")
    assert len(s.requests) == 3
    assert (e.value.status, e.value.code, e.value.fault) == (
        503,
        "no_signing_key",
        "infrastructure",
    )


def test_retry_after_is_capped_by_the_policy(scripted: Any) -> None:
    s = scripted((429, {"Retry-After": "3600"}, error("busy")), ok(RUN_STATE))
    started = time.monotonic()
    SealClient(s.url, retry=RetryPolicy(attempts=2, max_retry_after=0.2)).get_run("r1")
    assert time.monotonic() - started < 5


def test_corrupt_store_is_raised_at_once_and_never_retried(scripted: Any) -> None:
    s = scripted(
        (500, {}, error("corrupt_store", "sha256 mismatch", "runs/r1/evidence.json")), ok(RUN_STATE)
    )
    with pytest.raises(SealCorruptStore) as e:
        SealClient(s.url, retry=QUICK).verify("r1")
    assert len(s.requests) == 1
    assert (e.value.code, e.value.object, e.value.fault) == (
        "corrupt_store",
        "runs/r1/evidence.json",
        "corruption",
    )


def test_an_error_answer_becomes_the_exception_of_its_code_with_message_and_object(
    scripted: Any,
) -> None:
    s = scripted((409, {}, error("run_decided", "run r1 is decided", "run r1")))
    with pytest.raises(SealConflict) as e:
        SealClient(s.url, retry=QUICK).put_header("r1", b"{}")
    assert (e.value.status, e.value.code, e.value.message, e.value.object) == (
        409,
        "run_decided",
        "run r1 is decided",
        "run r1",
    )
    assert e.value.fault == "caller"


def test_an_unknown_code_falls_back_to_the_class_of_its_status(scripted: Any) -> None:
    s = scripted((422, {}, error("a_new_code")), (500, {}, b"<html>proxy error</html>"))
    client = SealClient(s.url, retry=QUICK)
    with pytest.raises(SealInvalidDocument) as e:
        client.put_brief("r1", b"brief")
    assert e.value.code == "a_new_code"
    with pytest.raises(SealInternalError) as e2:
        client.put_brief("r1", b"brief")
    assert (e2.value.status, e2.value.code) == (500, "http_500")


def test_an_answer_outside_the_contract_is_a_protocol_error(scripted: Any) -> None:
    s = scripted(
        ok({"runId": "r1", "phase": "JUDGING", "rolls": []}),
        (200, {}, b"not json"),
        ok({**RUN_STATE, "rolls": "none"}),
    )
    client = SealClient(s.url, retry=QUICK)
    for _ in range(3):
        with pytest.raises(SealProtocolError):
            client.get_run("r1")


def test_no_daemon_is_retried_then_seal_unavailable(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SealUnavailable) as e:
        SealClient(
            f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=2, base_delay=0.01)
        ).get_run("r1")
    assert e.value.code == "connection" and e.value.status is None


def test_a_connection_dropped_before_the_answer_is_retried(scripted: Any) -> None:
    s = scripted("drop", ok(RUN_STATE))
    assert SealClient(s.url, retry=QUICK).get_run("r1").run_id == "r1"
    assert len(s.requests) == 2


def test_a_keep_alive_connection_closed_while_idle_is_reopened_without_using_an_attempt(
    scripted: Any,
) -> None:
    s = scripted(("stale", ok(RUN_STATE)), ok(RUN_STATE))
    client = SealClient(s.url, retry=RetryPolicy(attempts=1))
    client.get_run("r1")
    time.sleep(0.05)
    assert client.get_run("r1").run_id == "r1"
    assert len(s.requests) == 2


def test_the_token_is_sent_as_a_bearer_and_documents_with_their_content_types(
    scripted: Any, tmp_path: Path
) -> None:
    s = scripted(
        ok({"runId": "r1", "key": "runs/r1/brief.md", "sha256": "0" * 64}, 201),
        ok({"key": "cas/sha256/ab/x", "sha256": "ab" * 32, "bytes": 3}),
    )
    blob = tmp_path / "frame.png"
    blob.write_bytes(b"png")
    client = SealClient(s.url, token="t0k3n", retry=QUICK)
    stored = client.put_brief("r1", "简报".encode())
    blob_stored = client.put_blob("ab" * 32, blob)
    assert stored.created and not blob_stored.created
    assert [r["headers"]["Authorization"] for r in s.requests] == ["Bearer t0k3n"] * 2
    assert s.requests[0]["headers"]["Content-Type"].startswith("text/markdown")
    assert (s.requests[1]["path"], s.requests[1]["body"]) == (
        f"/v1/blobs/sha256/{'ab' * 32}",
        b"png",
    )


def test_a_streamed_blob_is_sent_whole_again_on_a_retry(scripted: Any, tmp_path: Path) -> None:
    s = scripted(
        (503, {"Retry-After": "0"}, error("unavailable")),
        ok({"key": "k", "sha256": "cd" * 32, "bytes": 70000}, 201),
    )
    blob = tmp_path / "big.png"
    blob.write_bytes(bytes(range(256)) * 274)
    SealClient(s.url, retry=QUICK).put_blob("cd" * 32, blob)
    assert [r["body"] for r in s.requests] == [blob.read_bytes()] * 2


def test_retry_after_is_read_as_seconds_or_as_an_http_date() -> None:
    now = datetime(2026, 12, 2, 3, 0, 0, tzinfo=timezone.utc).timestamp()
    assert retry_after_seconds("7") == 7.0
    assert (
        retry_after_seconds(
            format_datetime(datetime(2026, 12, 2, 3, 0, 5, tzinfo=timezone.utc), usegmt=True), now
        )
        == 5.0
    )
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None
