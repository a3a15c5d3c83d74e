"""`SealClient`: the whole submit protocol of `seal serve` for one run folder, and the reads.

`submit_run` does what `seal judge` does, over HTTP (docs/DESIGN.md §8):

1. read and check the folder (`RunFolder.read`): nothing is sent for a broken folder;
2. `GET /v1/runs/{id}`: a new or JUDGING run gets its header, brief and play-spec (create-only
   puts: the same bytes again answer 200); a FINALIZING run is finalized first;
3. each roll is POSTed: roll 1, then roll 2 only when seal answered `next: roll-2` and the
   folder has it. A roll the run does not hold yet (a new or JUDGING run, the roll not among
   its rolls) has its frames uploaded first: a new roll's frames are new, and one PUT each
   (201, or 200 for bytes already stored) is what storing them costs, where asking first
   cost the daemon a HEAD per frame and the client a second POST (docs/BENCHMARKS.md, "S3
   requests per run"). A roll refused with 422 `missing_blobs` (a frame the folder sent but
   the store lost, a roll of a run read as FINALIZING) still gets exactly the named frames
   uploaded before it is sent again;
4. `POST /v1/runs/{id}/finalize`: the sealed decision, the same answer for every caller.

Calling it again for the same folder, after a crash of the worker or of the daemon, is safe
and buys nothing: a judged roll resubmitted with the same package gets its stored answer (no
judge call), a decided run's finalize answers its seal, and a daemon killed while judging
resumes from the store without calling a judge for an answer it already holds. If another
worker moves the run on meanwhile (409 `run_decided`/`run_finalizing`), the state is read
again and the protocol continues from there.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, overload

from .errors import SealConflict, SealInvalidDocument, SealNotFound, SealProtocolError
from .folder import Roll, RunFolder
from .transport import Body, RetryPolicy, Transport
from .types import (
    BlobStored,
    FinalizeAnswer,
    InclusionProof,
    RollAnswer,
    RunResult,
    RunState,
    Stored,
    VerifyReport,
    parse,
)

# `progress(step, answer)` is told of every step of `submit_run`: "state" (RunState or None for
# a new run), "header", "brief", "play-spec" (Stored), "blob" (BlobStored), "roll" (RollAnswer),
# "finalize" (FinalizeAnswer).
Progress = Callable[[str, Any], None]

# How often `submit_run` reads the run's state again after another worker moved it on.
_PHASE_RACES = 3
_HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


def _quiet(step: str, answer: Any) -> None:
    del step, answer


class SealClient:
    """A client of one `seal serve` (or a load balancer in front of replicas).

    `timeout` bounds the wait for an answer, in seconds: a roll is answered once both judges
    have answered, so keep it above the daemon's `server.request_timeout_ms` (900 s by
    default). `retry` says how transient failures are retried (`RetryPolicy`).
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 960.0,
        *,
        connect_timeout: float = 10.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._http = Transport(base_url, token, timeout, connect_timeout, retry or RetryPolicy())

    def close(self) -> None:
        """Closes this thread's keep-alive connection (the next request opens another)."""
        self._http.close()

    def __enter__(self) -> SealClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the protocol -------------------------------------------------------------------

    def submit_run(self, run_dir: str | Path, *, progress: Progress | None = None) -> RunResult:
        """Submits a run folder end to end and returns its sealed decision (module doc)."""
        folder = RunFolder.read(run_dir)
        note = progress or _quiet
        for race in range(_PHASE_RACES):
            state = self._state(folder.run_id)
            note("state", state)
            try:
                return self._submit_from(folder, state, note)
            except SealConflict as e:
                moved_on = e.code in ("run_decided", "run_finalizing")
                if not moved_on or race + 1 == _PHASE_RACES or (state and state.phase != "JUDGING"):
                    raise
        raise AssertionError("unreachable")

    def _submit_from(self, folder: RunFolder, state: RunState | None, note: Progress) -> RunResult:
        if state is None or state.phase == "JUDGING":
            self._put_documents(folder, note)
        elif state.phase == "FINALIZING":
            # Rolls cannot be resubmitted to a finalizing run; once finalized they get their
            # stored answers.
            self.finalize(folder.run_id)
        held = set() if state is None else {r.roll_id for r in state.rolls}
        judging = state is None or state.phase == "JUDGING"
        rolls = self._submit_rolls(folder, note, held if judging else None)
        done = self.finalize(folder.run_id)
        note("finalize", done)
        return RunResult.of(done, rolls)

    def _state(self, run_id: str) -> RunState | None:
        try:
            return self.get_run(run_id)
        except SealNotFound as e:
            if e.code != "not_found":
                raise
            return None

    def _put_documents(self, folder: RunFolder, note: Progress) -> None:
        run = folder.run_id
        note("header", self.put_header(run, folder.header))
        note("brief", self.put_brief(run, folder.brief))
        if folder.play_spec is not None:
            note("play-spec", self.put_play_spec(run, folder.play_spec))

    def _submit_rolls(
        self, folder: RunFolder, note: Progress, held: set[str] | None
    ) -> tuple[RollAnswer, ...]:
        """`held`: the rolls a JUDGING (or new) run holds, whose frames are stored; None for a
        run that takes no new roll, whose rolls only get their stored answers."""
        answers: list[RollAnswer] = []
        for roll in folder.rolls:
            if roll.number == 2 and (not answers or answers[-1].next != "roll-2"):
                break
            if held is not None and roll.roll_id not in held:
                for h in roll.frames:
                    note("blob", self.put_blob(h, folder.blobs[h]))
            answer = self._submit_roll(folder, roll, note)
            note("roll", answer)
            answers.append(answer)
        return tuple(answers)

    def _submit_roll(self, folder: RunFolder, roll: Roll, note: Progress) -> RollAnswer:
        """POSTs a roll; if seal names frames it does not hold, uploads those and POSTs again."""
        try:
            return self.post_roll(folder.run_id, roll.number, roll.body)
        except SealInvalidDocument as e:
            if e.code != "missing_blobs":
                raise
            named = set(_HEX64.findall(e.message)) & set(roll.frames)
            # A message this client cannot read: send every frame of the roll.
            for h in [h for h in roll.frames if h in named] or list(roll.frames):
                note("blob", self.put_blob(h, folder.blobs[h]))
        return self.post_roll(folder.run_id, roll.number, roll.body)

    # ---- one request each ---------------------------------------------------------------

    def _run_path(self, run_id: str, tail: str = "") -> str:
        return f"/v1/runs/{urllib.parse.quote(run_id, safe='')}{tail}"

    def _stored(self, path: str, body: bytes, content_type: str, what: str) -> Stored:
        r = self._http.request("PUT", path, what=what, body=body, content_type=content_type)
        return parse(Stored, r.json(what), what, created=r.status == 201)

    def put_header(self, run_id: str, header: bytes) -> Stored:
        """`PUT /v1/runs/{id}`: the playtest/3 header (201 created, 200 same bytes)."""
        what = f"run {run_id} header"
        return self._stored(self._run_path(run_id), header, "application/json", what)

    def put_brief(self, run_id: str, brief: bytes) -> Stored:
        """`PUT /v1/runs/{id}/brief`: the brief (its sha256 must be the header's briefHash)."""
        what = f"run {run_id} brief"
        path = self._run_path(run_id, "/brief")
        return self._stored(path, brief, "text/markdown; charset=utf-8", what)

    def put_play_spec(self, run_id: str, play_spec: bytes) -> Stored:
        """`PUT /v1/runs/{id}/play-spec`: the PlaySpec (fresh for the header's artifactHash)."""
        what = f"run {run_id} play-spec"
        path = self._run_path(run_id, "/play-spec")
        return self._stored(path, play_spec, "application/json", what)

    def put_blob(self, sha256: str, source: bytes | str | Path) -> BlobStored:
        """`PUT /v1/blobs/sha256/{hex}`: frame bytes, streamed from a file when given a path."""
        what = f"blob {sha256}"
        body: Body
        if isinstance(source, bytes):
            body = source
        else:
            p = Path(source)
            body = (lambda: p.open("rb"), p.stat().st_size)
        r = self._http.request(
            "PUT",
            f"/v1/blobs/sha256/{sha256}",
            what=what,
            body=body,
            content_type="application/octet-stream",
        )
        return parse(BlobStored, r.json(what), what, created=r.status == 201)

    def post_roll(self, run_id: str, n: int, proof_package: bytes) -> RollAnswer:
        """`POST /v1/runs/{id}/rolls/{n}`: judge a roll (a judged one: its stored answer)."""
        what = f"run {run_id} roll-{n}"
        r = self._http.request(
            "POST",
            self._run_path(run_id, f"/rolls/{n}"),
            what=what,
            body=proof_package,
            content_type="application/json",
        )
        return parse(RollAnswer, r.json(what), what)

    def finalize(self, run_id: str) -> FinalizeAnswer:
        """`POST /v1/runs/{id}/finalize`: decide and seal (the same answer for every caller)."""
        what = f"run {run_id} finalize"
        r = self._http.request("POST", self._run_path(run_id, "/finalize"), what=what)
        return parse(FinalizeAnswer, r.json(what), what)

    def get_run(self, run_id: str) -> RunState:
        """`GET /v1/runs/{id}`: phase, rolls and next step."""
        what = f"run {run_id}"
        r = self._http.request("GET", self._run_path(run_id), what=what)
        return parse(RunState, r.json(what), what)

    def verify(self, run_id: str) -> VerifyReport:
        """`GET /v1/runs/{id}/verify`: the `seal verify` report of the run."""
        what = f"run {run_id} verify"
        r = self._http.request("GET", self._run_path(run_id, "/verify"), what=what)
        return parse(VerifyReport, r.json(what), what)

    @overload
    def explain(self, run_id: str, html: Literal[False] = ...) -> dict[str, Any]: ...

    @overload
    def explain(self, run_id: str, html: Literal[True]) -> str: ...

    def explain(self, run_id: str, html: bool = False) -> dict[str, Any] | str:
        """`GET /v1/runs/{id}/explain`: the decision tree (`seal.decision-tree/1`), or the
        self-contained page when `html` is true."""
        what = f"run {run_id} explain"
        accept = "text/html" if html else "application/json"
        r = self._http.request("GET", self._run_path(run_id, "/explain"), what=what, accept=accept)
        if html:
            return r.body.decode("utf-8", "replace")
        tree = r.json(what)
        if not isinstance(tree, dict):
            raise SealProtocolError("protocol", f"{what}: the decision tree is not an object")
        return tree

    def log_proof(self, run_id: str) -> InclusionProof:
        """`GET /v1/runs/{id}/log-proof`: the run's seal in the transparency log."""
        what = f"run {run_id} log-proof"
        r = self._http.request("GET", self._run_path(run_id, "/log-proof"), what=what)
        return parse(InclusionProof, r.json(what), what)

    def review_queue(self) -> list[dict[str, Any]]:
        """`GET /v1/review-queue`: the adjudication queue, decided `inconclusive` runs without a
        trusted review, oldest first, each `{runId, decidedAt, explain}` (`explain` is the path of
        the run's explain route)."""
        what = "review-queue"
        body = self._http.request("GET", "/v1/review-queue", what=what).json(what)
        runs = body.get("runs") if isinstance(body, dict) else None
        if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
            raise SealProtocolError("protocol", f"{what}: not {{count, runs: [...]}}")
        return runs

    def healthz(self) -> dict[str, Any]:
        """`GET /healthz`: `{status, store}`."""
        r = self._http.request("GET", "/healthz", what="healthz")
        body = r.json("healthz")
        return body if isinstance(body, dict) else {}
