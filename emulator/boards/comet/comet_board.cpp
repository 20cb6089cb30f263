// comet: the Comet network adapter of Comet-VIA. Its protocol processor
// runs the VI provider firmware; the card has host DMA over PCI, doorbell
// FIFOs the host writes descriptor addresses into, and an Ethernet port.
#include "boards/board_list.hpp"
#include "boards/common/shared_parts.hpp"

namespace nicemu {

namespace {

// Several processes may share a Comet card: the VI provider keeps each
// one's VIs, memory and Ptags apart (docs/via.md, "Processes sharing a
// card").
class CometBoard final : public SharedPartsBoard {
public:
  using SharedPartsBoard::SharedPartsBoard;
  bool hosts_share_card() const override { return true; }
};

} // namespace

const Board &comet_board() {
  static const CometBoard board(
      "comet",
      "Comet adapter: host DMA, doorbell FIFOs, Ethernet port, PCI host",
      {SharedPart::HostDma, SharedPart::EthernetNetwork, SharedPart::Doorbells,
       SharedPart::PciHost},
      // The firmware's node table (FM node number -> IP/MAC) is sized by
      // the firmware itself; the figure documents the card.
      {{"params.fm.node_table_entries", KeyUse::Reference, "FM node table"}});
  return board;
}

} // namespace nicemu
