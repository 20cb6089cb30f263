// uzura: the UZURA 10GbE card with FPGA offload on PCI-X (docs/uzura.md).
// The FPGA's fixed data path is the ENGINE device (engine.hpp); the host
// reaches the card's registers (doorbell, endpoint, completion counts) and
// its memories (the firmware's, and the 4 MB translation SRAM) by PIO.
#include "boards/board_list.hpp"
#include "boards/common/shared_parts.hpp"
#include "boards/uzura/engine.hpp"
#include "fabric/fabric_params.hpp"
#include "nicemu/error.hpp"

#include <algorithm>

namespace nicemu {

namespace {

using uzura::Engine;
using uzura::Figures;

HostBusResult refused(Time at, const char *why) {
  return {false, 0, at, why};
}

// The host's registers (nicemu/uzura_card.h, UZ_REG_*): 32-bit words. A
// read of a count is a poll of a card register: it occupies the bus.
class HostRegisters final : public HostWindow {
public:
  explicit HostRegisters(Engine &engine) : engine_(engine) {}

  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override {
    const Figures &f = engine_.figures();
    if (size != 4 || offset % 4)
      return (void)done(refused(at, "UZURA registers are 32-bit words"));
    switch (offset) {
    case UZ_REG_CQ_COUNT:
    case UZ_REG_RX_COUNT: {
      // Read when the poll has had the bus (it may wait for a DMA).
      Time end = engine_.bus_poll(at, f.poll_nic_register);
      bool cq = offset == UZ_REG_CQ_COUNT;
      engine_.at_time(end, [this, cq, end, done] {
        uint32_t v = cq ? engine_.cq_count() : engine_.rx_count();
        done({true, v, end, {}});
      });
      return;
    }
    case UZ_REG_STATUS:
      return (void)done({true, engine_.host_status(), at + f.pio_read, {}});
    case UZ_REG_CMD_FETCHED:
      return (void)done({true, engine_.cmd_fetched(), at + f.pio_read, {}});
    default:
      return (void)done(refused(at, "this UZURA register is write-only"));
    }
  }

  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override {
    const Figures &f = engine_.figures();
    uint32_t word = uint32_t(value);
    if (size != 4 || offset % 4)
      return (void)done(refused(at, "UZURA registers are 32-bit words"));
    switch (offset) {
    case UZ_REG_DOORBELL:
      done({true, 0, at + f.doorbell, {}});
      engine_.host_doorbell(word, at + f.doorbell, at);
      return;
    case UZ_REG_ENDPOINT:
      engine_.host_endpoint(word);
      return (void)done({true, 0, at + f.pio_write, {}});
    case UZ_REG_RX_FREED:
      engine_.host_rx_freed(word);
      return (void)done({true, 0, at + f.pio_write, {}});
    case UZ_REG_IRQ_ACK:
      return (void)done({true, 0, at + f.pio_write, {}});
    case UZ_REG_CMD_WRITTEN:
      engine_.host_command_written(word, at);
      return (void)done({true, 0, at, {}});
    default:
      return (void)done(refused(at, "this UZURA register is read-only"));
    }
  }

  const char *call_name(bool write) const override {
    return write ? "RegWrite" : "RegRead";
  }

private:
  Engine &engine_;
};

class UzuraBoard final : public Board {
public:
  const std::string &name() const override { return name_; }
  const std::string &description() const override { return description_; }
  std::vector<ModelKey> model_keys() const override {
    std::vector<ModelKey> keys = Figures::model_keys();
    for (auto part : {SharedPart::PciHost}) {
      std::vector<ModelKey> more = shared_part_keys(part);
      keys.insert(keys.end(), more.begin(), more.end());
    }
    std::vector<ModelKey> net = fabric_model_keys(true);
    keys.insert(keys.end(), net.begin(), net.end());
    return keys;
  }
  std::vector<std::string> required_memories() const override {
    return {"local", "sram"};
  }
  void assemble(CardAssembly &card, const Model &model) const override;
  // Every frame crosses the sender's FPGA and MAC before the shortest path.
  Time network_lookahead(const Model &model,
                         const Fabric &fabric) const override {
    Figures f = Figures::from(model);
    return f.send_non_pl4 + f.send_pl4 + f.mac_send + fabric.min_path_latency();
  }

private:
  std::string name_ = "uzura";
  std::string description_ =
      "UZURA 10GbE (FPGA offload, PCI-X): command fetch, DMA, address "
      "translation, frames, placement in host memory";
};

void UzuraBoard::assemble(CardAssembly &card, const Model &model) const {
  const MemoryRegion &sram =
      *std::find_if(model.memories.begin(), model.memories.end(),
                    [](const MemoryRegion &r) { return r.name == "sram"; });
  if (sram.base != UZ_HOST_SRAM)
    throw Error(model.source.string() +
                ": the uzura board's SRAM is at 0x400000 "
                "(nicemu/uzura_card.h), not where [[memory]] sram says");
  install_shared_part(SharedPart::PciHost, card, model);
  DeviceHost &host = card.device_host();
  auto engine = std::make_unique<Engine>(host, Figures::from(model), sram.base,
                                         sram.size);
  Engine &e = *engine;
  if (Fabric *fabric = host.fabric())
    fabric->attach(host.node_id(), engine.get());
  card.install(NICEMU_ENGINE_BASE, std::move(engine), NICEMU_CAP_ENGINE);
  card.host_port().map(UZ_HOST_REGS, UZ_HOST_REGS_BYTES,
                       std::make_unique<HostRegisters>(e));
}

} // namespace

const Board &uzura_board() {
  static const UzuraBoard board;
  return board;
}

} // namespace nicemu
