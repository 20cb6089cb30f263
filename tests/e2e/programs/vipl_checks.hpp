// What the VIPL test programs (vipl_pair.cpp, vipl_loss.cpp,
// vipl_isolation.cpp) share: a failed check prints the rank, the scenario
// and the line, and is counted (the program prints its verdict at the end);
// a network address built the way programs build them; the card's
// counters; the word a receive brought.
#pragma once

#include <nicemu/host.hpp>
#include <nicemu/vipl.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

inline uint32_t rank_ = 0;
inline const char *scenario = "";
inline int failures = 0;

inline void fail(int line, const char *format, ...) {
  ++failures;
  std::printf("rank %u: %s: line %d: ", rank_, scenario, line);
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
}

#define RC(call, want)                                                         \
  do {                                                                         \
    VIP_RETURN got_ = (call);                                                  \
    if (got_ != (want))                                                        \
      fail(__LINE__, "%s: got %d, want %d", #call, int(got_), int(want));      \
  } while (0)
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      fail(__LINE__, "%s does not hold", #cond);                               \
  } while (0)
#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    unsigned long long a_ = (unsigned long long)(a),                           \
                       b_ = (unsigned long long)(b);                           \
    if (a_ != b_)                                                              \
      fail(__LINE__, "%s == %s: 0x%llx vs 0x%llx", #a, #b, a_, b_);            \
  } while (0)

// A network address (malloc'd, as programs do): a host and a
// discriminator.
inline VIP_NET_ADDRESS *net_address(VIP_NIC_HANDLE nic, const char *hostname,
                                    const char *disc) {
  size_t dl = std::strlen(disc);
  auto *a = static_cast<VIP_NET_ADDRESS *>(
      std::malloc(sizeof(VIP_NET_ADDRESS) + 6 + dl));
  a->HostAddressLen = 6;
  a->DiscriminatorLen = uint16_t(dl);
  RC(VipNSGetHostByName(nic, const_cast<char *>(hostname), a, 0), VIP_SUCCESS);
  std::memcpy(a->HostAddress + 6, disc, dl);
  return a;
}

// The card's counters (VIAFW_BOX_STAT_*), read from its mailbox by PIO.
inline uint32_t card_counter(uint32_t word) {
  return nicemu::host::pio_read(nicemu::host::mailbox() + 4 * word);
}

// The word a one-word receive brought; its status must be a plain receive.
inline uint32_t received_word(const VIP_DESCRIPTOR *d) {
  CHECK_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE);
  uint32_t w;
  std::memcpy(&w, d->DS[0].Local.Data.Address, 4);
  return w;
}

// The program's last line and exit status.
inline int verdict() {
  if (failures)
    std::printf("rank %u: %s: %d failures\n", rank_, scenario, failures);
  else
    std::printf("rank %u: %s: ok\n", rank_, scenario);
  return failures ? 1 : 0;
}
