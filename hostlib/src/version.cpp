#include "nicemu/host.hpp"

namespace nicemu::host {

const char *version() {
  return NICEMU_VERSION;
}

} // namespace nicemu::host
