"""The client against a live `seal serve` (harness.py): the sealed-fixture inputs judged with
the outcomes `seal judge` gives, idempotent resubmission, typed 422 and 409 errors, and a
daemon killed with SIGKILL mid-run."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST_RETRY
from harness import (
    FIXTURE_INPUTS,
    MODEL_A,
    MODEL_B,
    REPO,
    JudgeProxy,
    SealDaemon,
    copy_input,
    native_inputs,
    seal_judge,
)

from seal_client import (
    RunFolder,
    RunResult,
    SealClient,
    SealConflict,
    SealInvalidDocument,
    SealUnauthorized,
)


def steps(client: SealClient, run_dir: Path) -> tuple[RunResult, list[tuple[str, Any]]]:
    """submit_run, with every step it reported."""
    seen: list[tuple[str, Any]] = []
    result = client.submit_run(run_dir, progress=lambda step, answer: seen.append((step, answer)))
    return result, seen


@pytest.mark.parametrize("judge_a", ["forward", "pass"])
def test_client_judges_the_fixture_inputs_with_the_outcomes_seal_judge_gives(
    judge_a: str, client: SealClient, judge: JudgeProxy, keys: Path, tmp_path: Path
) -> None:
    # "forward": both slots are the Rust judge's default persona. "pass": judge A says
    # satisfied to everything, so that rolls the default persona fails are disputed and
    # roll 2 is asked for.
    judge.personas[MODEL_A] = judge_a
    outcomes, two_rolls = set(), 0
    inconclusive: list[str] = []
    for name in native_inputs():
        got = client.submit_run(FIXTURE_INPUTS / name)
        want = seal_judge(
            FIXTURE_INPUTS / name, tmp_path / "judge-store", keys, judge.url, tmp_path
        )
        assert got.run_id == want["runId"] == name
        assert (
            got.outcome,
            got.decision["action"],
            got.decision["reasons"],
            got.source_roll_id,
        ) == (want["outcome"], want["decision"], want["reasons"], want["sourceRollId"]), name
        assert [(r.roll_id, r.roll_outcome) for r in got.rolls] == [
            (r["rollId"], r["outcome"]) for r in want["rolls"]
        ], name
        assert got.cost_rmb == pytest.approx(want["costRmb"], abs=1e-9), name
        assert got.evidence_ref == want["evidenceRef"] and got.seal_ref == want["sealRef"]
        assert got.key_id == want["keyId"]
        assert client.verify(name).verified, name
        outcomes.add(got.outcome)
        two_rolls += len(got.rolls) == 2
        if got.outcome == "inconclusive":
            inconclusive.append(name)
    # The adjudication queue: every inconclusive run (none is reviewed), with its explain link.
    queue = client.review_queue()
    assert sorted(q["runId"] for q in queue) == sorted(inconclusive), queue
    assert all(q["explain"] == f"/v1/runs/{q['runId']}/explain" for q in queue), queue
    # The comparison covers the decisions and the roll-2 path, not one outcome only.
    if judge_a == "forward":
        assert {"pass", "fail"} <= outcomes, outcomes
    else:
        assert "inconclusive" in outcomes and two_rolls >= 1, (outcomes, two_rolls)


def test_a_legacy_adapted_folder_is_refused_with_a_typed_422_and_judged_by_nobody(
    client: SealClient, judge: JudgeProxy
) -> None:
    with pytest.raises(SealInvalidDocument) as e:
        client.submit_run(FIXTURE_INPUTS / "legacy-accept")
    assert (e.value.status, e.value.code) == (422, "provenance")
    assert e.value.object is not None and e.value.object.endswith(" header")
    assert judge.total_calls() == 0


def test_a_second_submit_run_of_a_sealed_folder_makes_no_judge_call_and_uploads_nothing(
    client: SealClient, judge: JudgeProxy
) -> None:
    run_dir = FIXTURE_INPUTS / "run-narrative-0010-pass"
    first, first_steps = steps(client, run_dir)
    calls = judge.total_calls()
    assert calls == 2, "one call per judge slot"
    uploaded = [a.sha256 for s, a in first_steps if s == "blob"]
    assert sorted(uploaded) == sorted(p.name.split(".")[0] for p in (run_dir / "blobs").iterdir())
    assert all(a.created for s, a in first_steps if s == "blob")

    second, second_steps = steps(client, run_dir)
    assert judge.total_calls() == calls
    assert [s for s, _ in second_steps if s == "blob"] == []
    assert second == first
    assert [r.raw for r in second.rolls] == [r.raw for r in first.rolls]


def blob_hashes(run_dir: Path) -> set[str]:
    return {p.name.split(".")[0] for p in (run_dir / "blobs").iterdir()}


def test_a_new_roll_s_frames_are_sent_first_and_those_another_run_stored_are_not_stored_again(
    client: SealClient,
) -> None:
    first = FIXTURE_INPUTS / "run-narrative-0011-inconclusive"
    second = FIXTURE_INPUTS / "run-heritage-0017-disputed-font"
    shared = blob_hashes(first) & blob_hashes(second)
    assert shared, "the two fixture runs share frames"
    client.submit_run(first)
    _, seen = steps(client, second)
    blobs = [a for s, a in seen if s == "blob"]
    sent = {a.roll_id for s, a in seen if s == "roll"}
    rolls = [r for r in RunFolder.read(second).rolls if r.roll_id in sent]
    referenced = set().union(*(r.frames for r in rolls))
    assert referenced & shared, "the rolls sent share frames with the first run"
    # Every frame of the rolls it sent went up before them (no 422 `missing_blobs` round trip) ...
    assert {a.sha256 for a in blobs} == referenced
    # ... and the ones the first run stored were found there (200), the others created (201).
    assert {a.sha256 for a in blobs if a.created} == referenced - shared
    assert {a.sha256 for a in blobs if not a.created} == referenced & shared


def test_an_invalid_header_is_a_typed_422_invalid_document_before_any_judge_call(
    client: SealClient, judge: JudgeProxy, tmp_path: Path
) -> None:
    run_dir = copy_input("run-narrative-0010-pass", tmp_path)
    header = json.loads((run_dir / "header.json").read_bytes())
    del header["gameId"]
    (run_dir / "header.json").write_text(json.dumps(header))
    with pytest.raises(SealInvalidDocument) as e:
        client.submit_run(run_dir)
    assert (e.value.status, e.value.code) == (422, "invalid_document")
    assert e.value.object == "run run-narrative-0010-pass header"
    assert "gameId" in e.value.message
    assert judge.total_calls() == 0


def test_another_header_for_a_stored_run_is_a_typed_409_conflict(
    client: SealClient, judge: JudgeProxy, tmp_path: Path
) -> None:
    run_dir = copy_input("run-narrative-0010-pass", tmp_path)
    client.put_header("run-narrative-0010-pass", (run_dir / "header.json").read_bytes())
    header = json.loads((run_dir / "header.json").read_bytes())
    header["environment"]["host"] = "another-worker"
    (run_dir / "header.json").write_text(json.dumps(header))
    with pytest.raises(SealConflict) as e:
        client.submit_run(run_dir)
    assert (e.value.status, e.value.code, e.value.object) == (
        409,
        "conflict",
        "run run-narrative-0010-pass header",
    )
    assert judge.total_calls() == 0


def test_another_proof_package_for_a_judged_roll_is_a_typed_409_conflict(
    client: SealClient, judge: JudgeProxy, tmp_path: Path
) -> None:
    run_dir = copy_input("run-narrative-0010-pass", tmp_path)
    client.submit_run(run_dir)
    calls = judge.total_calls()
    package = json.loads((run_dir / "roll-1" / "proof-package.json").read_bytes())
    package["actorCostRmb"] = package["actorCostRmb"] + 0.01
    (run_dir / "roll-1" / "proof-package.json").write_text(json.dumps(package))
    with pytest.raises(SealConflict) as e:
        client.submit_run(run_dir)
    assert (e.value.status, e.value.code) == (409, "conflict")
    assert e.value.object == "run run-narrative-0010-pass roll-1"
    assert judge.total_calls() == calls


def test_roll_2_before_roll_1_is_a_typed_409_out_of_order(client: SealClient) -> None:
    run_dir = FIXTURE_INPUTS / "run-heritage-0017-disputed-font"
    run = "run-heritage-0017-disputed-font"
    client.put_header(run, (run_dir / "header.json").read_bytes())
    with pytest.raises(SealConflict) as e:
        client.post_roll(run, 2, (run_dir / "roll-2" / "proof-package.json").read_bytes())
    assert (e.value.status, e.value.code) == (409, "out_of_order")


class WorkerCrash(Exception):
    """The worker process dying, as far as submit_run can tell."""


def test_kill_9_after_roll_1_then_submit_run_again_seals_once_without_a_judge_call(
    daemon: SealDaemon, client: SealClient, judge: JudgeProxy
) -> None:
    run_dir = FIXTURE_INPUTS / "run-narrative-0010-pass"

    def crash_after_roll_1(step: str, answer: Any) -> None:
        if step == "roll":
            daemon.kill9()
            raise WorkerCrash(answer.roll_outcome)

    with pytest.raises(WorkerCrash):
        client.submit_run(run_dir, progress=crash_after_roll_1)
    calls = judge.total_calls()
    assert calls == 2
    daemon.start()  # a new process on a new port, the same store
    result = SealClient(daemon.url, retry=FAST_RETRY).submit_run(run_dir)
    assert judge.total_calls() == calls, "roll 1 was answered from the store"
    assert result.outcome == "pass"
    assert SealClient(daemon.url).verify(result.run_id).verified
    assert daemon.log_entries(result.run_id) == 1


def test_kill_9_while_judge_calls_are_in_flight_then_the_same_submit_run_seals_once(
    daemon: SealDaemon, judge: JudgeProxy
) -> None:
    run_dir = FIXTURE_INPUTS / "run-narrative-0010-pass"
    client = SealClient(daemon.url, retry=FAST_RETRY)
    outcome: dict[str, Any] = {}

    def submit() -> None:
        try:
            outcome["result"] = client.submit_run(run_dir)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = e

    judge.hold()
    worker = threading.Thread(target=submit)
    worker.start()
    judge.wait_held(2)  # both slots are being asked: the roll is in the judges' hands
    port = daemon.port
    daemon.kill9()
    judge.release()  # the held calls answer a daemon that is gone
    daemon.start(port)  # the same address: the client's retries reach the new process
    worker.join(60)
    assert not worker.is_alive()
    assert "error" not in outcome, outcome.get("error")
    result = outcome["result"]
    assert result.outcome == "pass"
    # The killed process's calls were never answered to it: each slot is asked once more.
    assert judge.total_calls() == 4
    assert SealClient(daemon.url).verify(result.run_id).verified
    assert daemon.log_entries(result.run_id) == 1


def test_busy_429_is_retried_after_its_retry_after(
    tmp_path: Path, keys: Path, judge: JudgeProxy, caplog: pytest.LogCaptureFixture
) -> None:
    config = (REPO / "config" / "seal.toml").read_text()
    config = re.sub(r"(?m)^max_rolls_in_progress = \d+", "max_rolls_in_progress = 1", config)
    config = re.sub(r"(?m)^queue_bound = \d+", "queue_bound = 0", config)
    (tmp_path / "seal.toml").write_text(config)
    daemon = SealDaemon(tmp_path, keys, judge.url, config=tmp_path / "seal.toml")
    daemon.start()
    try:
        client = SealClient(daemon.url, retry=FAST_RETRY)
        judge.hold()
        results: dict[str, RunResult] = {}
        first = threading.Thread(
            target=lambda: results.update(
                a=client.submit_run(FIXTURE_INPUTS / "run-trpg-0021-pass")
            )
        )
        first.start()
        judge.wait_held(2)  # the only roll permit is taken
        caplog.set_level(logging.WARNING, logger="seal_client")
        second = threading.Thread(
            target=lambda: results.update(
                b=client.submit_run(FIXTURE_INPUTS / "run-narrative-0010-pass")
            )
        )
        second.start()
        deadline = time.monotonic() + 30
        while (
            not any("busy" in r.getMessage() for r in caplog.records)
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        busy_at = time.monotonic()
        judge.release()
        first.join(60)
        second.join(60)
        assert set(results) == {"a", "b"}
        retried = [r for r in caplog.records if "busy" in r.getMessage()]
        assert retried and "retrying in 2.00s" in retried[0].getMessage()
        assert time.monotonic() - busy_at >= 1.9
    finally:
        judge.release()
        daemon.stop()


def test_explain_and_log_proof_of_a_sealed_run(client: SealClient) -> None:
    result = client.submit_run(FIXTURE_INPUTS / "run-puzzle-0013-fail-end")
    tree = client.explain(result.run_id)
    assert tree["schemaVersion"] == "seal.decision-tree/1"
    page = client.explain(result.run_id, html=True)
    assert page.lstrip().lower().startswith("<!doctype html")
    proof = client.log_proof(result.run_id)
    # Leaf 0 registers the judge policy (before the judges were asked), leaf 1 is the seal.
    assert (proof.run_id, proof.leaf_index, proof.tree_size) == (result.run_id, 1, 2)
    assert json.loads(proof.entry)["sealSha256"] == result.seal_sha256


def test_a_daemon_demanding_a_token_refuses_a_client_without_it_with_a_typed_401(
    tmp_path: Path, keys: Path, judge: JudgeProxy
) -> None:
    daemon = SealDaemon(tmp_path, keys, judge.url)
    daemon.env["SEAL_API_TOKEN"] = "pytest-token-0123456789"
    daemon.start()
    try:
        with pytest.raises(SealUnauthorized) as e:
            SealClient(daemon.url).get_run("run-x")
        assert (e.value.status, e.value.code) == (401, "unauthorized")
        assert (
            SealClient(daemon.url, token="pytest-token-0123456789")
            .submit_run(FIXTURE_INPUTS / "run-trpg-0021-pass")
            .outcome
            == "pass"
        )
    finally:
        daemon.stop()


def test_a_failing_judge_is_judged_and_sealed_by_seal_not_raised_to_the_worker(
    client: SealClient, judge: JudgeProxy
) -> None:
    # Judge B answers 503 to every attempt (the first and its two retries): seal seals the run
    # on judge A alone as degraded, which the worker sees in the roll answer, not as an error.
    overloaded = (503, b'{"error":{"message":"overloaded"}}')
    judge.scripts[MODEL_B] = [overloaded] * 3
    result = client.submit_run(FIXTURE_INPUTS / "run-sim-business-0031-degraded")
    assert judge.calls[MODEL_B] == 3 and judge.scripts[MODEL_B] == []
    roll = result.rolls[0]
    assert roll.degraded and roll.errors, roll.raw
    assert client.verify(result.run_id).verified
