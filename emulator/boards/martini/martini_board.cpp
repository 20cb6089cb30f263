// martini: DIMMnet-1, the Martini LSI on a card in a host DIMM slot
// (docs/dimmnet.md). The core (instruction and data SRAM) handles HTLB
// misses and unknown commands; the on-the-fly hardware (otf_engine.hpp)
// does simple transfers alone; the host reaches the card with plain loads
// and stores (host_windows.hpp). Two cards are cabled directly; more go
// through RHiNET-2/SW switches, which route by table.
#include "boards/board_list.hpp"
#include "boards/common/pci_host.hpp"
#include "boards/martini/host_windows.hpp"
#include "boards/martini/martini_figures.hpp"
#include "boards/martini/otf_engine.hpp"
#include "nicemu/error.hpp"
#include "nicemu/martini.h"

#include <algorithm>
#include <cmath>

namespace nicemu {

namespace {

class MartiniBoard final : public Board {
public:
  const std::string &name() const override { return name_; }
  const std::string &description() const override { return description_; }
  std::vector<ModelKey> model_keys() const override {
    return martini::model_keys();
  }
  std::vector<std::string> required_memories() const override {
    return {"isram", "dsram", "llcm"};
  }
  void assemble(CardAssembly &card, const Model &model) const override;
  FabricParams network(const Model &model) const override;
  Topology default_topology(uint32_t nodes, const Model &model,
                            const FabricParams &params) const override;
  // A card acts on another only through a packet, which crosses at least
  // the shortest path.
  bool hosts_share_card() const override { return true; }
  Time network_lookahead(const Model &, const Fabric &fabric) const override {
    return fabric.min_path_latency();
  }

private:
  std::string name_ = "martini";
  std::string description_ =
      "DIMMnet-1 (Martini): AOTF/BOTF sends, HTLB, OTF receive into LLCM, "
      "PUSH/PULL, SO-DIMM banks";
};

void MartiniBoard::assemble(CardAssembly &card, const Model &model) const {
  using namespace martini;
  Figures figures = Figures::from(model);
  const MemoryRegion &llcm =
      *std::find_if(model.memories.begin(), model.memories.end(),
                    [](const MemoryRegion &r) { return r.name == "llcm"; });
  if (llcm.base != NICEMU_MARTINI_LLCM)
    throw Error(model.source.string() + ": the martini board's LLCM is at " +
                "0x200000 (nicemu/martini.h), not where [[memory]] llcm says");
  DeviceHost &host = card.device_host();
  auto otf = std::make_unique<OtfEngine>(host, figures, llcm.base, llcm.size);
  OtfEngine &engine = *otf;
  if (Fabric *fabric = host.fabric())
    fabric->attach(host.node_id(), otf.get());
  card.install(NICEMU_OTF_BASE, std::move(otf), NICEMU_CAP_OTF);

  HostPort &port = card.host_port();
  port.map(NICEMU_MARTINI_HOST_KICK, uint64_t(NICEMU_MARTINI_KICK_PAGES) << 12,
           std::make_unique<KickWindow>(engine, port));
  port.map(NICEMU_MARTINI_HOST_LLCM, llcm.size,
           std::make_unique<LlcmWindow>(host, engine, port));
  port.map(NICEMU_MARTINI_HOST_BOTF,
           uint64_t(figures.windows) * NICEMU_MARTINI_BOTF_STRIDE,
           std::make_unique<BotfWindows>(engine, port));
  port.map(NICEMU_MARTINI_HOST_BOTF_KICK, uint64_t(figures.windows) * 8,
           std::make_unique<BotfKickWindow>(engine, port));
  port.map(NICEMU_MARTINI_HOST_BANKS, 16,
           std::make_unique<BankSidesWindow>(engine, port));
  port.map(NICEMU_MARTINI_HOST_RDMA, NICEMU_MARTINI_RDMA_NOTIFY + 8,
           std::make_unique<RdmaWindow>(engine, port));
  port.map(NICEMU_MARTINI_HOST_BANK0, figures.bank_bytes,
           std::make_unique<BankWindow>(engine, port, 0));
  port.map(NICEMU_MARTINI_HOST_BANK1, figures.bank_bytes,
           std::make_unique<BankWindow>(engine, port, 1));
  port.map(NICEMU_MARTINI_HOST_STATUS, NICEMU_MARTINI_STATUS_FEATURES + 8,
           std::make_unique<StatusWindow>(engine));
  // The privileged page: the firmware's request mailbox, 32-bit words.
  port.map(NICEMU_MARTINI_HOST_PRIV, 4096,
           std::make_unique<CardMemoryWindow>(host, port, model.host_mailbox(),
                                              figures.load, figures.store,
                                              model.host_mailbox()));
  port.map(NICEMU_MARTINI_HOST_JOIN, 8,
           std::make_unique<JoinWindow>(engine, port));
  port.set_posted_write_cost(figures.store); // AOTF stores
}

// The link's bandwidth; the serializer, transceiver and cable outside the
// SWIF as each cable's latency; RHiNET-2 link mode pads short packets;
// RHiNET-2/SW switches route by table, cut-through.
FabricParams MartiniBoard::network(const Model &model) const {
  FabricParams p;
  double mbps = model.param("link.bandwidth_MBps");
  if (!(mbps > 0))
    throw Error("model " + model.name + ": link.bandwidth_MBps must be > 0");
  p.link_ps_per_byte = Time(std::llround(1e6 / mbps));
  p.link_latency = model.timing("link.outside_swif");
  p.switch_latency = model.timing("switch.per_packet");
  p.switch_ports = uint32_t(model.param("switch.ports"));
  p.min_frame_bytes = uint32_t(model.param("link.short_packet_pad_bytes"));
  p.table_routing = true;
  return p;
}

// Two cards are cabled directly, as in the reference set-ups, unless the
// model puts a switch between them (params.switch.two_nodes_switched, the
// Send/Receive experiments' set-up).
Topology MartiniBoard::default_topology(uint32_t nodes, const Model &model,
                                        const FabricParams &params) const {
  auto switched = model.params.find("switch.two_nodes_switched");
  if (nodes != 2 || (switched != model.params.end() && switched->second))
    return make_topology(nodes, params.switch_ports);
  Topology t; // the reference set-ups: two cards, one cable
  t.nodes = 2;
  t.switches = 0;
  t.ports_per_switch = params.switch_ports;
  t.cables.push_back({{false, 0, 0}, {false, 1, 0}});
  return t;
}

} // namespace

const Board &martini_board() {
  static const MartiniBoard board;
  return board;
}

} // namespace nicemu
