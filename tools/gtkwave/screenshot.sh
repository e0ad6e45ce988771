#!/usr/bin/env bash
# screenshot.sh RUN.vcd RUN.gtkw OUT.png: open a VCD in GTKWave with its save
# file on a virtual display and save a picture of the window.
set -euo pipefail
vcd=$(realpath "$1"); gtkw=$(realpath "$2"); png=$(realpath -m "$3")
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$vcd")"
AAEMU_SNAP_PNG="$png" timeout 90 xvfb-run -a -s '-screen 0 1280x800x24' \
  gtkwave -R "$here/snap.tcl" -P 700 "$vcd" "$gtkw" >/dev/null 2>&1
[ -s "$png" ] || { echo "screenshot: $png was not written" >&2; exit 1; }
echo "screenshot: $png"
