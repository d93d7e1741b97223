#!/usr/bin/env bash
# Run every benchmark; each prints one JSON document, saved under bench/results/.
# Usage: bash bench/run_all.sh [--quick]   (--quick: smaller sizes, no experiments)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-bench/results}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$OUT"
if [[ "${1:-}" == "--quick" ]]; then
  $PY bench/bench_l0.py --sizes 100,1000 --queries 200 > "$OUT/l0.json"
  $PY bench/bench_l1.py --sizes 1000 --queries 20 --seed-queries 8 > "$OUT/l1.json"
  $PY bench/bench_lookup.py --rounds 2 > "$OUT/lookup.json"
  $PY bench/bench_ingest.py --docs 50 > "$OUT/ingest.json"
else
  $PY bench/bench_l0.py > "$OUT/l0.json"
  $PY bench/bench_l1.py --experiments > "$OUT/l1.json"
  $PY bench/bench_lookup.py > "$OUT/lookup.json"
  $PY bench/bench_ingest.py --experiments > "$OUT/ingest.json"
fi
$PY bench/bench_http.py > "$OUT/http.json"
$PY bench/bench_sessions.py > "$OUT/sessions.json"
for f in l0 l1 lookup ingest; do
  printf '%-7s all_targets_met=%s\n' "$f" "$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['all_targets_met'])" "$OUT/$f.json")"
done
