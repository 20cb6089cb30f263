#!/usr/bin/env bash
# The Debian package as a user gets it: `cpack -G DEB` in the build directory
# makes nicemu_<version>_amd64.deb; unpacked with dpkg-deb -x into a fresh
# directory (where `apt install ./nicemu_*.deb` would put it under /; no
# chroot here), the tree must work on its own: the demo runs, an out-of-tree
# firmware and host programs (C++ with find_package, C-only CMake, plain cc
# with pkg-config) build against it, the man page and bash completion are
# there. Usage: deb_package.sh BUILD_DIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)

fail() {
  echo "deb_package: FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }
for t in cpack dpkg-deb dpkg; do
  command -v $t >/dev/null || { echo "deb_package: SKIP: no $t"; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/nicemu-deb-XXXXXX")
trap 'rm -rf "$work"' EXIT

run_logged() {
  local log=$work/log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "command failed: $*"
  fi
}
cache_value() {
  sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"
}

version=$(cache_value CMAKE_PROJECT_VERSION)
arch=$(dpkg --print-architecture)
deb=$work/pkg/nicemu_${version}_${arch}.deb

step "cpack -G DEB in $build"
start=$SECONDS
(cd "$build" && run_logged cpack -G DEB -B "$work/pkg")
[[ -f $deb ]] || fail "no $(basename "$deb"): $(ls "$work/pkg")"
echo "$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB, made in $((SECONDS - start)) s"
[[ $(dpkg-deb -f "$deb" Package) == nicemu ]] || fail "package name"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "package version"
[[ $(dpkg-deb -f "$deb" Architecture) == "$arch" ]] || fail "architecture"

step "unpack into a clean directory"
root=$work/root
run_logged dpkg-deb -x "$deb" "$root"
prefix=$root/usr
tool=$prefix/bin/nicemu
[[ -x $tool ]] || fail "no usr/bin/nicemu in the package"
for f in share/nicemu/models/lanai4.toml share/nicemu/firmware/hello.img \
  share/nicemu/cmake/nicemu-mipsel.cmake share/nicemu/wireshark/nicemu.lua \
  share/nicemu/examples/firmware-hello/CMakeLists.txt \
  share/bash-completion/completions/nicemu lib/libnicemu_host.a \
  lib/pkgconfig/nicemu.pc lib/cmake/nicemu/nicemuConfig.cmake \
  lib/nicemu/libnicemu_clock.so include/nicemu/host.h; do
  [[ -e $prefix/$f ]] || fail "no usr/$f in the package"
done

step "the package depends on what the binaries link"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# The package names alone, one a line.
depends_names=$(sed 's/([^)]*)//g; s/[|,]/\n/g' <<<"$depends" | tr -d ' ')
for bin in "$tool" "$prefix/lib/nicemu/libnicemu_clock.so"; do
  for lib in $(objdump -p "$bin" | awk '/NEEDED/ {print $2}'); do
    # A sanitizer build links its runtime: such a package is for tests only.
    [[ $lib == libasan* || $lib == libubsan* ]] && continue
    path=$(ldd "$bin" | awk -v l="$lib" '$1 == l {print $3; exit}')
    [[ -n $path ]] || fail "$lib, NEEDED by $(basename "$bin"), is not installed"
    # dpkg knows the file by one of its names (usrmerge: /lib or /usr/lib).
    pkg=$({ dpkg -S "$path" || dpkg -S "/usr$path" ||
      dpkg -S "${path#/usr}"; } 2>/dev/null | head -1 | cut -d: -f1)
    [[ -n $pkg ]] || fail "no Debian package provides $path ($lib)"
    grep -qxF "$pkg" <<<"$depends_names" ||
      fail "$lib ($pkg), NEEDED by $(basename "$bin"), is not in Depends"
  done
done

# Everything from here runs in a bare environment, as a user would after
# installing the package: the source and build trees are not to be used.
user_env=(env -i "PATH=$prefix/bin:/usr/bin:/bin" "HOME=$work" "TMPDIR=$work")

step "the installed nicemu finds its models relative to itself only"
models=$("${user_env[@]}" nicemu models) || fail "nicemu models failed"
for m in lanai4 martini comet uzura; do
  grep -q "^$m " <<<"$models" || fail "nicemu models does not list $m"
done
path_line=$(grep "search path:" <<<"$models")
[[ $path_line == *"$prefix/share/nicemu/models"* ]] ||
  fail "search path is not $prefix/share/nicemu/models: $path_line"
source_dir=$(cache_value CMAKE_HOME_DIRECTORY)
[[ $path_line != *"$source_dir"* ]] ||
  fail "the installed nicemu still searches the source tree: $path_line"

step "the README's first demo: flash demo.img, run it; and hello.img"
fw=$prefix/share/nicemu/firmware
run_logged "${user_env[@]}" nicemu flash "$fw/demo.img" --flash "$work/node0.flash"
out=$("${user_env[@]}" nicemu run -q --model lanai4 --flash "$work/node0.flash") ||
  fail "the demo failed: $out"
grep -q "^\[node0\] done: " <<<"$out" || fail "the demo printed: $out"
[[ $("${user_env[@]}" nicemu run -q --firmware "$fw/hello.img") == \
  "[node0] hello from node 0 of 1" ]] || fail "hello.img does not greet"

step "build the installed firmware-hello example out of tree"
cp -r "$prefix/share/nicemu/examples/firmware-hello" "$work/fw-src"
run_logged "${user_env[@]}" cmake -S "$work/fw-src" -B "$work/fw-build" \
  -G Ninja -DCMAKE_TOOLCHAIN_FILE="$prefix/share/nicemu/cmake/nicemu-mipsel.cmake"
run_logged "${user_env[@]}" cmake --build "$work/fw-build"
out=$("${user_env[@]}" nicemu run -q --firmware "$work/fw-build/hello.img") ||
  fail "the example firmware failed: $out"
[[ $out == $'[node0] hello from an out-of-tree firmware on node 0\n[node0] bye' ]] ||
  fail "the example firmware printed: $out"

# A sanitizer build's host library needs its flags at the users' link too.
cflags=$(cache_value CMAKE_C_FLAGS)
cxxflags=$(cache_value CMAKE_CXX_FLAGS)
ldflags=$(cache_value CMAKE_EXE_LINKER_FLAGS)
cat >"$work/prog.c" <<'C'
#include <nicemu/host.h>
#include <stdio.h>

int main(void) {
  uint32_t rank = 0, size = 0;
  if (nicemu_rank(&rank) != NICEMU_OK || nicemu_size(&size) != NICEMU_OK)
    return 1;
  printf("C program: rank %u of %u\n", (unsigned)rank, (unsigned)size);
  return 0;
}
C
run_c() { # EXE
  local out
  out=$("${user_env[@]}" nicemu run -n 2 --firmware "$fw/hello.img" -- "$1" \
    2>"$work/err") || { cat "$work/err" >&2; fail "$1 failed: $out"; }
  { grep -q "^C program: rank 0 of 2" <<<"$out" &&
    grep -q "^C program: rank 1 of 2" <<<"$out"; } || fail "$1 printed: $out"
  echo "$(basename "$1"): ok"
}

step "a C-only CMake project: project(x C), target_link_libraries(x nicemu::host)"
mkdir -p "$work/c-cmake"
cp "$work/prog.c" "$work/c-cmake/prog.c"
cat >"$work/c-cmake/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(c_only C)
find_package(nicemu REQUIRED)
add_executable(c_only prog.c)
target_link_libraries(c_only nicemu::host)
CMAKE
run_logged "${user_env[@]}" cmake -S "$work/c-cmake" -B "$work/c-cmake/b" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$cflags" \
  -DCMAKE_EXE_LINKER_FLAGS="$ldflags"
grep -q "^CMAKE_CXX_COMPILER:" "$work/c-cmake/b/CMakeCache.txt" &&
  fail "the C-only project enabled C++"
run_logged "${user_env[@]}" cmake --build "$work/c-cmake/b"
run_c "$work/c-cmake/b/c_only"

step "plain cc with pkg-config"
pc=$("${user_env[@]}" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
  pkg-config --cflags --libs nicemu) || fail "pkg-config does not know nicemu"
# shellcheck disable=SC2086 # the flags are words
run_logged "${user_env[@]}" cc $cflags "$work/prog.c" -o "$work/c-pc" $pc $ldflags
run_c "$work/c-pc"

step "a C++ host program with find_package(nicemu)"
mkdir -p "$work/cxx"
cat >"$work/cxx/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(cxx_probe CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(nicemu REQUIRED)
add_executable(p main.cpp)
target_link_libraries(p nicemu::host)
CMAKE
cat >"$work/cxx/main.cpp" <<'CXX'
#include <nicemu/host.hpp>

#include <cstdio>

int main() { std::printf("nicemu host library %s\n", nicemu::host::version()); }
CXX
run_logged "${user_env[@]}" cmake -S "$work/cxx" -B "$work/cxx/b" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$cxxflags" \
  -DCMAKE_EXE_LINKER_FLAGS="$ldflags"
run_logged "${user_env[@]}" cmake --build "$work/cxx/b"
[[ $("$work/cxx/b/p") == "nicemu host library $version" ]] ||
  fail "the C++ host program printed: $("$work/cxx/b/p")"

step "man page and bash completion"
man=$prefix/share/man/man1/nicemu.1.gz
[[ -f $man ]] || man=$prefix/share/man/man1/nicemu.1
help2man=$(cache_value NICEMU_HELP2MAN)
if [[ -n $help2man && $help2man != *NOTFOUND ]]; then
  [[ -f $man ]] || fail "no usr/share/man/man1/nicemu.1"
  page=$(if [[ $man == *.gz ]]; then zcat "$man"; else cat "$man"; fi)
  grep -q '^\.TH NICEMU "1"' <<<"$page" || fail "nicemu.1 has no .TH line"
  grep -q 'bench' <<<"$page" || fail "nicemu.1 does not list the subcommands"
  grep -q 'NICEMU_MODEL_PATH' <<<"$page" || fail "nicemu.1 misses its ENVIRONMENT"
else
  echo "no help2man at configure time: no man page to check"
fi
completion=$prefix/share/bash-completion/completions/nicemu
complete_words() { # WORDS...: what TAB offers after them
  # shellcheck disable=SC2016 # expanded by the inner bash
  "${user_env[@]}" bash -c 'source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}; _nicemu; printf "%s\n" "${COMPREPLY[@]}"' \
    bash "$completion" "$@"
}
[[ $(complete_words nicemu r | sort | tr '\n' ' ') == "regs replay run " ]] ||
  fail "nicemu r<TAB>: $(complete_words nicemu r)"
[[ $(complete_words nicemu run --fi) == "--firmware" ]] ||
  fail "nicemu run --fi<TAB>: $(complete_words nicemu run --fi)"
# (Captured first: grep -q ending the pipe early would fail it, pipefail.)
offered=$(complete_words nicemu run --model "")
{ grep -qx lanai4 <<<"$offered" && grep -qx martini:D <<<"$offered"; } ||
  fail "nicemu run --model <TAB> offers: $offered"
offered=$(complete_words nicemu bench "")
grep -qx niam <<<"$offered" || fail "nicemu bench <TAB> offers: $offered"

echo "deb_package: OK in $SECONDS s"
