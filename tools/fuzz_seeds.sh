#!/usr/bin/env bash
# Seeds each fuzz target's corpus (fuzz/seeds/<target>, not committed) from the fixtures and
# tests/data: documents, judge answers, envelopes, keys.
set -euo pipefail
cd "$(dirname "$0")/.."
S=fuzz/seeds
rm -rf "$S"; mkdir -p "$S"
docs() { find sealed-fixtures/inputs tests/data/valid tests/data/invalid -name '*.json' -size -256k; }
for t in json_strict canonical_roundtrip validate_document package_limits; do
  mkdir -p "$S/$t"; docs | while read -r f; do cp "$f" "$S/$t/$(sha256sum "$f" | cut -c1-16)"; done
  find crates/seal-core/tests/data/jcs -type f -size -256k 2>/dev/null | while read -r f; do cp "$f" "$S/$t/jcs-$(sha256sum "$f" | cut -c1-16)"; done
done
mkdir -p "$S/judge_answer" "$S/dsse_envelope" "$S/store_key" "$S/run_folder"
find sealed-fixtures/store -path '*attempt-*/raw.json' -size -256k | head -200 | while read -r f; do cp "$f" "$S/judge_answer/$(sha256sum "$f" | cut -c1-16)"; done
find sealed-fixtures/store -name 'seal.dsse.json' | while read -r f; do cp "$f" "$S/dsse_envelope/$(sha256sum "$f" | cut -c1-16)"; done
find sealed-fixtures/store -type f | sed 's|^sealed-fixtures/store/||' | head -300 | while read -r k; do printf '%s' "$k" > "$S/store_key/$(printf '%s' "$k" | sha256sum | cut -c1-16)"; done
