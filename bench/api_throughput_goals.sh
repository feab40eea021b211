#!/bin/bash
# The goal cells of bench/api_throughput.py (docs/benchmarks.md), old (61e250e) and new side by
# side (musique at 16 in flight over a cold and a warm store); run on an otherwise idle
# machine: bash bench/api_throughput_goals.sh
cd "$(dirname "$0")/.."
B=".venv/bin/python bench/api_throughput.py --recipes chainrag/ansint.yaml --out docs/bench/api_throughput.jsonl"
date
$B --datasets 'musique[60:80]' --limit 0 --concurrency 1 --latency fixed:0 --stores cold --repeat 3
$B --datasets 'long:musique[0:20]' --limit 0 --concurrency 4 --latency fixed:0 --stores cold --repeat 1
$B --datasets 'long:musique' --limit 0 --concurrency 4 --latency fixed:0 --stores cold --sides new --repeat 3
$B --datasets musique --limit 30 --concurrency 16 --latency fixed:1 --stores cold warm --repeat 3
$B --datasets musique --limit 30 --concurrency 16 --latency fixed:1 --stores cold --sides new --encoders local remote --embed-latency fixed:0.2 --rerank-latency fixed:0.3 --repeat 3
$B --datasets musique --limit 64 --concurrency 64 --latency fixed:1 --stores cold --repeat 1
date
