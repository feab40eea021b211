#!/usr/bin/env bash
# The measured results of docs/results.md: every run is resumable, so this script can be
# stopped at any time and started again; it continues where each run stopped.
#   bash scripts/results.sh            # all of it (many hours on 2 CPU cores)
#   bash scripts/results.sh musique    # one dataset's main table only
# --cache-mode refresh: every LLM call is made anew (and its time and tokens counted), even
# where another method made the same request before.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
OUT=docs/runs
N=30
MAIN=(recipes/chainrag/ansint.yaml recipes/baselines/naive.yaml recipes/baselines/naive_qd.yaml
      recipes/baselines/iter_retgen.yaml)
ABLATIONS=(recipes/ablations/no_rewrite.yaml recipes/ablations/no_ec.yaml
           recipes/ablations/no_ss.yaml recipes/ablations/no_sa.yaml
           recipes/ablations/no_graph.yaml)
datasets=("${@:-musique 2wiki hotpotqa ablations}")
for what in ${datasets[@]}; do
  if [[ $what == ablations ]]; then
    $BIN/chainrag run "${ABLATIONS[@]}" --dataset musique --limit $N --out $OUT \
      --cache-mode refresh --no-report
  else
    $BIN/chainrag run "${MAIN[@]}" --dataset "$what" --limit $N --out $OUT \
      --cache-mode refresh --no-report
  fi
done
$BIN/chainrag report $OUT --out docs/results_tables.md --plots docs/plots
