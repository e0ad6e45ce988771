#!/usr/bin/env bash
# Installs the external tools aaemu's tests run, when they are missing:
# GTKWave (vcd2fst, fst2vcd, vcd2lxt2, gtkwave), Xvfb and ImageMagick for the
# headless waveform screenshot, and the vcd-stream parser from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v gtkwave  >/dev/null || need+=(gtkwave)
command -v vcd2fst  >/dev/null || need+=(gtkwave)
command -v xvfb-run >/dev/null || need+=(xvfb xauth)
command -v import   >/dev/null || need+=(imagemagick)
command -v node     >/dev/null || need+=(nodejs)
command -v npm      >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# vcd-stream: its WebAssembly build ships in the package, so install scripts
# (which would compile a native addon) are not needed.
if [ ! -d tools/vcdstream/node_modules/vcd-stream ]; then
  echo "deps: installing vcd-stream from npm"
  (cd tools/vcdstream && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
