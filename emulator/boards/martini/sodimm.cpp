#include "boards/martini/sodimm.hpp"

#include <algorithm>
#include <cstring>

namespace nicemu::martini {

bool SodimmBank::read(uint64_t offset, void *out, uint64_t len) const {
  if (offset > bytes_ || len > bytes_ - offset)
    return false;
  auto *to = static_cast<uint8_t *>(out);
  while (len > 0) {
    uint64_t in_page = offset % kPage;
    uint64_t n = std::min(len, kPage - in_page);
    auto it = pages_.find(offset / kPage);
    if (it == pages_.end())
      std::memset(to, 0, n); // never written: zero
    else
      std::memcpy(to, it->second->data() + in_page, n);
    to += n;
    offset += n;
    len -= n;
  }
  return true;
}

bool SodimmBank::write(uint64_t offset, const void *in, uint64_t len) {
  if (offset > bytes_ || len > bytes_ - offset)
    return false;
  auto *from = static_cast<const uint8_t *>(in);
  while (len > 0) {
    uint64_t in_page = offset % kPage;
    uint64_t n = std::min(len, kPage - in_page);
    auto &page = pages_[offset / kPage];
    if (!page)
      page = std::make_unique<std::array<uint8_t, kPage>>();
    std::memcpy(page->data() + in_page, from, n);
    from += n;
    offset += n;
    len -= n;
  }
  return true;
}

} // namespace nicemu::martini
