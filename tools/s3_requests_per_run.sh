#!/usr/bin/env bash
# S3 requests per run (docs/BENCHMARKS.md, "S3 requests per run"): a counting moto server
# (tools/s3_server.py with SEAL_S3_REQUEST_LOG), the loopback judge, one `seal serve` on S3, and
# N copies of an example run submitted through the Python client's `seal-submit`; prints the
# requests per run by method and by object kind. Each copy gets frames of its own and each
# judge answer an id of its own, as real runs and endpoints do (`SAME=1`: the copies share
# their frames and the judges' answers, as before stop 39, which hides one frame upload per
# frame and adds a create that finds the same answer stored).
#   tools/s3_requests_per_run.sh [N=10] [EXAMPLE=run-narrative-0010-pass]
#   STORE_OPTS=listing=off tools/s3_requests_per_run.sh 5   # S3 store URL options
#   AT_ONCE=10 tools/s3_requests_per_run.sh 20               # 10 workers side by side
#   PRIME=20 tools/s3_requests_per_run.sh 5                  # on a log with history, after a restart
#   VERIFY=1 tools/s3_requests_per_run.sh 20                 # then `seal verify --all`'s requests
# Needs: cargo build (debug `seal` and `loopback-judge`), pip install moto[server] ./clients/python.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10}
EXAMPLE=${2:-run-narrative-0010-pass}
T=${CARGO_TARGET_DIR:-target}/debug
work=$(mktemp -d)
pids=()
subs=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; [ -n "${KEEP:-}" ] && cp "$work/requests.tsv" "$KEEP"; rm -rf "$work"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

S3_PORT=$(port)
SEAL_S3_REQUEST_LOG="$work/requests.tsv" python3 tools/s3_server.py 127.0.0.1 "$S3_PORT" >"$work/s3.log" 2>&1 &
pids+=($!)
JUDGE_PORT=$(port)
unique=1; [ -n "${SAME:-}" ] && unique=0
SEAL_LOOPBACK_UNIQUE_IDS=$unique "$T/loopback-judge" "127.0.0.1:$JUDGE_PORT" >"$work/judge.log" 2>&1 &
pids+=($!)
python3 - "$S3_PORT" <<'PY'
import sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(150):
    try:
        urllib.request.urlopen(base + "/", timeout=1); break
    except Exception:
        time.sleep(0.2)
urllib.request.urlopen(urllib.request.Request(base + "/bench", method="PUT"), timeout=5)
PY
: >"$work/requests.tsv"   # the bucket's creation is not a run's

export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1
export SEAL_JUDGE_A_URL="http://127.0.0.1:$JUDGE_PORT/v1" SEAL_JUDGE_B_URL="http://127.0.0.1:$JUDGE_PORT/v1"
export SEAL_JUDGE_A_MODEL=loop-judge-a SEAL_JUDGE_B_MODEL=loop-judge-b
export SEAL_JUDGE_A_KEY=sk-bench-a SEAL_JUDGE_B_KEY=sk-bench-b
(cd "$work" && "$OLDPWD/$T/seal" keygen --out keys >/dev/null)
store="s3://bench/runs-$RANDOM?endpoint=http://127.0.0.1:$S3_PORT${STORE_OPTS:+&$STORE_OPTS}"
# Starts `seal serve` on the bucket and waits until its start-up is over: the log admission and
# the seal scan behind it run after the port is bound, and are no run's requests.
start_serve() {
  : >"$work/serve.out"
  (cd "$work" && exec "$OLDPWD/$T/seal" serve --listen 127.0.0.1:0 --store "$store" --key keys/seal.key.pem) \
    >"$work/serve.out" 2>>"$work/serve.log" &
  serve_pid=$!
  pids+=($serve_pid)
  for _ in $(seq 100); do grep -q 'http://' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
  url=$(grep -m1 -o 'http://[^ ]*' "$work/serve.out")
  local seen=$(grep -c 'log seal scan' "$work/serve.log" 2>/dev/null || true)
  for _ in $(seq 300); do
    [ "$(grep -c 'log seal scan' "$work/serve.log" 2>/dev/null || true)" -gt "$seen" ] && break
    sleep 0.1
  done
}
# Input folder `$work/in/$1`: a copy of the example as run `run-s3req-$1-…` (tools/unique_run.py).
prepare() {
  mkdir -p "$work/in"
  python3 tools/unique_run.py "sealed-fixtures/inputs/$EXAMPLE" "$work/in/$1" "run-s3req-$1-$RANDOM" \
    ${SAME:+--same-frames}
}
# AT_ONCE=k: k `seal-submit` workers side by side (runs in flight share checkpoints and tiles),
# over the input folders named `$1` to `$2` (prefix `$3`), into `$work/submit.jsonl`.
submit() {
  local at_once=${AT_ONCE:-1} w i
  subs=()
  for w in $(seq 0 $((at_once - 1))); do
    local mine=()
    for i in $(seq "$1" "$2"); do [ $(( (i - 1) % at_once )) -eq "$w" ] && mine+=("$work/in/$3$i"); done
    seal-submit --url "$url" "${mine[@]}" >"$work/submit-$w.jsonl" &
    subs+=($!)
  done
  for p in "${subs[@]}"; do wait "$p"; done
  cat "$work"/submit-*.jsonl >"$work/submit.jsonl"
}

start_serve
# PRIME=k: k runs sealed first, then the daemon restarted, so that the N runs counted meet a
# log with history (a process started from a checkpoint), as a long-lived deployment does.
if [ -n "${PRIME:-}" ]; then
  for i in $(seq "$PRIME"); do prepare "p$i"; done
  submit 1 "$PRIME" p
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
  start_serve
fi
for i in $(seq "$N"); do prepare "r$i"; done
: >"$work/requests.tsv"
submit 1 "$N" r
sealed=$(grep -c '"evidenceSha256"' "$work/submit.jsonl" || true)
# Requests per run of what ran since the log was emptied: $1 what, $2 runs, $3 sealed.
report() {
python3 - "$work/requests.tsv" "$2" "$3" "$1" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
n, sealed = int(sys.argv[2]), int(sys.argv[3])
by_method = collections.Counter(r[0] for r in rows)
def kind(key):
    parts = key.split("/")
    if len(parts) > 1 and parts[1] in ("cas", "receipts", "leases", "log", "tmp"):
        return parts[1]
    return parts[-1] if parts[-1] else "(bucket)"
by_kind = collections.Counter((r[0], kind(r[1]) if r[0] != "GET" or "list-type" not in r[2] else "LIST") for r in rows)
print(f"{sys.argv[4]}: {n} runs, {sealed} sealed; {len(rows)} S3 requests: {len(rows)/n:.1f} per run")
for m, c in by_method.most_common():
    print(f"  {m:7} {c/n:6.1f} per run")
print("by method and object (per run):")
for (m, k), c in by_kind.most_common(40):
    print(f"  {m:7} {k:28} {c/n:6.2f}")
PY
}
report "submitted" "$N" "$sealed"
# VERIFY=1: an auditor's `seal verify --all` over the bucket (every run, from a fresh process,
# with the seal key's public half only).
if [ -n "${VERIFY:-}" ]; then
  total=$(( N + ${PRIME:-0} ))
  : >"$work/requests.tsv"
  (cd "$work" && "$OLDPWD/$T/seal" verify --all --store "$store" --trust keys/seal.pub.pem --jobs 2) \
    >"$work/verify.out" 2>"$work/verify.err" || { cat "$work/verify.err"; exit 1; }
  report "seal verify --all" "$total" "$(grep -c '^verified' "$work/verify.out" || true)"
fi
