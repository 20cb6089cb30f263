// nicemu host library (C++). This stage offers the library version only; the
// NIC channel and communication APIs come with emulated clusters.
#pragma once

namespace nicemu::host {

// The nicemu release this library belongs to, e.g. "0.1.0".
const char *version();

} // namespace nicemu::host
