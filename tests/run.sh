#!/usr/bin/env bash
# README command 2: build and run the whole test suite, in the
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/).
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain/setup.sh --deps-only
cmake --preset asan
cmake --build --preset asan
ctest --preset asan -j "$(nproc)"
