#!/usr/bin/env bash
# Installs the external tools aaemu's tests run, when they are missing:
# GTKWave (vcd2fst, fst2vcd, vcd2lxt2, gtkwave), Xvfb and ImageMagick for the
# headless waveform screenshot, tshark (decodes the RoCE captures), Debian's
# python3-scapy (checks their ICRCs), Slurm and munge (a one-node cluster
# runs a sweep as a job array and srun starts MPI ranks), Open MPI with its
# headers and pkg-config (aaemu built with the mpi tag runs one simulation
# over mpirun's or srun's ranks), PMIx's development package (Slurm's
# mpi_pmix plugin, in slurm-wlm-basic-plugins, loads libpmix.so, which only
# libpmix-dev installs: without it `srun --mpi=pmix` fails), and the
# vcd-stream parser from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v gtkwave  >/dev/null || need+=(gtkwave)
command -v vcd2fst  >/dev/null || need+=(gtkwave)
command -v xvfb-run >/dev/null || need+=(xvfb xauth)
command -v import   >/dev/null || need+=(imagemagick)
command -v node     >/dev/null || need+=(nodejs)
command -v npm      >/dev/null || need+=(npm)
command -v tshark   >/dev/null || need+=(tshark)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import scapy.contrib.roce' 2>/dev/null || need+=(python3 python3-scapy)
[ -x /usr/sbin/slurmctld ] || need+=(slurmctld)
[ -x /usr/sbin/slurmd ]    || need+=(slurmd)
command -v sbatch   >/dev/null || need+=(slurm-client)
[ -x /usr/sbin/munged ]    || need+=(munge)
command -v mpirun   >/dev/null || need+=(openmpi-bin)
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists ompi-c 2>/dev/null || need+=(libopenmpi-dev)
pkg-config --exists pmix 2>/dev/null || need+=(libpmix-dev)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need[*]}"
  $sudo apt-get update -qq
  # tshark asks whether non-root users may capture: answer no, without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# vcd-stream: its WebAssembly build ships in the package, so install scripts
# (which would compile a native addon) are not needed.
if [ ! -d tools/vcdstream/node_modules/vcd-stream ]; then
  echo "deps: installing vcd-stream from npm"
  (cd tools/vcdstream && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
