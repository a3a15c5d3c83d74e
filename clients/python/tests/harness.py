"""Live test harness: a real `seal serve` process on loopback, judged by the repository's
loopback OpenAI-compatible judge (`crates/seal-testkit`, binary `loopback-judge`) behind a
small Python proxy that the tests steer.

The Rust judge answers by itself from the judge package in each request (its default persona:
deterministic verdicts with citations that exist), so the client and `seal judge` see the same
judges. The proxy in front of it adds what the tests need and the binary does not offer: it
counts the chat-completion calls per model (how the tests prove that no judge was paid twice),
can hold calls until released (a judge call in flight when the daemon is killed), can answer
for a model itself as a lenient (`satisfied` to everything) or hostile (`failed`) judge, so
that rolls disagree and roll 2 is asked for, and can answer scripted HTTP failures.

Binaries: `SEAL_BIN` (default `target/debug/seal` of the repository) and
`SEAL_LOOPBACK_JUDGE_BIN` (default `loopback-judge` beside it), from
`cargo build -p seal --bin seal -p seal-testkit --bin loopback-judge`. Without them the live tests
skip, saying so; with `SEAL_REQUIRE_PYTHON=1` (CI) they fail instead.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURE_INPUTS = REPO / "sealed-fixtures" / "inputs"
MODEL_A = "loop-judge-a"
MODEL_B = "loop-judge-b"
# At least 32 bytes: the daemon refuses a shorter seed salt.
SEED_SALT = "pytest-seed-salt-0123456789abcdef-0123456789abcdef"
# A stable replica id: a restarted daemon takes over its own attempt leases at once.
REPLICA_ID = "pytest-replica"


def missing(what: str) -> None:
    """Skips the test (fails it under SEAL_REQUIRE_PYTHON=1, as in CI) for lack of `what`."""
    message = (
        f"{what}; build with `cargo build -p seal --bin seal -p seal-testkit --bin loopback-judge`"
    )
    if os.environ.get("SEAL_REQUIRE_PYTHON") == "1":
        pytest.fail(f"SEAL_REQUIRE_PYTHON=1 but {message}")
    pytest.skip(f"{message} (CI sets SEAL_REQUIRE_PYTHON=1 to make this a failure)")


def binary(env_var: str, default: Path) -> Path:
    given = os.environ.get(env_var)
    path = Path(given) if given else default
    if not path.is_absolute():
        path = REPO / path
    if not path.is_file() or not os.access(path, os.X_OK):
        missing(f"no executable {path} ({env_var})")
    return path


def seal_bin() -> Path:
    return binary("SEAL_BIN", REPO / "target" / "debug" / "seal")


def judge_bin() -> Path:
    return binary("SEAL_LOOPBACK_JUDGE_BIN", seal_bin().parent / "loopback-judge")


def wait_for_line(path: Path, prefix: str, proc: subprocess.Popen[bytes], what: str) -> str:
    """The rest of the first line of `path` starting with `prefix`, written by `proc`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {path.read_text()[-2000:]}")
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not start within 60 s")


class RustJudge:
    """The `loopback-judge` binary on an ephemeral loopback port."""

    def __init__(self, workdir: Path, unique_ids: bool = False) -> None:
        self.out = workdir / "loopback-judge.out"
        env = dict(os.environ)
        if unique_ids:
            # Each answer an id of its own, as real endpoints give: no two runs store the
            # same raw answer.
            env["SEAL_LOOPBACK_UNIQUE_IDS"] = "1"
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(judge_bin()), "127.0.0.1:0"], stdout=out, stderr=subprocess.STDOUT, env=env
            )
        url = wait_for_line(self.out, "loopback judge on ", self.proc, "loopback-judge")
        self.hostport = url.removeprefix("http://").split("/", 1)[0]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def package_of(request: dict[str, Any]) -> dict[str, Any] | None:
    """The judge package between the request's markers (as loopback.rs reads it)."""
    content = request.get("messages", [{}, {}])[1].get("content")
    for part in content if isinstance(content, list) else []:
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str) or " BEGIN>>>\n" not in text:
            continue
        rest = text.split(" BEGIN>>>\n", 1)[1]
        end = rest.rfind("\n<<<SEAL UNTRUSTED JUDGE PACKAGE")
        return json.loads(rest[:end]) if end >= 0 else None
    return None


