"""`seal-submit` against a live daemon: one JSON line per folder, exit 0 all sealed, 1 some
refused, 2 some could not run."""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import FIXTURE_INPUTS, SealDaemon

import seal_client


def seal_submit(*args: str) -> tuple[int, list[dict[str, Any]]]:
    # The module the tests import (installed, or src/ of the checkout), run as the entry point.
    env = {**os.environ, "PYTHONPATH": str(Path(seal_client.__file__).parents[1])}
    env.pop("SEAL_API_TOKEN", None)
    r = subprocess.run(
        [sys.executable, "-m", "seal_client.cli", *args], capture_output=True, env=env, timeout=120
    )
    return r.returncode, [json.loads(line) for line in r.stdout.decode().splitlines()]


def test_seal_submit_exits_0_with_a_sealed_line_per_run(daemon: SealDaemon) -> None:
    dirs = [
        str(FIXTURE_INPUTS / n) for n in ("run-narrative-0010-pass", "run-puzzle-0013-fail-end")
    ]
    code, lines = seal_submit("--url", daemon.url, *dirs)
    assert code == 0
    assert [(x["runDir"], x["status"], x["outcome"]) for x in lines] == [
        (dirs[0], "sealed", "pass"),
        (dirs[1], "sealed", "fail"),
    ]
    assert all(len(x["sealSha256"]) == 64 and x["rolls"][0]["rollId"] == "roll-1" for x in lines)


def test_seal_submit_exits_1_when_a_folder_is_refused_and_submits_the_others(
    daemon: SealDaemon,
) -> None:
    dirs = [str(FIXTURE_INPUTS / n) for n in ("legacy-accept", "run-trpg-0021-pass")]
    code, lines = seal_submit("--url", daemon.url, *dirs)
    assert code == 1
    assert [x["status"] for x in lines] == ["refused", "sealed"]
    assert (lines[0]["error"]["code"], lines[0]["error"]["status"]) == ("provenance", 422)


def test_seal_submit_exits_2_when_a_run_could_not_be_judged_even_if_another_was_refused(
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    dirs = [str(tmp_path / "no-such-run"), str(FIXTURE_INPUTS / "run-trpg-0021-pass")]
    code, lines = seal_submit("--url", url, "--attempts", "1", *dirs)
    assert code == 2
    assert [(x["status"], x["error"]["code"]) for x in lines] == [
        ("refused", "bad_folder"),
        ("failed", "connection"),
    ]


def test_the_installed_package_declares_the_seal_submit_entry_point() -> None:
    eps = importlib.metadata.entry_points(group="console_scripts", name="seal-submit")
    if not eps:
        if os.environ.get("SEAL_REQUIRE_PYTHON") == "1":
            pytest.fail("SEAL_REQUIRE_PYTHON=1 but seal-client is not installed")
        pytest.skip("seal-client is not installed (pip install ./clients/python)")
    assert [ep.value for ep in eps] == ["seal_client.cli:main"]
