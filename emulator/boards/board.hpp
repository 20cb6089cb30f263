// A board assembles one NIC family's card: which devices it has, at which
// register windows, and which model keys they read. The node (node/) is the
// same for every family: core, memories, bus and life cycle; it asks the
// board named by the model (`board = "lanai4"`) for everything else.
//
// Adding a family is adding a folder here (docs/adding-a-card.md).
#pragma once

#include "devices/device.hpp"
#include "devices/host_port.hpp"
#include "fabric/fabric.hpp"
#include "nicemu/model.hpp"

#include <memory>
#include <string>
#include <vector>

namespace nicemu {

// What a board sees of the card it assembles (the node implements it).
class CardAssembly {
public:
  virtual ~CardAssembly() = default;
  // What the devices ask of their card (clock, scheduler, memories, irq...).
  virtual DeviceHost &device_host() = 0;
  // Puts `device` at its register window, which starts at `base` (a
  // NICEMU_<DEV>_BASE of nicemu/regs.h); `caps`: the NICEMU_CAP_* bits it
  // brings to SYS_CAPS.
  virtual void install(uint32_t base, std::unique_ptr<Device> device,
                       uint32_t caps) = 0;
  // The card's side of the host bus, where the board maps the windows host
  // programs reach.
  virtual HostPort &host_port() = 0;
};

class Board {
public:
  virtual ~Board() = default;
  virtual const std::string &name() const = 0;
  virtual const std::string &description() const = 0;
  // Every [timing.*] and [params.*] key this board's devices read.
  virtual std::vector<ModelKey> model_keys() const = 0;
  // Memories ([[memory]] names) the card's devices need.
  virtual std::vector<std::string> required_memories() const { return {}; }
  // Installs the board's devices. SYS, CONSOLE, TIMER and IRQ are the
  // core's own and every card has them: the node installs those.
  virtual void assemble(CardAssembly &card, const Model &model) const = 0;

  // The family's network: link and switch figures (by default the shared
  // Myrinet or Ethernet ones, fabric_params), the cabling of `nodes` cards
  // when no topology file is given (by default one crossbar, then a
  // generated network), and the least time between a card's action and
  // its effect on another card, which bounds how far cores run apart.
  virtual FabricParams network(const Model &model) const;
  virtual Topology default_topology(uint32_t nodes, const Model &model,
                                    const FabricParams &params) const;
  virtual Time network_lookahead(const Model &model,
                                 const Fabric &fabric) const;
  // Whether several host processes may share one card (DIMMnet-1's
  // process groups): nicemu run --procs-per-node.
  virtual bool hosts_share_card() const { return false; }
  // Whether the cores' slices of a round may run on several threads at
  // once (nicemu run --threads): true when, in a slice, the board's devices
  // touch nothing outside their own node but the scheduler and the fabric
  // (both safe to call from several threads) and report to observers only
  // through the node (console lines, faults). Boards whose engines reach
  // other cards' or hosts' state from a core's access say false.
  virtual bool cores_run_in_parallel() const { return false; }
};

// The boards nicemu knows, by name; nullptr for an unknown name.
const Board *find_board(const std::string &name);
std::vector<const Board *> all_boards();

// Throws nicemu::Error naming the model's file when the model does not fit
// `board`: a key no device reads, a required key missing, a required memory
// missing.
void check_model_against(const Model &model, const Board &board);

// The board `model` names, checked against the model. Throws nicemu::Error
// when the model names no board or an unknown one, or does not fit it.
const Board &checked_board(const Model &model);

} // namespace nicemu
