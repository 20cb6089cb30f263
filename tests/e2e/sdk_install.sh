#!/usr/bin/env bash
# The SDK as a user gets it: install the build into a fresh prefix, build the
# out-of-tree firmware example with the installed toolchain file, run it with
# the installed nicemu, and build a host program with find_package(nicemu).
# Usage: sdk_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/nicemu-sdk-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "sdk_install: FAIL: $*" >&2
  exit 1
}

step() { echo "== $*"; }

# Quiet unless it fails: then show what the command said.
run_logged() {
  local log=$work/log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "command failed: $*"
  fi
}

step "install $build into $prefix"
run_logged cmake --install "$build" --prefix "$prefix"
tool=$prefix/bin/nicemu
toolchain=$prefix/share/nicemu/cmake/nicemu-mipsel.cmake
[[ -x $tool ]] || fail "no installed tool at bin/nicemu"
[[ -f $toolchain ]] || fail "no toolchain file at share/nicemu/cmake/nicemu-mipsel.cmake"

# The installed tool must find its models without the source tree.
models=$("$tool" models) || fail "installed nicemu models failed"
for m in lanai4 martini comet uzura; do
  grep -q "^$m " <<<"$models" || fail "installed nicemu does not list model $m"
done
grep -q "search path:.*$prefix/share/nicemu/models" <<<"$models" ||
  fail "installed nicemu does not search $prefix/share/nicemu/models:
$models"
! grep -q "search path:.*$source/emulator/models" <<<"$models" ||
  fail "installed nicemu still searches the source tree's models:
$models"

# The sample images are installed too, and boot with the installed tool.
sample=$prefix/share/nicemu/firmware/hello.img
[[ -f $sample ]] || fail "no sample image at share/nicemu/firmware/hello.img"
[[ $("$tool" run -q --firmware "$sample") == "[node0] hello from node 0 of 1" ]] ||
  fail "the installed hello.img does not print its greeting"

step "build examples/firmware-hello against the installed SDK"
example=$source/examples/firmware-hello
[[ -f $example/CMakeLists.txt ]] || fail "no $example/CMakeLists.txt"
fw_build=$work/firmware-hello
run_logged cmake -S "$example" -B "$fw_build" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE="$toolchain"
run_logged cmake --build "$fw_build"
image=$fw_build/hello.img # examples/firmware-hello/README.md
[[ -f $image ]] || fail "the example build made no $image: $(ls "$fw_build")"

step "run hello.img with the installed nicemu"
set +e
"$tool" run --firmware "$image" >"$work/out" 2>"$work/err"
status=$?
set -e
cat "$work/out"
if [[ $status -ne 0 ]]; then
  cat "$work/err" >&2
  fail "nicemu run exited $status"
fi
# What examples/firmware-hello/README.md says it prints.
expected=$'[node0] hello from an out-of-tree firmware on node 0\n[node0] bye'
[[ $(cat "$work/out") == "$expected" ]] ||
  fail "console output differs; expected:
$expected"
grep -q '^virtual time ' "$work/err" || fail "no run summary: $(cat "$work/err")"

step "build a host program with find_package(nicemu)"
host_src=$work/host-src
mkdir -p "$host_src"
cat >"$host_src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(nicemu_sdk_probe LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(nicemu REQUIRED)
add_executable(p main.cpp)
target_link_libraries(p nicemu::host)
EOF
cat >"$host_src/main.cpp" <<'EOF'
#include <nicemu/host.hpp>

#include <cstdio>

int main() { std::printf("nicemu host library %s\n", nicemu::host::version()); }
EOF
host_build=$work/host-build
# A sanitizer build installs an instrumented host library: its users must
# build with the same flags, so take them from the build's cache.
cache_value() {
  sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"
}
run_logged cmake -S "$host_src" -B "$host_build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$(cache_value CMAKE_CXX_COMPILER)" \
  -DCMAKE_CXX_FLAGS="$(cache_value CMAKE_CXX_FLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$(cache_value CMAKE_EXE_LINKER_FLAGS)"
