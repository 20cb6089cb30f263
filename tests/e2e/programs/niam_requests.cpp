// Host program of the NI-AM cycle-budget tests (test_niam_budgets.cpp).
//   niam_requests_prog [N]     posts N requests (default 200) that name the
//                              empty NIC handler (h_nop), one every 50 us of
//                              computation, so the NIC serves each on its
//                              own (the budget is one request's path, not a
//                              queue's); then a barrier, which the NIC serves
//                              after them (requests are served in order).
//   niam_requests_prog refused points the mailbox's request block at host
//                              memory nobody registered, so the NIC's fetch
//                              DMA is refused at its start; the NIC must
//                              count the request as bad and carry on.
// Run with: nicemu run -n 1 --firmware niam.img -- niam_requests_prog ...
#include <nicemu/host.hpp>
#include <nicemu/niam_protocol.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace host = nicemu::host;

namespace {

const uint32_t kNoArgs[6] = {};

int empty_requests(int n) {
  for (int i = 0; i < n; ++i) {
    host::am_request(NIAM_H_NOP, kNoArgs);
    host::compute(50'000'000); // 50 us
  }
  host::barrier();
  uint32_t bad = host::am_bad_packets(), unknown = host::am_unknown_handlers();
  std::printf("rank %u: %d empty requests, bad %u, unknown %u\n", host::rank(),
              n, bad, unknown);
  return bad == 0 && unknown == 0 ? 0 : 1;
}

int refused_fetch() {
  host::barrier(); // the request block is set up and works
  uint32_t block_word = host::mailbox() + 4 * NIAM_BOX_BLOCK;
  uint32_t block = host::pio_read(block_word);
  host::pio_write(block_word, 0x1000); // a page nobody registered
  host::am_request(NIAM_H_NOP, kNoArgs);
  host::compute(200'000'000); // 200 us: the NIC tries and gives up
  uint32_t bad = host::am_bad_packets();
  host::pio_write(block_word, block);
  host::barrier(); // the NIC still serves requests
  std::printf("rank %u: refused fetch counted as bad: %u; barrier after it "
              "completed\n",
              host::rank(), bad);
  return bad == 1 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "refused") == 0)
    return refused_fetch();
  int n = argc > 1 ? std::atoi(argv[1]) : 200;
  return n < 1 ? 2 : empty_requests(n);
}
