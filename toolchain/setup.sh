#!/usr/bin/env bash
# README command 1: install what is missing from Debian, build everything
# (emulator with the system compiler, firmware with clang + lld), flash the
# demo firmware and run the demo.
#
#   toolchain/setup.sh              everything
#   toolchain/setup.sh --deps-only  only install the Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ pkg-config git
  clang lld llvm                       # firmware toolchain (mipsel)
  libclang-rt-14-dev                   # tests: libFuzzer and sanitizers for clang (fuzz/)
  libunicorn-dev                       # the core
  libboost-context-dev                 # the cores' slices run as fibers
  libcapstone-dev                      # disassembly in reports
  libcli11-dev                         # command line
  doctest-dev                          # tests
  libelf-dev                           # reading firmware ELF files
  libdw-dev                            # DWARF: line tables (hotspots), variables (nicemu debug)
  libtomlplusplus-dev                  # model files
  nlohmann-json3-dev                   # JSON output
  zlib1g-dev                           # CRC-32
  tshark                               # tests: reading packet captures (--pcap)
  python3 python3-jsonschema           # tests: report and bench JSON against their schemas
  gnuplot-nox fonts-liberation         # nicemu plot draws with it (svg and pngcairo terminals; text in PNGs)
  gdb-multiarch                        # nicemu run --gdb (docs/debugging.md)
  libedit-dev                          # nicemu debug: line editing, history
  iproute2                             # tests: --tap in a network namespace
  help2man                             # the man page, made from nicemu --help (docs/install.md)
  openmpi-bin                          # tests: mpirun around nicemu run (docs/distributed.md)
  libopenmpi-dev                       # tests: the ranks' step protocol over MPI
)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  # Through env so that sudo keeps it: tshark asks a debconf question
  # (wireshark-common/install-setuid) that must not wait for an answer.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

install_missing
[ "${1:-}" = "--deps-only" ] && exit 0

cmake --preset default
cmake --build --preset default

nicemu=build/emulator/nicemu
demo=build/firmware/samples/demo.img
echo
echo "== nicemu image --info $demo"
$nicemu image --info "$demo" | head -12
echo
echo "== nicemu flash $demo --flash build/node0.flash"
$nicemu flash "$demo" --flash build/node0.flash
echo
echo "== nicemu run --model lanai4 --flash build/node0.flash"
$nicemu run --model lanai4 --flash build/node0.flash
echo
echo "== an 8-node cluster: NI Active Messages firmware and a host program per node,"
echo "== with the firmware handlers' cycle counts"
echo "== nicemu run -n 8 --firmware build/firmware/niam/niam.img --report cycles -- build/examples/niam_barrier"
$nicemu run -n 8 --firmware build/firmware/niam/niam.img --report cycles -- build/examples/niam_barrier
echo
echo "== VIA on the comet card: the VI provider firmware and a classic VIPL"
echo "== ping-pong (malloc'd buffers, name service, connect), over Ethernet"
echo "== nicemu run -n 2 --model comet --firmware build/firmware/via/via.img --report cycles -- build/examples/vipl_pingpong"
$nicemu run -n 2 --model comet --firmware build/firmware/via/via.img --report cycles -- build/examples/vipl_pingpong
