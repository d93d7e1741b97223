#!/usr/bin/env bash
# Run every benchmark; each prints one JSON document, saved under bench/results/.
# Usage: bash bench/run_all.sh [--quick | --smoke]
#   --quick: smaller sizes, no experiments (~15 min on 2 busy cores)
#   --smoke: toy sizes, for CI: checks that every benchmark runs, not its targets (~3 min)
# A benchmark that fails stops the run with its exit code; a target not met does not (read
# all_targets_met in the JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-bench/results}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$OUT"
case "${1:-}" in
  --smoke)
    $PY bench/bench_l0.py --sizes 100 --queries 20 > "$OUT/l0.json"
    $PY bench/bench_l1.py --sizes 200 --queries 4 --seed-queries 2 > "$OUT/l1.json"
    $PY bench/bench_lookup.py --smoke > "$OUT/lookup.json"
    $PY bench/bench_ingest.py --smoke --variants seed,current,current_minilm > "$OUT/ingest.json"
    $PY bench/bench_http.py --smoke > "$OUT/http.json"
    $PY bench/bench_memory.py --smoke > "$OUT/memory.json"
    $PY bench/bench_sessions.py --smoke > "$OUT/sessions.json"
    $PY bench/bench_overload.py --smoke > "$OUT/overload.json"
    $PY bench/bench_checkpoints.py --smoke > "$OUT/checkpoints.json"
    $PY bench/bench_cost.py --smoke > "$OUT/cost.json"
    $PY bench/bench_start.py --smoke > "$OUT/start.json"
    ;;
  --quick)
    $PY bench/bench_l0.py --sizes 100,1000 --queries 200 > "$OUT/l0.json"
    $PY bench/bench_l1.py --sizes 1000 --queries 20 --seed-queries 8 > "$OUT/l1.json"
    $PY bench/bench_lookup.py --rounds 2 > "$OUT/lookup.json"
    $PY bench/bench_ingest.py --docs 50 --repeat 1 --no-eval-corpus \
      --variants seed,current,current_minilm > "$OUT/ingest.json"
    $PY bench/bench_http.py --requests 200 > "$OUT/http.json"
    $PY bench/bench_memory.py --line-mb 1 --depth 3000 --chinese-mb 0.5 > "$OUT/memory.json"
    $PY bench/bench_sessions.py --sessions 20 > "$OUT/sessions.json"
    $PY bench/bench_overload.py --duration 10 > "$OUT/overload.json"
    $PY bench/bench_checkpoints.py --turns 120 > "$OUT/checkpoints.json"
    $PY bench/bench_cost.py --synthetic 300 > "$OUT/cost.json"
    $PY bench/bench_start.py --rounds 1 > "$OUT/start.json"
    ;;
  "")
    $PY bench/bench_l0.py > "$OUT/l0.json"
    $PY bench/bench_l1.py --experiments > "$OUT/l1.json"
    $PY bench/bench_lookup.py > "$OUT/lookup.json"
    $PY bench/bench_ingest.py --experiments > "$OUT/ingest.json"
    $PY bench/bench_http.py > "$OUT/http.json"
    $PY bench/bench_memory.py > "$OUT/memory.json"
    $PY bench/bench_sessions.py > "$OUT/sessions.json"
    $PY bench/bench_overload.py > "$OUT/overload.json"
    $PY bench/bench_checkpoints.py > "$OUT/checkpoints.json"
    $PY bench/bench_cost.py > "$OUT/cost.json"
    $PY bench/bench_start.py > "$OUT/start.json"
    ;;
  *)
    echo "usage: bash bench/run_all.sh [--quick | --smoke]" >&2
    exit 2
    ;;
esac
for f in l0 l1 lookup ingest http memory overload checkpoints cost start; do
  printf '%-8s all_targets_met=%s\n' "$f" "$($PY -c "import json,sys; print(json.load(open(sys.argv[1])).get('all_targets_met'))" "$OUT/$f.json")"
done
