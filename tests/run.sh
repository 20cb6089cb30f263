#!/usr/bin/env bash
# README command 2: build and run the whole test suite, in the
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/).
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain/setup.sh --deps-only
cmake --preset asan
cmake --build --preset asan
ctest --preset asan -j "$(nproc)"
# The fuzz targets (docs/fuzzing.md), each for a bounded time from its
# seeds: clang and libFuzzer, in build-fuzz/.
cmake --preset fuzz
cmake --build --preset fuzz
ctest --preset fuzz -j "$(nproc)"