def own_answer(request: dict[str, Any], persona: str, body_len: int) -> bytes:
    """A chat completion judging every obligation `satisfied` (persona "pass", citing the
    first event) or `failed` (persona "fail", citing the last), with the last frame."""
    model = str(request.get("model", ""))
    pkg = package_of(request) or {}
    events = pkg.get("events") or [{"seq": 0}]
    frames = pkg.get("frames") or []
    seq = events[0]["seq"] if persona == "pass" else events[-1]["seq"]
    verdict, why = ("satisfied", "looks fine") if persona == "pass" else ("failed", "judged failed")
    obligations = [
        {
            "id": ob["id"],
            "verdict": verdict,
            "sequenceRefs": [{"stream": "events", "from": seq, "to": seq}],
            "frameHashes": [frames[-1]["hash"]] if frames else [],
            "rationale": f"{model}: {why}",
        }
        for ob in pkg.get("obligations", [])
    ]
    text = json.dumps({"obligations": obligations})
    usage = {"prompt_tokens": body_len // 4, "completion_tokens": len(text) // 4 + 1}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return json.dumps(
        {
            "id": "chatcmpl-pytest",
            "object": "chat.completion",
            "created": 1764374400,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
    ).encode()


class JudgeProxy:
    """The steerable judge the daemon is pointed at (module doc)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.calls: dict[str, int] = {}
        self.personas: dict[str, str] = {}
        self.scripts: dict[str, list[tuple[int, bytes]]] = {}
        self.gate = threading.Event()
        self.gate.set()
        self.cond = threading.Condition()
        self.waiting = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def total_calls(self) -> int:
        with self.cond:
            return sum(self.calls.values())

    def hold(self) -> None:
        """Calls from now on wait until `release` (or 60 s)."""
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def wait_held(self, n: int, timeout: float = 30.0) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.waiting >= n, timeout):
                raise AssertionError(f"{self.waiting} judge calls held, expected {n}")

    def stop(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()

    def _arrive(self, model: str) -> tuple[str, tuple[int, bytes] | None]:
        with self.cond:
            self.calls[model] = self.calls.get(model, 0) + 1
            self.waiting += 1
            self.cond.notify_all()
            script = self.scripts.get(model)
            return self.personas.get(model, "forward"), (script.pop(0) if script else None)

    def _forward(
        self, method: str, path: str, body: bytes, headers: Any
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.upstream, timeout=60)
        try:
            keep = {
                k: v
                for k, v in headers.items()
                if k.lower() in ("authorization", "content-type", "x-session-id")
            }
            conn.request(method, path, body=body if method == "POST" else None, headers=keep)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def _send(self, status: int, body: bytes, retry_after: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, b'{"ok":true}')

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    request = json.loads(body)
                except ValueError:
                    request = {}
                if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
                    # A health probe (no messages): refused before any model runs, as OpenAI
                    # does, and not counted as a judge call.
                    self._send(400, b'{"error":{"message":"\'messages\' is a required property"}}')
                    return
                persona, script = proxy._arrive(str(request.get("model", "")))
                try:
                    proxy.gate.wait(60)
                finally:
                    with proxy.cond:
                        proxy.waiting -= 1
                try:
                    if script is not None:
                        self._send(script[0], script[1])
                    elif persona in ("pass", "fail"):
                        self._send(200, own_answer(request, persona, len(body)))
                    else:
                        status, headers, answer = proxy._forward(
                            "POST", self.path, body, self.headers
                        )
                        self._send(status, answer, headers.get("retry-after"))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the daemon that asked was killed meanwhile

        return Handler


def daemon_env(judge_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAL_")}
    env.update(
        {
            "SEAL_JUDGE_A_URL": judge_url,
            "SEAL_JUDGE_B_URL": judge_url,
            "SEAL_JUDGE_A_MODEL": MODEL_A,
            "SEAL_JUDGE_B_MODEL": MODEL_B,
            "SEAL_JUDGE_A_KEY": "sk-pytest-a",
            "SEAL_JUDGE_B_KEY": "sk-pytest-b",
            "SEAL_JUDGE_TIMEOUT_MS": "20000",
            # The tests script judge outages on purpose; the breaker would answer 503 instead.
            "SEAL_JUDGE_BREAKER_FAILURES": "0",
            "SEAL_SEED_SALT": SEED_SALT,
            "SEAL_REPLICA_ID": REPLICA_ID,
            "SEAL_LOG": "warn",
        }
    )
    return env


class SealDaemon:
    """`seal serve` on loopback with a file store (or `store_url`); killed and restarted at will."""

    def __init__(
        self,
        workdir: Path,
        keys: Path,
        judge_url: str,
        config: Path | None = None,
        store_url: str | None = None,
    ) -> None:
        self.workdir = workdir
        self.store = workdir / "store"
        self.store_url = store_url or f"file://{self.store}"
        self.key = keys / "seal.key.pem"
        self.env = daemon_env(judge_url)
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0

    def start(self, port: int = 0) -> str:
        self.starts += 1
        out = self.workdir / f"serve-{self.starts}.out"
        cmd = [str(seal_bin())]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        cmd += [
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--store",
            self.store_url,
            "--key",
            str(self.key),
            # A fresh folder per test; a restart finds it there (the flag then changes nothing).
            "--create-store",
        ]
        with out.open("wb") as sink, (self.workdir / f"serve-{self.starts}.err").open("wb") as err:
            self.proc = subprocess.Popen(
                cmd, stdout=sink, stderr=err, env=self.env, cwd=self.workdir
            )
        self.url = wait_for_line(out, "seal serve listening on ", self.proc, "seal serve")
        return self.url

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL: no shutdown, no grace
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_entries(self, run_id: str) -> int:
        """How many transparency-log entries the store holds for `run_id` (seals appended)."""
        entries = self.store / "log" / "entries"
        files = sorted(entries.iterdir()) if entries.is_dir() else []
        return sum(1 for f in files if json.loads(f.read_bytes()).get("runId") == run_id)


def keygen(out: Path) -> Path:
    subprocess.run([str(seal_bin()), "keygen", "--out", str(out)], check=True, capture_output=True)
    return out


def seal_judge(run_dir: Path, store: Path, keys: Path, judge_url: str, cwd: Path) -> dict[str, Any]:
    """`seal judge RUN_DIR --json` into `store`, with the daemon's judges."""
    r = subprocess.run(
        [
            str(seal_bin()),
            "judge",
            str(run_dir),
            "--store",
            f"file://{store}",
            "--key",
            str(keys / "seal.key.pem"),
            "--json",
        ],
        env=daemon_env(judge_url),
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )
    if r.returncode != 0:
        raise AssertionError(
            f"seal judge {run_dir.name} exited {r.returncode}: {r.stderr.decode()[-2000:]}"
        )
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def copy_input(name: str, to: Path) -> Path:
    dest = to / name
    shutil.copytree(FIXTURE_INPUTS / name, dest)
    return dest


def native_inputs() -> list[str]:
    """The fixture inputs the API takes: every one but the `legacy-adapted` folder, whose
    provenance only `seal adapt` + `seal judge` may claim."""
    names = sorted(p.name for p in FIXTURE_INPUTS.iterdir() if p.is_dir())
    native = [
        n
        for n in names
        if json.loads((FIXTURE_INPUTS / n / "header.json").read_bytes()).get("evidenceMode")
        == "native"
    ]
    assert len(native) >= 8, (
        f"expected the sealed-fixture inputs in {FIXTURE_INPUTS}, found {names}"
    )
    return native
