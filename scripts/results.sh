#!/usr/bin/env bash
# The measured results of docs/results.md: every run is resumable, so this script can be
# stopped at any time and started again; it continues where each run stopped.
#   bash scripts/results.sh                 # all of it (many hours on 2 CPU cores)
#   bash scripts/results.sh musique         # one dataset's main table only
#   bash scripts/results.sh seeds-musique   # seed 002 and 004 methods on one dev set
#   bash scripts/results.sh seeds           # ... on the three dev sets
#   bash scripts/results.sh seed002-2wiki   # seed 002's four methods only (vanilla first)
#   bash scripts/results.sh ablations recurring
#   bash scripts/results.sh ablations@15    # the MuSiQue ablations on the first 15 questions
#   bash scripts/results.sh variants        # our variants of ChainRAG (recipes/variants/), MuSiQue
#   bash scripts/results.sh corpus-2wiki    # the shared-corpus setting: one corpus index of
#                                           # HippoRAG's 2Wiki corpus + the dev paragraphs
#   bash scripts/results.sh long-musique    # the paper's setting (issue 24): each question's
#                                           # paragraphs padded to LongBench's length
#                                           # (long:NAME), main table + authors' code
#   bash scripts/results.sh long-ablations long-k   # MuSiQue's ablations, Figure 7's k sweep there
#   bash scripts/results.sh long-ablations@15 long-k@15   # ... on the first 15 questions
#   bash scripts/results.sh long-variants   # our candidates to beat ChainRAG there, 3 dev sets
#   bash scripts/results.sh long-heldout    # compare_by_rule's held-out test (questions 31-60)
#   bash scripts/results.sh long-heldout-roles  # compare_roles_by_rule's (questions 61-90)
#   bash scripts/results.sh judge-steps     # issue 49: does a sufficiency judge tell a MuSiQue
#                                           # step's gold paragraph from the next-best ones?
#   bash scripts/results.sh long-fewer-calls  # issue 49, item 4: one_hop_cxtint, 3 long sets
#   bash scripts/results.sh long-similarity   # issue 49, item 2: the similarity judge's walk,
#                                             # 3 long sets
#   bash scripts/results.sh long-similarity-ablations[@15]  # ... and long:musique's k sweep
#                                             # and w/o EC/SS with that judge (NAME_similarity)
#   bash scripts/results.sh train-margin    # issue 49, item 3: choose-by-verify's margin, chosen
#                                           # on 30 MuSiQue + 30 HotpotQA training questions,
#                                           # then the frozen recipe and ChainRAG on 60 more
#   bash scripts/results.sh frozen-2wiki    # the frozen recipe on long:2wiki's questions 31-82
# By default ChainRAG's paper comes first: the main tables of MuSiQue, 2Wiki and HotpotQA, the
# MuSiQue ablations on 15 questions and then on all 30 (ChainRAG's issue first), the seed
# methods on MuSiQue, seed 004's recurring experiment, seed 002's methods on 2Wiki and
# HotpotQA, the other seed methods on them, and our variants. A stopped script leaves whole
# tables for what it reached. The seed methods run in the pooled setting
# (pooled:DATASET: one store of all the dev file's passages, as seed 002's shared vector store),
# into docs/runs/pooled-DATASET/.
# --cache-mode refresh: every LLM call is made anew (and its time and tokens counted), even
# where another method made the same request before.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
OUT=docs/runs
N=30
# The cheapest baselines first, then ChainRAG, then NaiveRAG w/ QD (whose one answer over up
# to 2,000 words is slow on 2 cores), so that a stopped script leaves comparable runs.
MAIN=(recipes/baselines/naive.yaml recipes/baselines/iter_retgen.yaml
      recipes/chainrag/ansint.yaml recipes/baselines/naive_qd.yaml)
# seed 002's methods: vanilla (its NaiveRAG) and the three LM-guided retrievals.
SEED002=(recipes/seeds/vanilla.yaml recipes/seeds/naive_iteration.yaml
         recipes/seeds/guided_iteration.yaml recipes/seeds/tree.yaml)
SEEDS=("${SEED002[@]}" recipes/seeds/three_module.yaml recipes/seeds/vanilla_10.yaml
       recipes/seeds/three_module_helps.yaml)
