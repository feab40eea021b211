#!/usr/bin/env bash
# Issue 49, item 3: the final test of the frozen recipe on questions the repository does not hold.
#
#   bash scripts/final_test.sh --musique FILE --2wiki FILE --hotpotqa FILE [--out-dir DIR]
#
# Each FILE is a question file in its dataset's format (MuSiQue's; HotpotQA's / 2Wiki's
# `_id, question, answer, context`); any of the three may be left out, and the pooled result is
# over the sets given. Each file is padded to its dataset's LongBench length from its own
# questions (--dataset long:NAME:FILE, as long:NAME pads the dev file). Then, per set:
# paper-faithful ChainRAG (recipes/chainrag/ansint.yaml, every request made anew), and the
# frozen recipe (recipes/variants/one_hop_choose_probabilities.yaml), whose requests that
# ChainRAG made too are replayed from the response cache (the same server gives the same answer
# to the same request; requests/q counts them all). Last, the claim written in docs/results.md
# ("Item 3: the frozen recipe"): the frozen recipe's `choose` answer against ChainRAG's CxtInt,
# pooled, and, for the record, against AnsInt and the better of the two per set.
#
# The recipe was frozen at commit FROZEN below: the script refuses to run from a tree whose
# chainrag/ or recipes/ differ from it (--not-frozen runs anyway and says so in its output).
# Every run is resumable: stop it at any time and run the same command again. Cost on 2 CPU
# cores with the local 1.5B model: about 4-5 min a question for ChainRAG and 1-2 min more for
# the frozen recipe.
set -euo pipefail
cd "$(dirname "$0")/.."
FROZEN=0fdbf3e
FROZEN_RECIPE=recipes/variants/one_hop_choose_probabilities.yaml
BASE_RECIPE=recipes/chainrag/ansint.yaml
BIN=${BIN:-.venv/bin}
OUT=runs/final-test
frozen=yes
declare -A files=()
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --musique | --2wiki | --hotpotqa)
      (($# >= 2)) || { echo "$1 needs a FILE" >&2; exit 2; }
      [[ -f $2 ]] || { echo "$1 $2: no such file" >&2; exit 2; }
      files[${1#--}]=$2
      shift 2 ;;
    --out-dir)
      (($# >= 2)) || { echo "--out-dir needs a DIR" >&2; exit 2; }
      OUT=$2
      shift 2 ;;
    --not-frozen) frozen=no; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
((${#files[@]})) || { echo "no question file given (see --help)" >&2; exit 2; }
if ! git diff --quiet "$FROZEN" -- chainrag recipes 2>/dev/null; then
  if [[ $frozen == yes ]]; then
    echo "chainrag/ or recipes/ differ from the frozen commit $FROZEN (git diff $FROZEN --stat" \
      "-- chainrag recipes); run from a checkout of it, or pass --not-frozen" >&2
    exit 2
  fi
  echo "NOT THE FROZEN RECIPE: chainrag/ or recipes/ differ from commit $FROZEN"
fi
over=()
for name in musique 2wiki hotpotqa; do
  [[ -n ${files[$name]:-} ]] || continue
  dataset="long:$name:${files[$name]}"
  $BIN/chainrag run $BASE_RECIPE --dataset "$dataset" --out-dir "$OUT" --cache-mode refresh \
    --no-report
  $BIN/chainrag run $FROZEN_RECIPE --dataset "$dataset" --out-dir "$OUT" --cache-mode use \
    --no-report
  stem=$(basename "${files[$name]}")
  over+=(--over "$OUT/long-$name-${stem%.*}")
done
for base in cxtint ansint best; do
  $BIN/chainrag compare ansint "$(basename $FROZEN_RECIPE .yaml)" "${over[@]}" --base-answer $base \
    --answer choose
done
for folder in "${over[@]}"; do
  [[ $folder == --over ]] || $BIN/chainrag report "$folder"
done
