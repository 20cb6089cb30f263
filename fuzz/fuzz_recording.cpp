// Fuzz target: a recording's bytes as `nicemu replay` reads them once
// unzipped (host/host_tape.hpp). A recording is read or refused with
// nicemu::Error; one that is read is played against empty channels and
// host memory: every host's calls posted, reads and replies compared.
#include "host/host_tape.hpp"
#include "nicemu/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace nicemu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  HostTape::Contents contents;
  try {
    HostTape tape = HostTape::parse(bytes, "fuzz.nrec", contents);
    std::vector<uint8_t> memory(64);
    for (uint32_t rank = 0; rank < tape.ranks() && rank < 64; ++rank) {
      auto cb = std::make_unique<channel::ControlBlock>();
      for (int call = 0; call < 64 && tape.feed(rank, *cb); ++call) {
        // As the emulator answers: read the watched word, reply.
        tape.arena_read(rank, uint64_t(call), uint64_t(call % 16) * 4,
                        memory.data() + (call % 16) * 4, 4);
        channel::Reply reply;
        reply.time = uint64_t(call);
        tape.replied(rank, reply);
        cb->state.store(uint32_t(channel::HostState::Computing));
      }
      int status = 0;
      (void)tape.ended(rank, status);
    }
    (void)tape.unplayed();
    (void)tape.divergence();
  } catch (const Error &) {
  }
  return 0;
}
