#!/usr/bin/env python3
"""seal beside promptfoo on the same runs and the same simulated judges (issue 25's CPU target).

One loopback judge (`loopback-judge ADDR LATENCY_MS`, OpenAI chat-completions over real HTTP)
answers both tools. seal: `seal serve` on `file://` and on `memory://`, N copies of an example
run submitted by the Python client at C at once; seal's CPU is the daemon's user + system time
over the submissions (`/proc/PID/stat`), start-up excluded. promptfoo: `promptfoo eval` of N test
cases against two providers (judge A and judge B) sending the very request body seal stored for
that run's judge A (messages, response_format, seed, max_tokens), at C at once; its CPU is the
child's user + system time (`getrusage`). promptfoo does the plain two-provider job only: no
blinding, consensus, storage of evidence, signature or log.

    cargo build --release -p seal -p seal-testkit --bins
    pip install ./clients/python
    (mkdir -p /tmp/peer && cd /tmp/peer && npm install promptfoo@0.120.0)   # Node 20
    python3 benches/peer_promptfoo.py --promptfoo /tmp/peer [--runs 256] [--concurrency 64]

Prints one row per tool and the ratios of seal's CPU per run to promptfoo's
(docs/BENCHMARKS.md, "seal beside promptfoo").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "sealed-fixtures/inputs/run-narrative-0010-pass"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system time of a live process, from /proc/PID/stat (fields 14 and 15)."""
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_url(path: pathlib.Path, proc: subprocess.Popen, what: str) -> str:
    for _ in range(300):
        if path.exists():
            m = re.search(r"http://\S+", path.read_text())
            if m:
                return m.group(0)
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode} before printing its address")
        time.sleep(0.1)
    sys.exit(f"{what} printed no address in 30 s")


FLUSHES = ('seal_store_fsyncs_total{kind="syncfs"}', 'seal_store_fsyncs_total{kind="file"}',
           'seal_store_fsyncs_total{kind="folder"}')


def flushes_of(url: str) -> float:
    return sum(metric(url, name) for name in FLUSHES)