# seeds_for DATASET: the seed recipes for one dataset. seed 004's few-shot NLI filter keeps
# nothing with the 1.5B model (chainrag experiment filter: 0 of 27 gold paragraphs; three
# modules 7.2 F1 on MuSiQue), so three_module (NLI) runs on MuSiQue only and the other dev sets
# get three_module_helps, its yes/no-filter variant, in its place (docs/results.md).
seeds_for() {
  local recipe
  for recipe in "${SEEDS[@]}"; do
    [[ $1 != musique && $recipe == */three_module.yaml ]] || echo "$recipe"
  done
}
# No graph first: the largest ablation and the cheapest run (no expansion).
ABLATIONS=(recipes/ablations/no_graph.yaml recipes/ablations/no_rewrite.yaml
           recipes/ablations/no_ec.yaml recipes/ablations/no_ss.yaml
           recipes/ablations/no_sa.yaml)
# ablations@15: the five ablations on the first 15 questions, then (ablations) on all N; the
# report compares runs on the questions they have in common.
DEFAULT="musique 2wiki hotpotqa ablations@15 ablations seeds-musique recurring seed002-2wiki seed002-hotpotqa seeds-2wiki seeds-hotpotqa variants"
targets=("${@:-$DEFAULT}")
# chainrag run (and experiment recurring) exit 1 when a question failed (an LLM that stayed
# down: errors.jsonl); a second start resumes and tries those questions again, so try once
# more, then go on with the rest. Any other failure (a bad recipe: 2; SIGTERM: 143) stops the
# script.
twice() {
  local code
  for _ in 1 2; do
    code=0
    "$@" || code=$?
    [[ $code == 1 ]] || break
  done
  if [[ $code == 1 ]]; then
    echo "results.sh: failed twice, going on: $*" >&2
  elif [[ $code != 0 ]]; then
    exit "$code"
  fi
}
run() {
  twice $BIN/chainrag run "$@"
}
# pooled DATASET RECIPE...: the recipes on one pooled dev set (seed 002's shared store). A
# recipe whose run there already holds N answers is left out: the pooled runs of 2026-11-22/23
# were made before run.json recorded the server's prompt_cache, and chainrag run refuses to add
# to such a folder, finished or not, so naming one would stop the others with it.
pooled() {
  local dataset=$1 recipe todo=()
  shift
  for recipe in "$@"; do
    local answers=$OUT/pooled-$dataset/$(basename "$recipe" .yaml)/predictions.jsonl
    if [[ -f $answers && $(wc -l < "$answers") -ge $N ]]; then
      echo "results.sh: $answers holds $N answers already" >&2
    else
      todo+=("$recipe")
    fi
  done
  [[ ${#todo[@]} == 0 ]] ||
    run "${todo[@]}" --dataset "pooled:$dataset" --limit $N --out-dir $OUT --cache-mode refresh \
      --no-report
}
# corpus DATASET: one corpus index of HippoRAG's corpus of that dataset plus every dev
# question's own paragraphs (runs/corpus/, resumable), for the sentence graph and for chunks,
# then NaiveRAG and ChainRAG (chainrag_4k) over it on the first N dev questions (HippoRAG 2's
# setting).
corpus() {
  local dataset=$1 graph=runs/corpus/$1-graph chunks=runs/corpus/$1-chunks
  $BIN/chainrag index recipes/chainrag/ansint.yaml --corpus "$dataset" \
    --corpus "dev:$dataset" --out-dir "$graph"
  $BIN/chainrag index recipes/baselines/naive.yaml --corpus "$dataset" \
    --corpus "dev:$dataset" --out-dir "$chunks"
  run recipes/baselines/naive.yaml --dataset "$dataset" --index "$chunks" --limit $N \
    --out-dir $OUT --cache-mode refresh --no-report
  # the paper's 3,000-word budgets overflow the local model's 4k context once the walk can
  # reach a whole corpus (every sub-answer failed): chainrag_4k keeps 1,200 / 1,500 words
  run recipes/variants/chainrag_4k.yaml --dataset "$dataset" --index "$graph" --limit $N \
    --out-dir $OUT --cache-mode refresh --no-report
}
# The paper's own setting (issue 24): long:DATASET pads each question's paragraphs with other
# questions' to LongBench's mean length (docs/results.md); ChainRAG as the authors' code does it
# runs beside paper-faithful ChainRAG. Into docs/runs/long-DATASET/.
LONG=("${MAIN[@]}" recipes/reproduce/authors_code.yaml)
# Candidates to beat paper-faithful ChainRAG there (issue 24, item 3), each its own run; the
# answerable judge alone (variants/answerable_judge.yaml) gives judge_answers' answers with one
# call more per answered sub-question, so it is not run again here.
BEAT=(recipes/variants/hybrid_seeds.yaml recipes/variants/numbered_refs.yaml)
# judge_answers' judge asks the sub-answer's request (answer_sub over the evidence gathered so
# far), so where ansint's walk stopped after hop 1 its requests are ansint's word for word:
# replayed after ansint, it makes new calls only where the walk goes on; seeds_first's checks
# of the seeds alone are new calls, its later ones judge_answers'.
# The CxtInt candidates make ansint.yaml's requests word for word but CxtInt's: run after it
# with the response cache (--cache-mode use), each costs one new call a question; the cached
# answers are those a new call gets (the managed server's answers do not depend on the requests
# before them), but tokens and seconds then count only the new calls (calls/q counts all).
# cxtint_passages_checked, after cxtint_passages, makes no new call: its CxtInt request is
# cxtint_passages', its AnsInt request (only where CxtInt's answer does not fit) ansint's.
# one_hop makes ansint.yaml's requests but the sufficiency checks wherever ansint's judge said
# "yes" after the first hop: new calls only for the few walks that went on. one_hop_choose,
# after one_hop, makes its requests and new calls only to choose where AnsInt and CxtInt differ
# (one_hop_choose_probabilities too: its asks carry top_logprobs, so they are not the same;
# one_hop_choose_verify asks each answer on its own, the supports prompt, where they differ;
# one_hop_choose_verify_margin, after it, makes its requests and no new call;
# one_hop_choose_verify_calibrated_margin, after it, makes its requests and two new short
# calls, each answer without the passages, where they differ).
# compare_by_rule makes ansint.yaml's requests but CxtInt's where its rule decides: no new call.
REPLAY=(recipes/variants/cxtint_passages.yaml recipes/variants/cxtint_passages_checked.yaml
        recipes/variants/cxtint_short.yaml recipes/variants/cxtint_notes.yaml
        recipes/variants/one_hop.yaml recipes/variants/one_hop_choose.yaml
        recipes/variants/one_hop_choose_probabilities.yaml recipes/variants/one_hop_choose_verify.yaml
        recipes/variants/one_hop_choose_verify_margin.yaml
        recipes/variants/one_hop_choose_verify_calibrated_margin.yaml
        recipes/variants/judge_answers.yaml
        recipes/variants/seeds_first.yaml recipes/variants/compare_by_rule.yaml)
# The order of CxtInt's context (best last) gained nothing on long:musique, where candidates
# are chosen, and the explicit answer form lost there: they are replayed there only.
REPLAY_MUSIQUE=(recipes/variants/cxtint_best_last.yaml
                recipes/variants/cxtint_passages_best_last.yaml
                recipes/variants/cxtint_passages_form.yaml)
# A short reasoning before CxtInt's answer was made for long:2wiki's comparison questions and
# lost there and on long:musique: it is replayed on those two.
REPLAY_NOT_HOTPOTQA=(recipes/variants/cxtint_passages_reason.yaml)
# Figure 7's k sweep. k = 3 is ansint.yaml but for its name (the paper's k; k3.yaml): its run is
# long-DATASET/ansint itself, so long-k makes the other four anew.
K_SWEEP=(recipes/ablations/k1.yaml recipes/ablations/k2.yaml recipes/ablations/k4.yaml
         recipes/ablations/k5.yaml)
for what in ${targets[@]}; do
  if [[ $what == long-ablations* || $what == long-k* ]]; then
    # long-ablations@15: the first 15 questions (the runs go on to N with long-ablations)
    limit=$N
    [[ $what == *@* ]] && limit=${what#*@}
    recipes=("${ABLATIONS[@]}")
    [[ $what == long-k* ]] && recipes=("${K_SWEEP[@]}")
    run "${recipes[@]}" --dataset long:musique --limit "$limit" --out-dir $OUT \
      --cache-mode refresh --no-report
  elif [[ $what == judge-steps ]]; then
    # 60 MuSiQue dev questions measured, thresholds chosen on 60 of MuSiQue train (HippoRAG's)
    twice $BIN/chainrag experiment judge-steps --limit 60 --out-dir docs/probes
  elif [[ $what == long-fewer-calls ]]; then
    # one_hop_cxtint makes one_hop's requests but AnsInt's: after one_hop, replayed from the
    # response cache as the REPLAY recipes are (calls/q counts them all; seconds do not count)
    for dataset in musique 2wiki hotpotqa; do
      run recipes/variants/one_hop_cxtint.yaml --dataset "long:$dataset" --limit $N \
        --out-dir $OUT --cache-mode use --no-report
    done
  elif [[ $what == train-margin ]]; then
    # The first 30 questions of HippoRAG's MuSiQue and HotpotQA train files at LongBench length
    # (there is no 2Wiki train file with questions): one_hop_choose_verify, then one_hop replayed
    # after it; then scripts/selector_screen.py --margins one_hop_choose_verify --sets
    # long-musique-musique_train long-hotpotqa-hotpotqa_train names the margin (docs/results.md).
    # The fifth try's margin the same way: one_hop_choose_verify_calibrated after them (two
    # new calls where the answers differ), then selector_screen.py --margins
    # one_hop_choose_verify_calibrated on the same two sets.
    for spec in musique:chainrag/data/files/hipporag/musique_train.json \
                hotpotqa:chainrag/data/files/hipporag/hotpotqa_train.json; do
      run recipes/variants/one_hop_choose_verify.yaml recipes/variants/one_hop.yaml \
        recipes/variants/one_hop_choose_verify_calibrated.yaml \
        --dataset "long:$spec" --limit $N --out-dir $OUT --cache-mode use --no-report
    done
    # Then the two chosen margins' recipes, the frozen recipe and paper-faithful ChainRAG
    # (ansint.yaml, both integrations; it replays one_hop's calls, the judge's are new) on 30
    # further MuSiQue and 30 further HotpotQA training questions (31-45, then 46-60), used to
    # make or choose none of them (selector_screen.py --margins one_hop_choose_verify_margin
    # --sets long-musique-musique_train-30-45 long-hotpotqa-hotpotqa_train-30-45 ..., the same
    # for the calibrated one; chainrag compare ansint one_hop_choose_probabilities
    # --base-answer cxtint --answer choose --over each slice's folder). ChainRAG was run there
    # last, after the others' results (pre-registered in ce3be64).
    for slice in 30:45 45:60; do
      for spec in musique:chainrag/data/files/hipporag/musique_train.json \
                  hotpotqa:chainrag/data/files/hipporag/hotpotqa_train.json; do
        run recipes/variants/one_hop_choose_verify_margin.yaml recipes/variants/one_hop.yaml \
          recipes/variants/one_hop_choose_verify_calibrated_margin.yaml \
          recipes/variants/one_hop_choose_probabilities.yaml recipes/chainrag/ansint.yaml \
          --dataset "long:$spec[$slice]" --out-dir $OUT --cache-mode use --no-report
      done
    done
  elif [[ $what == frozen-2wiki ]]; then
    # Item 3's frozen recipe on long:2wiki's questions 31-82, where ChainRAG (ansint.yaml) was
    # run for the rule recipes' held-out tests and the frozen recipe, chosen on questions 1-30,
    # never was: ChainRAG first (resumed, so nothing runs where its runs are whole), then the
    # frozen recipe, replaying the requests it shares with ChainRAG where the response cache
    # holds them (on 2026-11-29 it held none: all made anew) (chainrag compare ansint
    # one_hop_choose_probabilities --base-answer cxtint --answer choose --over each folder).
    for dataset in 'long:2wiki[30:60]' 'long:2wiki[60:82]'; do
      run recipes/chainrag/ansint.yaml recipes/variants/one_hop_choose_probabilities.yaml \
        --dataset "$dataset" --out-dir $OUT --cache-mode use --no-report
    done
  elif [[ $what == long-similarity ]]; then
    for dataset in musique 2wiki hotpotqa; do
      run recipes/variants/similarity_judge.yaml --dataset "long:$dataset" --limit $N \
        --out-dir $OUT --cache-mode refresh --no-report
    done
  elif [[ $what == long-similarity-ablations* ]]; then
    # Each ablation and k of the paper with the similarity judge (chosen on MuSiQue train), as
    # its own run long-musique/NAME_similarity; k = 3 is similarity_judge itself. W/o SS and
    # w/o EC first: on the walk alone (walk-steps) w/o SS is the one that loses gold evidence.
    limit=$N
    [[ $what == *@* ]] && limit=${what#*@}
    for recipe in recipes/ablations/no_ss.yaml recipes/ablations/no_ec.yaml "${K_SWEEP[@]}"; do
      run "$recipe" --dataset long:musique --limit "$limit" --out-dir $OUT --cache-mode refresh \
        --no-report --set 'retrieval.expander.judge={kind: similarity, threshold: 0.586}' \
        --set "name=$(basename "$recipe" .yaml)_similarity"
    done
  elif [[ $what == long-variants ]]; then
    for dataset in musique 2wiki hotpotqa; do
      replay=("${REPLAY[@]}")
      [[ $dataset == musique ]] && replay+=("${REPLAY_MUSIQUE[@]}")
      [[ $dataset != hotpotqa ]] && replay+=("${REPLAY_NOT_HOTPOTQA[@]}")
      run "${replay[@]}" --dataset "long:$dataset" --limit $N --out-dir $OUT --cache-mode use \
        --no-report
      run "${BEAT[@]}" --dataset "long:$dataset" --limit $N --out-dir $OUT --cache-mode refresh \
        --no-report
    done
  elif [[ $what == long-heldout ]]; then
    # Item 3's held-out test of compare_by_rule, made from the first 30 questions' answers:
    # ansint.yaml anew on questions 31-60 of long:2wiki and on the one question of
    # long:hotpotqa's 31-60 that the rule reads, then compare_by_rule replayed from its cache
    # (scripts/by_rule_from_traces.py counts long:musique's and the other questions, which the
    # rule does not read).
    for dataset in 'long:2wiki[30:60]' 'long:hotpotqa[50:51]'; do
      run recipes/chainrag/ansint.yaml --dataset "$dataset" --out-dir $OUT --cache-mode refresh \
        --no-report
      run recipes/variants/compare_by_rule.yaml --dataset "$dataset" --out-dir $OUT \
        --cache-mode use --no-report
    done
  elif [[ $what == long-heldout-roles ]]; then
    # Item 3's held-out test of compare_roles_by_rule, made after reading long:2wiki's first 60
    # questions: ansint.yaml anew on long:2wiki's questions 61-82 (it has 82) and on the three
    # of long:hotpotqa's 61-90 that by_rule reads, then compare_roles_by_rule after it (its
    # rule-made decompositions anew, the rest replayed from the cache); the other questions are
    # ones neither rule reads (scripts/by_rule_from_traces.py --unchanged checks it).
    for dataset in 'long:2wiki[60:82]' 'long:hotpotqa[61:62]' 'long:hotpotqa[67:68]' \
      'long:hotpotqa[74:75]'; do
      run recipes/chainrag/ansint.yaml --dataset "$dataset" --out-dir $OUT --cache-mode refresh \
        --no-report
      run recipes/variants/compare_roles_by_rule.yaml --dataset "$dataset" --out-dir $OUT \
        --cache-mode use --no-report
    done
  elif [[ $what == long-* ]]; then
    run "${LONG[@]}" --dataset "long:${what#long-}" --limit $N --out-dir $OUT --cache-mode refresh \
      --no-report
  elif [[ $what == corpus-* ]]; then
    corpus "${what#corpus-}"
  elif [[ $what == seeds ]]; then
    for dataset in musique 2wiki hotpotqa; do
      mapfile -t seeds < <(seeds_for "$dataset")
      pooled "$dataset" "${seeds[@]}"
    done
  elif [[ $what == seed002-* ]]; then
    pooled "${what#seed002-}" "${SEED002[@]}"
  elif [[ $what == seeds-* ]]; then
    mapfile -t seeds < <(seeds_for "${what#seeds-}")
    pooled "${what#seeds-}" "${seeds[@]}"
  elif [[ $what == recurring ]]; then
    # With the 1.5B model seed 004's NLI filter keeps nothing, so its reservoir would stay
    # empty: the recurring experiment runs with the yes/no filter (llm_helps; docs/results.md).
    twice $BIN/chainrag experiment recurring recipes/seeds/four_module_helps.yaml \
      --dataset musique --limit 10 --out-dir $OUT
  elif [[ $what == variants ]]; then
    run recipes/variants/*.yaml --dataset musique --limit $N --out-dir $OUT \
      --cache-mode refresh --no-report
  elif [[ $what == ablations || $what == ablations@* ]]; then
    limit=$N
    [[ $what == ablations@* ]] && limit=${what#ablations@}
    run "${ABLATIONS[@]}" --dataset musique --limit "$limit" --out-dir $OUT \
      --cache-mode refresh --no-report
  else
    run "${MAIN[@]}" --dataset "$what" --limit $N --out-dir $OUT \
      --cache-mode refresh --no-report
  fi
done
# The tables and plots of the short dev sets and the pooled ones, as docs/results.md names them
# (the long setting's runs are compared in docs/results.md by chainrag compare).
$BIN/chainrag report $OUT/{musique,2wiki,hotpotqa,pooled-musique,pooled-2wiki,pooled-hotpotqa} \
  --baseline naive --baseline vanilla --out docs/results_tables.md --plots-dir docs/plots
