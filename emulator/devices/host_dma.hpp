// HDMA: the host DMA engine. Moves 32-bit words between registered host
// memory and card memory; a transfer takes the model's gap plus a per-word
// time for its direction, and its data lands when it completes.
#pragma once

#include "devices/device.hpp"
#include "nicemu/model.hpp"

#include <memory>
#include <vector>

namespace nicemu {

struct DmaTiming {
  Time gap = 0;
  Time per_word = 0;
};

class HostDmaEngine final : public Device {
public:
  HostDmaEngine(DeviceHost &host, DmaTiming to_card, DmaTiming to_host);
  // The engine a model's [timing.host_dma] describes.
  static std::unique_ptr<HostDmaEngine> from_model(DeviceHost &host,
                                                   const Model &model);
  // The model keys it reads.
  static std::vector<ModelKey> model_keys();

  static constexpr uint32_t kMaxLength = 1u << 20;

  Time earliest_host_write(Time now, Time first_start) const override;

  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;

private:
  template <class Self, class Archive> static void fields(Self &s, Archive &a) {
    a.fields(s.host_addr_, s.card_addr_, s.length_, s.status_, s.error_,
             s.to_host_dir_, s.irq_, s.xfer_host_, s.xfer_card_, s.xfer_length_,
             s.xfer_start_, s.xfer_done_);
  }
  void start(uint32_t ctrl);
  void fail(uint32_t code);
  void complete();

  DeviceHost &host_;
  DmaTiming to_card_, to_host_;
  uint32_t host_addr_ = 0, card_addr_ = 0, length_ = 0;
  uint32_t status_ = 0, error_ = 0;
  // The transfer in flight.
  bool to_host_dir_ = false, irq_ = false;
  uint32_t xfer_host_ = 0, xfer_card_ = 0, xfer_length_ = 0;
  Time xfer_start_ = 0, xfer_done_ = 0;
};

} // namespace nicemu