def metric(url: str, name: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.split(" ", 1)[0] == name:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def make_runs(into: pathlib.Path, n: int, tag: str) -> list[pathlib.Path]:
    runs = []
    for i in range(n):
        d = into / f"r{i:05}"
        shutil.copytree(EXAMPLE, d)
        header = json.loads((d / "header.json").read_text())
        header["runId"] = f"peer-{tag}-{i:05}"
        (d / "header.json").write_text(json.dumps(header))
        runs.append(d)
    return runs


def seal_row(args, judge_url: str, store: str, work: pathlib.Path) -> tuple[dict, pathlib.Path]:
    from seal_client import SealClient

    tag = re.sub(r"[^a-z]+", "-", store).strip("-")
    here = work / tag
    here.mkdir()
    subprocess.run([args.seal, "keygen", "--out", "keys"], cwd=here, check=True, capture_output=True)
    env = dict(
        os.environ,
        SEAL_JUDGE_A_URL=judge_url,
        SEAL_JUDGE_B_URL=judge_url,
        SEAL_JUDGE_A_MODEL="peer-a",
        SEAL_JUDGE_B_MODEL="peer-b",
        SEAL_JUDGE_A_KEY="sk-peer-a-0123456789",
        SEAL_JUDGE_B_KEY="sk-peer-b-0123456789",
        SEAL_SEED_SALT="peer-salt-0123456789abcdef0123456789abcdef",
        SEAL_LOG="warn",
    )
    out = here / "serve.out"
    with open(out, "w") as o, open(here / "serve.log", "w") as e:
        proc = subprocess.Popen(
            [args.seal, "serve", "--listen", "127.0.0.1:0", "--store", store, "--key", "keys/seal.key.pem", "--create-store"],
            cwd=here, env=env, stdout=o, stderr=e,
        )
    try:
        url = first_url(out, proc, "seal serve")
        runs = make_runs(here / "in", args.runs, tag)
        flushes0 = flushes_of(url)
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()

        def submit(d: pathlib.Path) -> str:
            with SealClient(url) as c:
                return c.submit_run(d).outcome

        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            outcomes = list(pool.map(submit, runs))
        wall, cpu = time.monotonic() - t0, cpu_seconds(proc.pid) - cpu0
        flushes = flushes_of(url) - flushes0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    passed = sum(1 for o in outcomes if o == "pass")
    if passed != args.runs:
        sys.exit(f"seal on {store}: {passed} of {args.runs} runs passed: {sorted(set(outcomes))}")
    return {
        "tool": f"seal serve ({store})",
        "runs": args.runs,
        "wall": wall,
        "cpu_ms": cpu * 1000 / args.runs,
        "flushes": flushes / args.runs if store.startswith("file") else None,
    }, here


def stored_request(seal_dir: pathlib.Path) -> dict:
    """Judge A's request body of the first run seal judged: what promptfoo sends too."""
    found = sorted((seal_dir / "store/runs").glob("*/roll-1/judge-a/attempt-1/request.json"))
    if not found:
        sys.exit("no stored judge request under the file store")
    return json.loads(found[0].read_text())


def promptfoo_row(args, judge_url: str, request: dict, work: pathlib.Path) -> dict:
    here = work / "promptfoo"
    here.mkdir()
    # promptfoo renders prompts with Nunjucks: the package's JSON must reach the judge verbatim.
    messages = json.dumps(request["messages"])
    prompt = "{% raw %}" + messages + "{% endraw %}"
    (here / "prompt.json").write_text(prompt)
    config = {
        "description": "two judges, the plain job",
        "prompts": ["file://prompt.json"],
        "providers": [
            {
                "id": f"openai:chat:{model}",
                "label": label,
                "config": {
                    "apiBaseUrl": judge_url,
                    "apiKey": f"sk-{label}-0123456789",
                    "temperature": request.get("temperature", 0),
                    "max_tokens": request.get("max_tokens", 4096),
                    "seed": request.get("seed"),
                    "response_format": request.get("response_format"),
                },
            }
            for model, label in (("peer-a", "judge-a"), ("peer-b", "judge-b"))
        ],
        "tests": [{"vars": {"run": i}, "assert": [{"type": "is-json"}]} for i in range(args.runs)],
    }
    (here / "promptfooconfig.json").write_text(json.dumps(config))
    bin_ = pathlib.Path(args.promptfoo) / "node_modules/.bin/promptfoo"
    # promptfoo 0.120.0's packaging bug: it looks for its migrations in `drizzle`, next to `dist`.
    drizzle = pathlib.Path(args.promptfoo) / "node_modules/promptfoo/drizzle"
    if not drizzle.exists():
        drizzle.symlink_to("dist/drizzle")
    env = dict(
        os.environ,
        PROMPTFOO_CONFIG_DIR=str(here / "home"),
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_DISABLE_SHARING="1",
        PROMPTFOO_SELF_HOSTED="1",
        NO_COLOR="1",
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(
        [str(bin_), "eval", "-c", "promptfooconfig.json", "--no-cache", "--max-concurrency",
         str(args.concurrency), "--no-table", "--no-progress-bar", "-o", "out.json"],
        cwd=here, env=env, capture_output=True, text=True,
    )
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not (here / "out.json").exists():
        sys.exit(f"promptfoo eval failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    results = json.loads((here / "out.json").read_text())["results"]
    stats = results.get("stats", {})
    calls = stats.get("successes", 0) + stats.get("failures", 0)
    if stats.get("successes", 0) != 2 * args.runs:
        sys.exit(f"promptfoo: {stats} (expected {2 * args.runs} successes)")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"tool": "promptfoo eval (2 providers)", "runs": args.runs, "wall": wall,
            "cpu_ms": cpu * 1000 / args.runs, "flushes": None, "calls": calls}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=256)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--latency-ms", type=int, default=200)
    p.add_argument("--promptfoo", required=True, help="folder with node_modules/.bin/promptfoo")
    p.add_argument("--target", default=str(ROOT / "target/release"))
    args = p.parse_args()
    args.seal = str(pathlib.Path(args.target) / "seal")
    judge_bin = str(pathlib.Path(args.target) / "loopback-judge")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        port = free_port()
        judge = subprocess.Popen([judge_bin, f"127.0.0.1:{port}", str(args.latency_ms)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            judge_url = judge.stdout.readline().strip().rsplit(" ", 1)[-1]
            rows = []
            file_row, file_dir = seal_row(args, judge_url, "file://./store", work)
            rows.append(file_row)
            rows.append(seal_row(args, judge_url, "file://./store?flush=per-object", work)[0])
            rows.append(seal_row(args, judge_url, "memory://", work)[0])
            rows.append(promptfoo_row(args, judge_url, stored_request(file_dir), work))
        finally:
            judge.terminate()
            judge.wait(timeout=10)
    peer = rows[-1]["cpu_ms"]
    print(f"{args.runs} runs, {args.concurrency} at once, judges answer after {args.latency_ms} ms")
    print(f"{'tool':44} {'wall s':>8} {'CPU ms/run':>11} {'/ promptfoo':>12} {'flushes/run':>12}")
    for r in rows:
        fl = f"{r['flushes']:.2f}" if r["flushes"] is not None else "-"
        print(f"{r['tool']:44} {r['wall']:8.2f} {r['cpu_ms']:11.2f} {r['cpu_ms'] / peer:12.2f} {fl:>12}")


if __name__ == "__main__":
    main()
