// Unicorn 2.0.1's slow guest stores, and the workaround in
// unicorn_store_fix.cpp.
#pragma once

#include <cstdint>

namespace nicemu {

// Whether the linked Unicorn gets the replacement (2.0.x does).
bool unicorn_store_fix_applies();

// How many page collections the replacement has skipped (one per guest store
// to RAM in 2.0.1): tests use it to see that the replacement is in effect.
uint64_t unicorn_store_fix_uses();

} // namespace nicemu
