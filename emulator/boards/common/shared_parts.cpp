#include "boards/common/shared_parts.hpp"

#include "boards/common/pci_host.hpp"
#include "devices/doorbell.hpp"
#include "devices/host_dma.hpp"
#include "devices/network.hpp"
#include "fabric/fabric_params.hpp"
#include "nicemu/regs.h"

namespace nicemu {

namespace {

std::vector<ModelKey> pci_host_keys() {
  // Read by the host agent (host/agent.cpp, HostCosts::from) and the host
  // launcher (host/hosts.cpp: clock_read).
  const char *host = "PCI host side";
  return {{"timing.host.pio_write_word", KeyUse::Required, host},
          {"timing.host.pio_read_word", KeyUse::Required, host},
          {"timing.host.poll_own_memory", KeyUse::Required, host},
          {"timing.host.doorbell_write", KeyUse::Optional, host},
          {"timing.host.clock_read", KeyUse::Optional, host},
          {"timing.host.interrupt", KeyUse::Reference, host},
          {"params.host.page_bytes", KeyUse::Reference, host},
          {"params.host.pci_bus_hz", KeyUse::Reference, host},
          {"params.host.pci_bus_bits", KeyUse::Reference, host}};
}

void append(std::vector<ModelKey> &to, const std::vector<ModelKey> &from) {
  to.insert(to.end(), from.begin(), from.end());
}

void install_network(CardAssembly &card, const Model &model) {
  DeviceHost &host = card.device_host();
  uint32_t caps = NICEMU_CAP_NETWORK;
  if (ethernet_framing(model))
    caps |= NICEMU_CAP_ETHERNET;
  card.install(NICEMU_TX_BASE,
               std::make_unique<TxEngine>(
                   host, DmaTiming{model.timing("tx_dma.gap"),
                                   model.timing("tx_dma.per_word")}),
               caps);
  auto rx = std::make_unique<RxEngine>(host);
  if (Fabric *fabric = host.fabric())
    fabric->attach(host.node_id(), rx.get());
  card.install(NICEMU_RX_BASE, std::move(rx), 0);
  card.install(NICEMU_ROUTE_BASE, std::make_unique<RouteTable>(host), 0);
}

// The doorbell FIFOs, and their window on the host bus. A doorbell write
// costs the model's doorbell_write, or one PIO write where it has none.
void install_doorbells(CardAssembly &card, const Model &model) {
  auto bell = DoorbellDevice::from_model(card.device_host(), model);
  DoorbellDevice &fifos = *bell;
  card.install(NICEMU_DOORBELL_BASE, std::move(bell), NICEMU_CAP_DOORBELL);
  auto cost = model.timing_ps.find("host.doorbell_write");
  Time write = cost != model.timing_ps.end()
                   ? cost->second
                   : model.timing("host.pio_write_word");
  card.host_port().map(
      NICEMU_HOST_DOORBELLS, 4ull * fifos.fifos(),
      std::make_unique<DoorbellWindow>(fifos, card.host_port(), write));
}

// Every card memory, by PIO at its card address.
void map_card_memory(CardAssembly &card, const Model &model) {
  Time read = model.timing("host.pio_read_word"),
       write = model.timing("host.pio_write_word");
  card.host_port().set_posted_write_cost(write); // PCI posts writes
  for (const MemoryRegion &r : model.memories)
    card.host_port().map(r.base, r.size,
                         std::make_unique<CardMemoryWindow>(
                             card.device_host(), card.host_port(), r.base, read,
                             write, model.host_mailbox(), true));
}

} // namespace

std::vector<ModelKey> shared_part_keys(SharedPart part) {
  std::vector<ModelKey> keys;
  switch (part) {
  case SharedPart::HostDma:
    return HostDmaEngine::model_keys();
  case SharedPart::MyrinetNetwork:
  case SharedPart::EthernetNetwork:
    keys = TxEngine::model_keys();
    append(keys, fabric_model_keys(part == SharedPart::EthernetNetwork));
    return keys;
  case SharedPart::Doorbells:
    return DoorbellDevice::model_keys();
  case SharedPart::PciHost:
    return pci_host_keys();
  }
  return keys;
}

void install_shared_part(SharedPart part, CardAssembly &card,
                         const Model &model) {
  DeviceHost &host = card.device_host();
  switch (part) {
  case SharedPart::HostDma:
    card.install(NICEMU_HDMA_BASE, HostDmaEngine::from_model(host, model),
                 NICEMU_CAP_HDMA);
    break;
  case SharedPart::MyrinetNetwork:
  case SharedPart::EthernetNetwork:
    install_network(card, model);
    break;
  case SharedPart::Doorbells:
    install_doorbells(card, model);
    break;
  case SharedPart::PciHost:
    map_card_memory(card, model);
    break;
  }
}

std::vector<ModelKey> reference_keys(const char *reader,
                                     std::initializer_list<const char *> keys) {
  std::vector<ModelKey> out;
  for (const char *key : keys)
    out.push_back({key, KeyUse::Reference, reader});
  return out;
}

SharedPartsBoard::SharedPartsBoard(std::string name, std::string description,
                                   std::initializer_list<SharedPart> parts,
                                   std::vector<ModelKey> reference,
                                   std::vector<std::string> memories)
    : name_(std::move(name)), description_(std::move(description)),
      parts_(parts), reference_(std::move(reference)),
      memories_(std::move(memories)) {}

std::vector<ModelKey> SharedPartsBoard::model_keys() const {
  std::vector<ModelKey> keys = reference_;
  for (SharedPart part : parts_)
    append(keys, shared_part_keys(part));
  return keys;
}

void SharedPartsBoard::assemble(CardAssembly &card, const Model &model) const {
  for (SharedPart part : parts_)
    install_shared_part(part, card, model);
}

} // namespace nicemu
