// nicemu run --tap NAME: the emulated Ethernet bridged to a Linux TAP device
// (docs/fm.md, "Bridging to Linux (--tap)").
//
// Frames from the cluster to a MAC that is no cluster node (unicast outside
// the cluster, broadcast, multicast) are written to the TAP (without FCS) at
// the virtual time they leave the first switch, instead of being dropped.
// Frames read from the TAP whose destination MAC is a cluster node enter the
// network at the switch port of that node, at the virtual time the run has
// reached when they are read; other frames are ignored (counted).
//
// While the TAP is attached the run follows the wall clock (the bridge is
// the run's WallClockInput): it is not deterministic.
#pragma once

#include "fabric/ethernet.hpp"
#include "fabric/fabric.hpp"
#include "sim/wall_clock_input.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nicemu {

struct Model;

struct TapStats {
  uint64_t frames_out = 0;     // written to the TAP
  uint64_t frames_in = 0;      // read and delivered to a node
  uint64_t frames_ignored = 0; // read, not for a cluster node
  uint64_t write_errors = 0;   // the TAP refused a frame (it is lost)
};

class TapBridge final : public WallClockInput {
public:
  // Opens /dev/net/tun as the TAP device `name` (attaching to an existing
  // device, or creating one that lives as long as the run). Throws
  // nicemu::Error saying why it cannot (not an Ethernet model, no
  // permission, no such device support).
  TapBridge(const std::string &name, const Model &model);
  ~TapBridge() override;
  TapBridge(const TapBridge &) = delete;
  TapBridge &operator=(const TapBridge &) = delete;

  // Bridges the run's network (null: the run has none, an error). The run
  // must then be paced by the bridge (Simulation::set_wall_clock_input),
  // and must not outlive it.
  void attach(Fabric *fabric);

  void poll(Time now) override;
  void wait(int64_t timeout_ns) override;

  // nicemu run --record: told of every frame from Linux that enters the
  // network (to `node`, at `at`, with its FCS), and of every frame the
  // cluster offers to Linux (whether it left).
  struct Recorder {
    std::function<void(Time at, uint32_t node,
                       const std::vector<uint8_t> &frame)>
        in;
    std::function<void(Time at, const std::vector<uint8_t> &frame, bool left)>
        out;
  };
  void set_recorder(Recorder recorder) { recorder_ = std::move(recorder); }
  // Whether the fabric's frame `p` is for the outside, in a cluster of
  // `nodes` nodes (else it goes to a node, or nowhere).
  static bool for_outside(const Packet &p, uint32_t nodes);

  const std::string &name() const { return name_; }
  const TapStats &stats() const { return stats_; }

private:
  bool send_out(const std::vector<uint8_t> &payload_with_fcs);

  std::string name_;
  EthernetFraming framing_;
  int fd_ = -1;
  Fabric *fabric_ = nullptr;
  TapStats stats_;
  Recorder recorder_;
};

} // namespace nicemu