run_logged cmake --build "$host_build"
host_out=$("$host_build/p") || fail "host program failed"
echo "$host_out"
version=$("$tool" --version) || fail "nicemu --version failed"
[[ $host_out == "nicemu host library $version" ]] ||
  fail "host library says '$host_out', nicemu --version says '$version'"

step "build a C program with cc and pkg-config, run it on 2 nodes"
c_src=$work/c-prog.c
cat >"$c_src" <<'EOF'
#include <nicemu/host.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  uint32_t rank = 0, size = 0;
  if (nicemu_rank(&rank) != NICEMU_OK || nicemu_size(&size) != NICEMU_OK)
    return 1;
  usleep(1000);
  printf("C program: rank %u of %u\n", (unsigned)rank, (unsigned)size);
  return 0;
}
EOF
pc_dir=$prefix/lib/pkgconfig
[[ -f $pc_dir/nicemu.pc ]] || fail "no lib/pkgconfig/nicemu.pc"
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs nicemu) ||
  fail "pkg-config does not know nicemu"
cc=$(cache_value CMAKE_C_COMPILER)
# shellcheck disable=SC2046,SC2086 # the flags are words
run_logged "$cc" $(cache_value CMAKE_C_FLAGS) -o "$work/c-prog" "$c_src" \
  $flags $(cache_value CMAKE_EXE_LINKER_FLAGS)
c_out=$("$tool" run -n 2 --firmware "$sample" -- "$work/c-prog" 2>"$work/err") ||
  { cat "$work/err" >&2; fail "the C program failed"; }
fm2_flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags nicemu-fm2) ||
  fail "pkg-config does not know nicemu-fm2"
