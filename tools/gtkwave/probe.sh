#!/usr/bin/env bash
# probe.sh RUN.gtkw OUT.txt [TIME...]: open a save file alone in GTKWave on a
# virtual display, from another directory (GTKWave finds the VCD and the
# translate files from the save file), and write what it shows to OUT.txt
# (see probe.tcl); TIMEs are in the VCD's unit.
set -euo pipefail
gtkw=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
here=$(cd "$(dirname "$0")" && pwd)
rm -f "$out"
cd /
AAEMU_PROBE_OUT="$out" AAEMU_PROBE_TIMES="$*" timeout 90 xvfb-run -a -s '-screen 0 1280x800x24' \
  gtkwave -R "$here/probe.tcl" -P 700 "$gtkw" >/dev/null 2>&1
[ -s "$out" ] || { echo "probe: GTKWave wrote nothing to $out" >&2; exit 1; }
