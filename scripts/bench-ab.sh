#!/bin/sh
# Two builds of pbench side by side on one config: the rounds interleave
# A B B A (a drift of the machine falls on both alike), every run writes a
# result, and each adjacent A/B pair is compared with pbench compare
# (change, 95% CI, verdict). For a change to pbench itself, such as the
# hot path of the runner:
#   scripts/bench-ab.sh OLD/pbench NEW/pbench configs/image.yaml [ROUNDS] [-s k=v]...
# ROUNDS (default 2) is the number of A B B A blocks. Results go to
# results/ab-*.json; the data is generated once, by A, in the current
# folder as the config says.
set -eu
[ $# -ge 3 ] || { echo "usage: scripts/bench-ab.sh A_PBENCH B_PBENCH CONFIG [ROUNDS] [-s k=v]..." >&2; exit 2; }
A=$1; B=$2; CONFIG=$3; shift 3
ROUNDS=2
case "${1:-}" in ''|-*) ;; *) ROUNDS=$1; shift ;; esac
mkdir -p results
i=0
while [ "$i" -lt "$ROUNDS" ]; do
    "$A" run "$CONFIG" -q -o "results/ab-A-$((2*i)).json" "$@" > /dev/null
    "$B" run "$CONFIG" -q -o "results/ab-B-$((2*i)).json" "$@" > /dev/null
    "$B" run "$CONFIG" -q -o "results/ab-B-$((2*i+1)).json" "$@" > /dev/null
    "$A" run "$CONFIG" -q -o "results/ab-A-$((2*i+1)).json" "$@" > /dev/null
    i=$((i + 1))
done
k=0
while [ "$k" -lt $((2 * ROUNDS)) ]; do
    echo "== pair $k: A results/ab-A-$k.json vs B results/ab-B-$k.json"
    "$B" compare "results/ab-A-$k.json" "results/ab-B-$k.json" --force | sed -n '/^point/,/^[0-9]* regressed/p'
    k=$((k + 1))
done
