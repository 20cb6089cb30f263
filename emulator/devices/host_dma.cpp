#include "devices/host_dma.hpp"

#include "devices/host_memory.hpp"
#include "nicemu/regs.h"
#include "observe/run_events.hpp"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <vector>

namespace nicemu {

std::unique_ptr<HostDmaEngine> HostDmaEngine::from_model(DeviceHost &host,
                                                         const Model &model) {
  return std::make_unique<HostDmaEngine>(
      host,
      DmaTiming{model.timing("host_dma.gap_to_sram"),
                model.timing("host_dma.per_word_to_sram")},
      DmaTiming{model.timing("host_dma.gap_to_host"),
                model.timing("host_dma.per_word_to_host")});
}

std::vector<ModelKey> HostDmaEngine::model_keys() {
  const char *me = "host DMA engine";
  return {{"timing.host_dma.gap_to_sram", KeyUse::Required, me},
          {"timing.host_dma.per_word_to_sram", KeyUse::Required, me},
          {"timing.host_dma.gap_to_host", KeyUse::Required, me},
          {"timing.host_dma.per_word_to_host", KeyUse::Required, me},
          {"timing.host_dma.startup", KeyUse::Reference, me},
          {"params.host_dma.peak_to_sram_MBps", KeyUse::Reference, me,
           kBandwidthMBps},
          {"params.host_dma.peak_to_host_MBps", KeyUse::Reference, me,
           kBandwidthMBps}};
}

HostDmaEngine::HostDmaEngine(DeviceHost &host, DmaTiming to_card,
                             DmaTiming to_host)
    : Device(RegisterLayout::of("HDMA")), host_(host), to_card_(to_card),
      to_host_(to_host) {
  registers()
      .bind(NICEMU_HDMA_HOST_ADDR, host_addr_)
      .bind(NICEMU_HDMA_CARD_ADDR, card_addr_)
      .bind(NICEMU_HDMA_LENGTH, length_)
      .on_write(NICEMU_HDMA_CTRL,
                [this](uint64_t v) {
                  if (v & NICEMU_DMA_START)
                    start(uint32_t(v));
                })
      .write_one_to_clear(NICEMU_HDMA_STATUS, status_,
                          NICEMU_DMA_DONE | NICEMU_DMA_ERROR)
      .on_read(NICEMU_HDMA_ERROR, [this] { return error_; })
      .stable_read(NICEMU_HDMA_ERROR);
}

// A refused transfer moves nothing and reports why; the engine stays usable.
void HostDmaEngine::fail(uint32_t code) {
  error_ = code;
  status_ |= NICEMU_DMA_ERROR;
}

void HostDmaEngine::start(uint32_t ctrl) {
  if (status_ & NICEMU_DMA_BUSY)
    return fail(NICEMU_DMA_EBUSY);
  bool to_host = (ctrl & NICEMU_DMA_TO_HOST) != 0;
  if (length_ == 0 || length_ % 4 || host_addr_ % 4 || card_addr_ % 4 ||
      length_ > kMaxLength)
    return fail(NICEMU_DMA_ELENGTH);
  if (!host_.host_memory())
    return fail(NICEMU_DMA_ENOHOST);
  if (!host_.host_memory()->registered(host_addr_, length_))
    return fail(NICEMU_DMA_EHOST);
  if (!host_.card_range(card_addr_, length_))
    return fail(NICEMU_DMA_ECARD);
  to_host_dir_ = to_host;
  irq_ = (ctrl & NICEMU_DMA_IRQ) != 0;
  xfer_host_ = host_addr_;
  xfer_card_ = card_addr_;
  xfer_length_ = length_;
  status_ = (status_ & ~NICEMU_DMA_DONE) | NICEMU_DMA_BUSY;
  const DmaTiming &t = to_host ? to_host_ : to_card_;
  xfer_start_ = host_.now();
  Time done = xfer_start_ + t.gap + t.per_word * (length_ / 4);
  xfer_done_ = done;
  host_.scheduler().schedule(
      done, "hdma: done", [this] { complete(); }, 0, event_tag(0));
}

void HostDmaEngine::save_state(StateWriter &out) const {
  out.section("hdma");
  fields(*this, out);
}

void HostDmaEngine::load_state(StateReader &in) {
  in.section("hdma");
  fields(*this, in);
  if (xfer_length_ > kMaxLength)
    in.fail("a host DMA transfer of " + std::to_string(xfer_length_) +
            " bytes");
}

void HostDmaEngine::restore_event(Scheduler &scheduler, const SavedEvent &e) {
  scheduler.restore(e, "hdma: done", [this] { complete(); });
}

// A transfer to the host in flight lands when it is done. Any later one
// starts no earlier than the core can start it, nor before the one in
// flight ends (the engine refuses a start while busy), and lands a gap and
// one word after its start.
// Only a transfer started before `now` counts as in flight: whether the core
// has already run past `now` and started one depends on how its slices fell
// (a debugger's, or a replay's under one), and the answer must not; a later
// start lands no earlier than one at `now` would.
Time HostDmaEngine::earliest_host_write(Time now, Time first_start) const {
  const bool busy = (status_ & NICEMU_DMA_BUSY) != 0 && xfer_start_ < now;
  if (busy && to_host_dir_)
    return xfer_done_;
  Time start = busy ? std::max(first_start, xfer_done_) : first_start;
  if (start == kTimeNever) // a core asleep with nothing to wake it
    return kTimeNever;
  return start + to_host_.gap + to_host_.per_word;
}

void HostDmaEngine::complete() {
  std::vector<uint8_t> data(xfer_length_);
  bool ok;
  if (to_host_dir_)
    ok = host_.card_read(xfer_card_, data.data(), xfer_length_) &&
         host_.host_memory()->write(xfer_host_, data.data(), xfer_length_);
  else
    ok = host_.host_memory()->read(xfer_host_, data.data(), xfer_length_) &&
         host_.card_write(xfer_card_, data.data(), xfer_length_);
  status_ &= ~NICEMU_DMA_BUSY;
  if (ok)
    status_ |= NICEMU_DMA_DONE;
  else // the host deregistered the region while the transfer was in flight
    fail(NICEMU_DMA_EHOST);
  if (RunEvents *events = host_.events())
    events->dma_transfer(host_.node_id(), DmaEngineKind::HostDma, xfer_start_,
                         host_.now(), xfer_length_, to_host_dir_);
  if (irq_)
    host_.raise_irq(NICEMU_IRQ_HDMA);
}

} // namespace nicemu
