#!/usr/bin/env bash
# bench-anchor.sh [N]: the anchor workload in the peer models (SystemC
# TLM-2.0 LT, plain Go; ../shared/anchors/run.sh builds them) and in aaemu
# (transaction level and cycle level), one after the other on this machine,
# for D=1 and D=64, then the ratios aaemu/SystemC and aaemu/plain Go.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
anchors=../shared/anchors
[ -x "$anchors/run.sh" ] || [ -f "$anchors/run.sh" ] || { echo "bench-anchor: $anchors/run.sh not found" >&2; exit 1; }
go build -o bin/aaemu ./cmd/aaemu
rate() { grep -A3 "$1" "$2" | grep -o 'txn_per_s=[0-9]*' | head -1 | cut -d= -f2; }
for D in 1 64; do
  out=$(mktemp)
  bash "$anchors/run.sh" "$N" "$D" | tee "$out"
  echo "== aaemu, transaction level"; bin/aaemu bench anchor "$N" "$D" --form tl | tee -a "$out"
  # The cycle level is slower: a tenth of the transactions keeps the run short.
  echo "== aaemu, cycle level (N/10)"; bin/aaemu bench anchor "$((N / 10))" "$D" --form cycle | tee -a "$out"
  sc=$(rate "model=systemc-tlm2-lt" "$out"); go=$(rate "model=go-baseline" "$out")
  tl=$(rate "model=aaemu-tl" "$out"); cy=$(rate "model=aaemu-cycle" "$out")
  awk -v d="$D" -v sc="$sc" -v go="$go" -v tl="$tl" -v cy="$cy" 'BEGIN {
    printf "D=%s ratios: transaction level / SystemC LT = %.2f, / plain Go = %.2f; cycle level / SystemC LT = %.3f\n", d, tl/sc, tl/go, cy/sc }'
  rm -f "$out"
done
