"""Fixtures of the live tests (harness.py): one loopback judge binary and one signing key per
session; per test a steerable judge proxy, a `seal serve` on a fresh file store, a client.

The package is tested as installed (`pip install ./clients/python`); from a checkout without
installing, its `src/` is put on the path instead.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    import seal_client  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from harness import JudgeProxy, RustJudge, SealDaemon, keygen  # noqa: E402
from scripted import Scripted  # noqa: E402

from seal_client import RetryPolicy, SealClient  # noqa: E402

# Quick retries: the daemon is on loopback and restarts in about a second.
FAST_RETRY = RetryPolicy(attempts=10, base_delay=0.2, max_delay=2.0)


@pytest.fixture(scope="session")
def rust_judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RustJudge]:
    judge = RustJudge(tmp_path_factory.mktemp("judge"))
    yield judge
    judge.stop()


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return keygen(tmp_path_factory.mktemp("keys") / "keys")


@pytest.fixture
def judge(rust_judge: RustJudge) -> Iterator[JudgeProxy]:
    proxy = JudgeProxy(rust_judge.hostport)
    yield proxy
    proxy.stop()


@pytest.fixture
def daemon(tmp_path: Path, keys: Path, judge: JudgeProxy) -> Iterator[SealDaemon]:
    d = SealDaemon(tmp_path, keys, judge.url)
    d.start()
    yield d
    d.stop()


@pytest.fixture
def client(daemon: SealDaemon) -> SealClient:
    return SealClient(daemon.url, retry=FAST_RETRY)


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[Scripted] = []

    def make(*script: Any) -> Scripted:
        servers.append(Scripted(list(script)))
        return servers[-1]

    yield make
    for s in servers:
        s.close()
