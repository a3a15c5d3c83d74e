"""S3 requests per run (issue 25, part 4), counted from the S3 server's own request log.

A real `seal serve` on an S3 store (moto, through tools/s3_server.py, which logs one line per
request), real loopback judges giving each answer an id of its own, and runs with frames of
their own (tools/unique_run.py) submitted by this client as a pipeline worker does. The count is
deterministic (no timing in it), so the budget is a test: a change that adds a request to every
run fails here, naming the objects each run cost. docs/BENCHMARKS.md ("S3 requests per run")
has the breakdown and `tools/s3_requests_per_run.sh`, which prints it.
"""

from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import FIXTURE_INPUTS, REPO, RustJudge, SealDaemon, missing

from seal_client import SealClient

sys.path.insert(0, str(REPO / "tools"))
from unique_run import unique_run  # noqa: E402

# 103.0 a run today: each API request loads what it needs of the run once from the store, and
# finalize re-reads every object the run binds before it signs (docs/DECISIONS.md, "One read of
# each object in finalize"). With a cache of this process's own writes a run cost 50; that cache
# trusted memory over the store and is gone.
BUDGET_PER_RUN = 105.0
RUNS = 3
EXAMPLE = "run-narrative-0010-pass"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CountingS3:
    """tools/s3_server.py on a free port, logging every request to `log`, with one bucket."""

    def __init__(self, workdir: Path) -> None:
        try:
            import moto  # noqa: F401
        except ImportError:
            missing("no moto (pip install 'moto[server]')")
        self.log = workdir / "s3-requests.tsv"
        self.port = free_port()
        env = dict(os.environ, SEAL_S3_REQUEST_LOG=str(self.log))
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "tools" / "s3_server.py"), "127.0.0.1", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=(workdir / "s3.log").open("wb"),
            env=env,
        )
        base = f"http://127.0.0.1:{self.port}"
        for _ in range(150):
            try:
                urllib.request.urlopen(base + "/", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        urllib.request.urlopen(urllib.request.Request(base + "/counted", method="PUT"), timeout=5)
        self.endpoint = base

    def requests(self) -> list[list[str]]:
        return [line.split("\t") for line in self.log.read_text().splitlines() if line]

    def reset(self) -> None:
        self.log.write_text("")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[CountingS3]:
    server = CountingS3(tmp_path)
    yield server
    server.stop()


def wait_for_text(path: Path, text: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared in {path}")


def kind(method: str, key: str, query: str) -> str:
    """What a request was for: the object's name, or its kind for the shared folders."""
    if method == "GET" and "list-type" in query:
        return "LIST"
    parts = key.split("/")
    if len(parts) > 1 and parts[1] in ("cas", "receipts", "leases", "log"):
        return parts[1]
    return parts[-1]


def test_a_run_costs_at_most_50_s3_requests(tmp_path: Path, keys: Path, s3: CountingS3) -> None:
    judge = RustJudge(tmp_path, unique_ids=True)
    store = f"s3://counted/runs?endpoint={s3.endpoint}"
    daemon = SealDaemon(tmp_path, keys, f"http://{judge.hostport}/v1", store_url=store)
    daemon.env.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "SEAL_LOG": "info",
        }
    )
    try:
        daemon.start()
        # The start-up (admission, then the seal scan behind it) is no run's.
        wait_for_text(tmp_path / "serve-1.err", "log seal scan")
        runs = [
            unique_run(FIXTURE_INPUTS / EXAMPLE, tmp_path / "in" / f"r{i}", f"run-s3count-{i}")
            for i in range(RUNS)
        ]
        s3.reset()
        client = SealClient(daemon.url)
        for folder in runs:
            result = client.submit_run(folder)
            assert result.seal_sha256, result
        requests = s3.requests()
    finally:
        daemon.stop()
        judge.stop()
    per_run = len(requests) / RUNS
    costs = collections.Counter(kind(r[0], r[1], r[2]) for r in requests)
    breakdown = ", ".join(f"{k} {c / RUNS:.1f}" for k, c in costs.most_common())
    assert per_run <= BUDGET_PER_RUN, f"{per_run:.1f} S3 requests a run: {breakdown}"
    # One listing of the run's folder per API request that loads its state, none of an
    # attempt's folder that the walk has just created (docs/BENCHMARKS.md).
    assert costs["LIST"] / RUNS <= 7, breakdown