fm2_dir=${fm2_flags%% *}
[[ -f ${fm2_dir#-I}/fm.h ]] || fail "nicemu-fm2's first include directory has no fm.h: $fm2_flags"
{ grep -q "^C program: rank 0 of 2" <<<"$c_out" &&
  grep -q "^C program: rank 1 of 2" <<<"$c_out"; } ||
  fail "the C program printed: $c_out"

step "build an MPI program with nicemu-mpicc, pkg-config nicemu-mpi and nicemu::mpi; run each on 2 uzura nodes"
mpicc=$prefix/bin/nicemu-mpicc
[[ -x $mpicc && -x $prefix/bin/nicemu-mpicxx ]] ||
  fail "no bin/nicemu-mpicc and bin/nicemu-mpicxx"
[[ -f $prefix/include/nicemu/mpi/mpi.h ]] || fail "no include/nicemu/mpi/mpi.h"
show=$("$mpicc" -show prog.c -o prog)
[[ $show == *"-I$prefix/include/nicemu/mpi "* && $show == *"-L$prefix/lib"* ]] ||
  fail "nicemu-mpicc -show does not name the installed files: $show"
uzura_image=$prefix/share/nicemu/firmware/uzura.img
[[ -f $uzura_image ]] || fail "no share/nicemu/firmware/uzura.img"
mpi_src=$source/tests/e2e/programs/mpi_latency.c
run_mpi() { # EXE
  local out
  out=$("$tool" run -n 2 --model uzura --firmware "$uzura_image" -- "$1" \
    -m 0:64 -i 3 -x 1 2>"$work/err") ||
    { cat "$work/err" >&2; fail "$1 failed: $out"; }
  { grep -q "^# nicemu MPI ping-pong latency" <<<"$out" &&
    grep -q "^64 " <<<"$out"; } || fail "$1 printed: $out"
  echo "$(basename "$1"): ok"
}
# shellcheck disable=SC2046 # the flags are words
run_logged "$mpicc" $(cache_value CMAKE_C_FLAGS) -o "$work/mpi-wrapper" \
  "$mpi_src"
run_mpi "$work/mpi-wrapper"
mpi_flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs nicemu-mpi) ||
  fail "pkg-config does not know nicemu-mpi"
# shellcheck disable=SC2046,SC2086 # the flags are words
run_logged "$cc" $(cache_value CMAKE_C_FLAGS) -o "$work/mpi-pc" "$mpi_src" \
  $mpi_flags $(cache_value CMAKE_EXE_LINKER_FLAGS)
run_mpi "$work/mpi-pc"
mpi_cmake=$work/mpi-cmake-src
mkdir -p "$mpi_cmake"
cat >"$mpi_cmake/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(nicemu_mpi_probe LANGUAGES C)
find_package(nicemu REQUIRED)
add_executable(latency $mpi_src)
target_link_libraries(latency nicemu::mpi)
CMAKE
run_logged cmake -S "$mpi_cmake" -B "$work/mpi-cmake" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$(cache_value CMAKE_C_FLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$(cache_value CMAKE_EXE_LINKER_FLAGS)"
run_logged cmake --build "$work/mpi-cmake"
run_mpi "$work/mpi-cmake/latency"

step "run the installed uzura examples on 2 uzura nodes"
# README.md and docs/uzura.md list them; each checks its own data.
run_example() { # NAME EXPECTED [ARGS...]
  local name=$1 expected=$2 exe=$prefix/lib/nicemu/examples/$1 out
  shift 2
  [[ -x $exe ]] || fail "no lib/nicemu/examples/$name"
  out=$("$tool" run -n 2 --model uzura --firmware "$uzura_image" -- "$exe" \
    "$@" 2>"$work/err") || { cat "$work/err" >&2; fail "$name failed: $out"; }
  grep -q "$expected" <<<"$out" || fail "$name printed: $out"
  echo "$name: ok"
}
run_example mpi_pingpong "^mpi_pingpong: every echo checked, ok$" 3 4096
run_example uzura_transpose "^rank 1: 10000 of 10000 elements"
run_example mpi_onesided "^rank 1 of 2: ok$" 100

step "build the old-style programs with cc and pkg-config, PIE and -no-pie"
# The 1990s programs of tests/e2e/programs compile unchanged as a user
# compiles them (docs/compatibility.md): gnu89, warnings off.
firmware_dir=$prefix/share/nicemu/firmware
fm2_all=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs nicemu-fm2)
old_style() { # NAME FLAGS MODEL FIRMWARE EXPECTED [ARGS...]
  local name=$1 pc_flags=$2 model=$3 image=$4 expected=$5
  shift 5
  for kind in pie nopie; do
    local link=-pie compile=-fPIE
    [[ $kind == nopie ]] && link=-no-pie compile=-fno-pie
    local exe=$work/$name-$kind
    # shellcheck disable=SC2086 # the flags are words
    run_logged "$cc" -std=gnu89 -w $compile $(cache_value CMAKE_C_FLAGS) \
      -o "$exe" "$source/tests/e2e/programs/$name.c" $pc_flags $link \
      $(cache_value CMAKE_EXE_LINKER_FLAGS)
    local out
    out=$(NICEMU_VIPL_DIAGNOSTICS=0 "$tool" run -n 2 --model "$model" \
      --firmware "$firmware_dir/$image" -- "$exe" "$@" 2>"$work/err") ||
      { cat "$work/err" >&2; fail "$name ($kind) failed: $out"; }
    grep -q "$expected" <<<"$out" || fail "$name ($kind) printed: $out"
    echo "$name ($kind): $(grep -c . <<<"$out") lines, ok"
  done
}
old_style gam_oldstyle "$flags" lanai4 niam.img "^node 1: ok$"
old_style vipl_oldstyle "$flags" comet via.img "vipl_oldstyle: ok" \
  --expect-max-vi 3
old_style fm2_oldstyle "$fm2_all" comet via.img "^node 1: ok, 18 messages"

echo "sdk_install: OK"
