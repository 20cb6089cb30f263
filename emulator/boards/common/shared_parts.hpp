// Blocks that several card families share, each with the model keys it
// reads: the host DMA engine, the network port (Tx, Rx, route table) on a
// Myrinet-style or Ethernet fabric, doorbell FIFOs, and a PCI host side.
// A family whose card is made only of these is a SharedPartsBoard.
#pragma once

#include "boards/board.hpp"

#include <initializer_list>

namespace nicemu {

enum class SharedPart {
  HostDma,         // HDMA: host memory <-> card memory
  MyrinetNetwork,  // TX, RX, ROUTE on source-routed crossbar switches
  EthernetNetwork, // TX, RX, ROUTE carrying Ethernet frames (MAC switches)
  Doorbells,       // DOORBELL: FIFOs the host writes
  PciHost,         // the host's PIO, polling and doorbell costs over PCI
};

// The keys `part` reads.
std::vector<ModelKey> shared_part_keys(SharedPart part);
// Installs `part`'s devices (PciHost has none on the card).
void install_shared_part(SharedPart part, CardAssembly &card,
                         const Model &model);

// `keys`, each a Reference key of `reader`: the published figures of
// blocks a board does not model yet.
std::vector<ModelKey> reference_keys(const char *reader,
                                     std::initializer_list<const char *> keys);

class SharedPartsBoard : public Board {
public:
  // `reference`: published figures the board keeps but no device reads.
  SharedPartsBoard(std::string name, std::string description,
                   std::initializer_list<SharedPart> parts,
                   std::vector<ModelKey> reference = {},
                   std::vector<std::string> memories = {});

  const std::string &name() const override { return name_; }
  const std::string &description() const override { return description_; }
  std::vector<ModelKey> model_keys() const override;
  std::vector<std::string> required_memories() const override {
    return memories_;
  }
  void assemble(CardAssembly &card, const Model &model) const override;
  // The shared parts act on the core's accesses only within their node,
  // through the scheduler and the fabric.
  bool cores_run_in_parallel() const override { return true; }

private:
  std::string name_, description_;
  std::vector<SharedPart> parts_;
  std::vector<ModelKey> reference_;
  std::vector<std::string> memories_;
};

} // namespace nicemu
