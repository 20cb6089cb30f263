// Host side of the host_echo firmware: ten requests through the mailbox,
// each answered by the NIC with host DMA; prints what it saw, in virtual
// microseconds.
#include <nicemu/host.hpp>

#include <cstdio>

namespace host = nicemu::host;

int main() {
  auto *data = static_cast<uint32_t *>(host::alloc(64));
  auto *flag = static_cast<volatile uint32_t *>(host::alloc(4));
  uint32_t box = host::mailbox();
  double first = 0, last = 0;
  for (uint32_t round = 1; round <= 10; ++round) {
    for (uint32_t i = 0; i < 16; ++i)
      data[i] = round * 100 + i;
    double start = host::now_us();
    host::pio_write(box + 4, host::bus_address(data));
    host::pio_write(box + 8, 64);
    host::pio_write(box + 12, host::bus_address(const_cast<uint32_t *>(flag)));
    host::pio_write(box, round);
    host::wait_word(flag, ~0u, round);
    last = host::now_us() - start;
    if (round == 1)
      first = last;
    for (uint32_t i = 0; i < 16; ++i)
      if (data[i] != round * 100 + i + 1) {
        std::printf("rank %u: round %u word %u is %u\n", host::rank(), round, i,
                    data[i]);
        return 1;
      }
  }
  std::printf("rank %u of %u: 10 echoes, first %.3f us, last %.3f us\n",
              host::rank(), host::size(), first, last);
  return 0;
}
