#include "boards/martini/sodimm.hpp"

#include "sim/state_archive.hpp"

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

void SodimmBank::save_state(StateWriter &out) const {
  out.u32(side_);
  std::vector<uint64_t> written;
  for (const auto &[page, bytes] : pages_)
    written.push_back(page);
  std::sort(written.begin(), written.end()); // the same bytes every time
  out.u64(written.size());
  for (uint64_t page : written) {
    out.u64(page);
    out.raw(pages_.at(page)->data(), kPage);
  }
}

void SodimmBank::load_state(StateReader &in) {
  side_ = in.u32();
  if (side_ != NICEMU_MARTINI_SIDE_HOST && side_ != NICEMU_MARTINI_SIDE_NIC)
    in.fail("a SO-DIMM bank facing side " + std::to_string(side_));
  pages_.clear();
  for (uint64_t n = in.count(bytes_ / kPage); n--;) {
    uint64_t page = in.u64();
    if (page >= bytes_ / kPage || pages_.count(page))
      in.fail("a SO-DIMM bank page " + std::to_string(page) +
              " twice or past the bank");
    auto &bytes = pages_[page];
    bytes = std::make_unique<std::array<uint8_t, kPage>>();
    in.raw(bytes->data(), kPage);
  }
}

} // namespace nicemu::martini
