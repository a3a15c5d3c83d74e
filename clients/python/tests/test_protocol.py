"""The order of `submit_run`'s requests in the run phases a live daemon does not produce on
demand (a FINALIZING run, another worker deciding the run meanwhile, a `missing_blobs`
message the client cannot read), against the scripted server."""

from __future__ import annotations

from typing import Any

import pytest
from harness import FIXTURE_INPUTS
from scripted import error, ok

from seal_client import RetryPolicy, RunFolder, SealClient, SealConflict

RUN = "run-narrative-0010-pass"
RUN_DIR = FIXTURE_INPUTS / RUN
QUICK = RetryPolicy(attempts=2, base_delay=0.01)
ROLL = {
    "runId": RUN,
    "rollId": "roll-1",
    "rollOutcome": "pass",
    "decision": {"action": "accept"},
    "degraded": False,
    "conflicts": [],
    "errors": [],
    "costRmb": 0.5,
    "consensusRef": "runs/x/roll-1/consensus.json",
    "consensusHash": "c" * 64,
    "next": "finalize",
}
FINAL = {
    "runId": RUN,
    "outcome": "pass",
    "decision": {"action": "accept"},
    "sourceRollId": "roll-1",
    "costRmb": 0.5,
    "evidenceRef": f"runs/{RUN}/evidence.json",
    "evidenceSha256": "e" * 64,
    "sealRef": f"runs/{RUN}/seal.dsse.json",
    "sealSha256": "5" * 64,
    "keyId": "k" * 64,
}
STORED = {"runId": RUN, "key": "k", "sha256": "0" * 64}


def state(phase: str, nxt: str | None) -> dict[str, Any]:
    return {"runId": RUN, "phase": phase, "rolls": [], "next": nxt}


def sent(s: Any) -> list[str]:
    return [f"{r['method']} {r['path'].removeprefix(f'/v1/runs/{RUN}')}" for r in s.requests]


def test_a_finalizing_run_is_finalized_before_its_rolls_get_their_stored_answers(
    scripted: Any,
) -> None:
    s = scripted(ok(state("FINALIZING", "finalize")), ok(FINAL), ok(ROLL), ok(FINAL))
    result = SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    assert sent(s) == ["GET ", "POST /finalize", "POST /rolls/1", "POST /finalize"]
    assert (result.outcome, [r.roll_outcome for r in result.rolls]) == ("pass", ["pass"])


def test_a_run_another_worker_decided_meanwhile_is_read_again_not_refused(scripted: Any) -> None:
    s = scripted(
        ok(state("JUDGING", "roll-1")),
        (409, {}, error("run_decided", "run is decided", f"run {RUN}")),
        ok({**state("DECIDED", None), "outcome": "pass"}),
        ok(ROLL),
        ok(FINAL),
    )
    result = SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    assert sent(s) == ["GET ", "PUT ", "GET ", "POST /rolls/1", "POST /finalize"]
    assert result.seal_sha256 == "5" * 64


def test_a_conflict_with_other_bytes_is_raised_not_retried(scripted: Any) -> None:
    s = scripted(
        ok(state("JUDGING", "roll-1")),
        (409, {}, error("conflict", "other bytes", f"run {RUN} header")),
    )
    with pytest.raises(SealConflict):
        SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    assert sent(s) == ["GET ", "PUT "]


BLOB = ok({"key": "k", "sha256": "0" * 64, "bytes": 1}, 201)


def test_a_new_roll_s_frames_are_uploaded_before_it_and_a_held_roll_s_are_not(
    scripted: Any,
) -> None:
    frames = RunFolder.read(RUN_DIR).rolls[0].frames
    s = scripted(
        (404, {}, error("not_found")),
        ok(STORED, 201),
        ok(STORED, 201),
        ok(STORED, 201),
        *[BLOB] * len(frames),
        ok(ROLL),
        ok(FINAL),
    )
    SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    blobs = [f"PUT /v1/blobs/sha256/{h}" for h in frames]
    assert sent(s) == ["GET ", "PUT ", "PUT /brief", "PUT /play-spec", *blobs, "POST /rolls/1",
                       "POST /finalize"]

    # A run that holds roll 1 already (a retry): its stored answer, no upload.
    s = scripted(ok(HOLDING), ok(STORED), ok(STORED), ok(STORED), ok(ROLL), ok(FINAL))
    SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    assert sent(s) == ["GET ", "PUT ", "PUT /brief", "PUT /play-spec", "POST /rolls/1",
                       "POST /finalize"]


# A JUDGING run holding roll 1: the roll is sent without its frames first.
HOLDING = {**state("JUDGING", "finalize"), "rolls": [{"rollId": "roll-1", "rollOutcome": "pass"}]}


def test_missing_blobs_uploads_the_named_frames_or_all_when_none_can_be_read(scripted: Any) -> None:
    frames = RunFolder.read(RUN_DIR).rolls[0].frames
    missing = f"run {RUN} roll-1 proof package: missing frame blobs: {frames[1]}, {frames[0]}"
    blob = BLOB
    s = scripted(
        ok(HOLDING),
        ok(STORED),
        ok(STORED),
        ok(STORED),
        (422, {}, error("missing_blobs", missing)),
        blob,
        blob,
        ok(ROLL),
        ok(FINAL),
    )
    SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    assert [r["path"].rsplit("/", 1)[1] for r in s.requests if "/blobs/" in r["path"]] == [
        frames[0],
        frames[1],
    ]

    unreadable: tuple[int, dict[str, str], bytes] = (
        422,
        {},
        error("missing_blobs", "frames are missing"),
    )
    s = scripted(
        ok(HOLDING),
        ok(STORED),
        ok(STORED),
        ok(STORED),
        unreadable,
        *[blob] * len(frames),
        ok(ROLL),
        ok(FINAL),
    )
    SealClient(s.url, retry=QUICK).submit_run(RUN_DIR)
    assert [r["path"].rsplit("/", 1)[1] for r in s.requests if "/blobs/" in r["path"]] == list(
        frames
    )
