#include "boards/martini/host_windows.hpp"

#include "nicemu/martini.h"

namespace nicemu::martini {

namespace {

HostBusResult refused(Time at, const char *why) {
  return {false, 0, at, why};
}

bool sized(uint64_t offset, unsigned size) {
  return (size == 1 || size == 2 || size == 4 || size == 8) &&
         offset % size == 0;
}

// A send's reply carries the credits left, which the host library uses to
// know when it may post stores without waiting (it costs no virtual time).
HostBusCompletion with_credits(OtfEngine &otf, HostBusCompletion done) {
  return [&otf, done = std::move(done)](const HostBusResult &r) {
    HostBusResult with = r;
    with.value = *otf.status_word(NICEMU_MARTINI_STATUS_CREDITS);
    return done(with);
  };
}

} // namespace

void KickWindow::read(uint64_t, unsigned, Time at,
                      const HostBusCompletion &done) {
  done(refused(at, "AOTF kick pages are write-only"));
}

void KickWindow::write(uint64_t offset, unsigned size, uint64_t value, Time at,
                       HostBusCompletion done) {
  if (!sized(offset, size))
    return (void)done(refused(
        at, "an AOTF store is 1, 2, 4 or 8 bytes, aligned to its size"));
  otf_.aotf_store(port_.process(), uint32_t(offset >> 12),
                  uint32_t(offset & 0xFFF), size, value, at,
                  with_credits(otf_, std::move(done)));
}

void LlcmWindow::read(uint64_t offset, unsigned size, Time at,
                      const HostBusCompletion &done) {
  uint64_t value = 0;
  if (!sized(offset, size))
    return (void)done(refused(at, "LLCM loads are 1, 2, 4 or 8 bytes, "
                                  "aligned to their size"));
  if (!otf_.llcm_allowed(port_.process(), offset, size))
    return (void)done(refused(at, "not in an LLCM region of the process's "
                                  "group"));
  card_.card_read(otf_.llcm_base() + uint32_t(offset), &value, size);
  HostBusResult r{true, value, at + otf_.figures().load, {}};
  r.stable_until = otf_.llcm_quiet_until(at, port_.peers(), port_.process());
  done(r);
}

void LlcmWindow::write(uint64_t offset, unsigned size, uint64_t value, Time at,
                       HostBusCompletion done) {
  if (!sized(offset, size))
    return (void)done(refused(at, "LLCM stores are 1, 2, 4 or 8 bytes, "
                                  "aligned to their size"));
  if (!otf_.llcm_allowed(port_.process(), offset, size))
    return (void)done(refused(at, "not in an LLCM region of the process's "
                                  "group"));
  card_.card_write(otf_.llcm_base() + uint32_t(offset), &value, size);
  done({true, 0, at + otf_.figures().store, {}});
}

void BotfWindows::read(uint64_t, unsigned, Time at,
                       const HostBusCompletion &done) {
  done(refused(at, "BOTF windows are write-only (write-combined)"));
}

void BotfWindows::write(uint64_t offset, unsigned size, uint64_t value, Time at,
                        HostBusCompletion done) {
  if (!sized(offset, size))
    return (void)done(refused(at, "a store is 1, 2, 4 or 8 bytes, aligned"));
  uint8_t bytes[8];
  for (unsigned i = 0; i < size; ++i)
    bytes[i] = uint8_t(value >> (8 * i));
  otf_.botf_write(port_.process(),
                  uint32_t(offset / NICEMU_MARTINI_BOTF_STRIDE),
                  uint32_t(offset % NICEMU_MARTINI_BOTF_STRIDE),
                  std::span<const uint8_t>(bytes, size));
  done({true, 0, at + otf_.figures().store, {}});
}

// One write-combined burst: the host's write-combining buffers drain a
// 32-byte line per bus transaction, each charged one uncached store.
void BotfWindows::write_block(uint64_t offset, std::span<const uint8_t> bytes,
                              Time at, const HostBusCompletion &done) {
  uint32_t window = uint32_t(offset / NICEMU_MARTINI_BOTF_STRIDE);
  uint32_t in = uint32_t(offset % NICEMU_MARTINI_BOTF_STRIDE);
  if (offset % 8 || in + bytes.size() > NICEMU_MARTINI_BOTF_STRIDE)
    return (void)done(refused(at, "a burst starts 8-byte aligned and stays "
                                  "inside one BOTF window"));
  otf_.botf_write(port_.process(), window, in, bytes);
  Time lines = (bytes.size() + 31) / 32;
  done({true, 0, at + lines * otf_.figures().store, {}});
}

void BotfKickWindow::read(uint64_t offset, unsigned size, Time at,
                          const HostBusCompletion &done) {
  if (size != 8 || offset % 8)
    return (void)done(refused(at, "a BOTF status is one aligned 8-byte load"));
  done({true,
        otf_.botf_status(uint32_t(offset / 8)),
        at + otf_.figures().load,
        {}});
}

void BotfKickWindow::write(uint64_t offset, unsigned size, uint64_t, Time at,
                           HostBusCompletion done) {
  if (size != 8 || offset % 8)
    return (void)done(refused(at, "a BOTF kick is one aligned 8-byte store"));
  otf_.botf_kick(port_.process(), uint32_t(offset / 8), at,
                 with_credits(otf_, std::move(done)));
}

void StatusWindow::read(uint64_t offset, unsigned size, Time at,
                        const HostBusCompletion &done) {
  std::optional<uint64_t> word = otf_.status_word(uint32_t(offset));
  if (size != 8 || !word)
    return (void)done(refused(at, "the status page is read in aligned "
                                  "8-byte words"));
  done({true, *word, at + otf_.figures().load, {}});
}

void StatusWindow::write(uint64_t, unsigned, uint64_t, Time at,
                         HostBusCompletion done) {
  done(refused(at, "the status page is read-only"));
}

const char *BankWindow::refusal(uint64_t offset, uint64_t len) const {
  if (!otf_.bank_allowed(port_.process(), bank_))
    return "the SO-DIMM bank belongs to another process group";
  const SodimmBank &b = otf_.bank(bank_);
  if (!b.faces_host())
    return "the SO-DIMM bank faces the card (switch it to the host side)";
  if (offset + len > b.bytes())
    return "past the SO-DIMM bank";
  return nullptr;
}

void BankWindow::read(uint64_t offset, unsigned size, Time at,
                      const HostBusCompletion &done) {
  if (!sized(offset, size))
    return (void)done(refused(at, "a bank load is 1, 2, 4 or 8 aligned "
                                  "bytes"));
  if (const char *why = refusal(offset, size))
    return (void)done(refused(at, why));
  uint64_t value = 0;
  otf_.bank(bank_).read(offset, &value, size);
  done({true, value, at + otf_.figures().load, {}});
}

void BankWindow::write(uint64_t offset, unsigned size, uint64_t value, Time at,
                       HostBusCompletion done) {
  if (!sized(offset, size))
    return (void)done(refused(at, "a bank store is 1, 2, 4 or 8 aligned "
                                  "bytes"));
  if (const char *why = refusal(offset, size))
    return (void)done(refused(at, why));
  otf_.bank(bank_).write(offset, &value, size);
  done({true, 0, at + otf_.figures().store, {}});
}

void BankWindow::read_block(uint64_t offset, std::span<uint8_t> out, Time at,
                            const HostBusCompletion &done) {
  if (const char *why = refusal(offset, out.size()))
    return (void)done(refused(at, why));
  otf_.bank(bank_).read(offset, out.data(), out.size());
  done({true, 0, at + Time(out.size()) * otf_.figures().bank_ps_per_byte, {}});
}

void BankWindow::write_block(uint64_t offset, std::span<const uint8_t> bytes,
                             Time at, const HostBusCompletion &done) {
  if (const char *why = refusal(offset, bytes.size()))
    return (void)done(refused(at, why));
  otf_.bank(bank_).write(offset, bytes.data(), bytes.size());
  done(
      {true, 0, at + Time(bytes.size()) * otf_.figures().bank_ps_per_byte, {}});
}

void BankSidesWindow::read(uint64_t offset, unsigned size, Time at,
                           const HostBusCompletion &done) {
  if (size != 8 || offset % 8 || offset / 8 > 1)
    return (void)done(refused(at, "a bank side is one aligned 8-byte word"));
  done({true,
        otf_.bank(uint32_t(offset / 8)).side(),
        at + otf_.figures().load,
        {}});
}

void BankSidesWindow::write(uint64_t offset, unsigned size, uint64_t value,
                            Time at, HostBusCompletion done) {
  if (size != 8 || offset % 8 || offset / 8 > 1 ||
      (value != NICEMU_MARTINI_SIDE_HOST && value != NICEMU_MARTINI_SIDE_NIC))
    return (void)done(refused(at, "a bank switch is one aligned 8-byte "
                                  "store of 0 (host) or 1 (card)"));
  if (!otf_.bank_allowed(port_.process(), uint32_t(offset / 8)))
    return (void)done(refused(at, "the SO-DIMM bank belongs to another "
                                  "process group"));
  otf_.bank(uint32_t(offset / 8)).switch_to(uint32_t(value));
  done({true, 0, at + otf_.figures().store, {}});
}

void RdmaWindow::read(uint64_t offset, unsigned size, Time at,
                      const HostBusCompletion &done) {
  std::optional<uint64_t> word = otf_.rdma_word(uint32_t(offset));
  if (size != 8 || !word)
    return (void)done(refused(at, "the RDMA page is read in aligned 8-byte "
                                  "words"));
  done({true, *word, at + otf_.figures().load, {}});
}

void RdmaWindow::write(uint64_t offset, unsigned size, uint64_t value, Time at,
                       HostBusCompletion done) {
  if (size != 8 || offset % 8)
    return (void)done(refused(at, "the RDMA page is written in aligned "
                                  "8-byte words"));
  std::string why =
      otf_.rdma_store(port_.process(), uint32_t(offset), value, at);
  if (!why.empty())
    return (void)done({false, 0, at, why});
  done({true, 0, at + otf_.figures().store, {}});
}

void JoinWindow::read(uint64_t offset, unsigned size, Time at,
                      const HostBusCompletion &done) {
  if (size != 8 || offset != 0)
    return (void)done(refused(at, "the join word is one 8-byte word"));
  const OtfEngine::Member *m = otf_.member(port_.process());
  done({true,
        m ? uint64_t(m->pgid | m->pid << 8) : ~0ull,
        at + otf_.figures().load,
        {}});
}

void JoinWindow::write(uint64_t offset, unsigned size, uint64_t value, Time at,
                       HostBusCompletion done) {
  if (size != 8 || offset != 0 || (value & 0xFF) >= 64 ||
      ((value >> 8) & 0xFF) >= NICEMU_OTF_ANY_PID)
    return (void)done(refused(at, "join: one 8-byte store of PGID (0-63) | "
                                  "PID (0-254) << 8"));
  otf_.join(port_.process(), uint32_t(value & 0xFF),
            uint32_t((value >> 8) & 0xFF));
  done({true, 0, at + otf_.figures().store, {}});
}

} // namespace nicemu::martini
