#!/usr/bin/env bash
# The full mutation sweep of the decision core (.cargo/mutants.toml lists its files), tested by
# seal-core's suite; results in target/mutants/mutants.out (outcomes.json, caught.txt,
# missed.txt, unviable.txt). docs/TESTING.md has the figures and how long it takes.
#   tools/mutants_sweep.sh [extra cargo-mutants args, e.g. -f crates/seal-core/src/merge.rs]
set -euo pipefail
cd "$(dirname "$0")/.."
# With arguments (e.g. -f FILE) the config's file list is left out, so that -f narrows the run.
config=()
[ "$#" -gt 0 ] && config=(--no-config)
PROPTEST_CASES=${PROPTEST_CASES:-64} exec cargo mutants "${config[@]}" --in-place --no-shuffle -p seal-core \
  --timeout 300 --output "${CARGO_TARGET_DIR:-target}/mutants" --colors never "$@"
