#!/usr/bin/env bash
# README command 2: build and run the whole test suite, in the
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/); then
# the threads' tests under ThreadSanitizer and the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain/setup.sh --deps-only
cmake --preset asan
cmake --build --preset asan
ctest --preset asan -j "$(nproc)"
# The tests of the cores' threads (--threads) under ThreadSanitizer, in
# build-tsan/ (docs/architecture.md, "Threads"); its e2e driver holds only
# the files with such tests (NICEMU_E2E_ONLY in CMakePresets.json). The
# firmware images are build-asan's (NICEMU_FIRMWARE_FROM): the same sources
# make the same images, whatever the emulator's sanitizer.
cmake --preset tsan -DNICEMU_FIRMWARE_FROM="$PWD/build-asan"
cmake --build --preset tsan
ctest --preset tsan -j "$(nproc)"
# The fuzz targets (docs/fuzzing.md), each for a bounded time from its
# seeds: clang and libFuzzer, in build-fuzz/, with build-asan's firmware
# (so this build needs neither the firmware nor the command line).
cmake --preset fuzz -DNICEMU_FIRMWARE_FROM="$PWD/build-asan"
cmake --build --preset fuzz
ctest --preset fuzz -j "$(nproc)"
