// lanai4: the Myrinet LANai 4.x board of the NI Active Messages design. Its
// card is made of shared blocks only: host DMA over PCI, and a network
// port on source-routed crossbar switches.
#include "boards/board_list.hpp"
#include "boards/common/shared_parts.hpp"

namespace nicemu {

const Board &lanai4_board() {
  static const SharedPartsBoard board(
      "lanai4", "Myrinet LANai 4.x: host DMA, Myrinet network port, PCI host",
      {SharedPart::HostDma, SharedPart::MyrinetNetwork, SharedPart::PciHost},
      {{"params.core.pipeline_stages", KeyUse::Reference, "core"},
       {"params.core.sram_accesses_per_cycle", KeyUse::Reference, "core"}});
  return board;
}

} // namespace nicemu
