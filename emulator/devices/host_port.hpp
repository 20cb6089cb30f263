// The card as its host sees it: windows in the host's bus address space
// that host programs reach with sized loads and stores, each charging the
// host its bus cost from the model. The node owns one host port, its board
// maps the windows (card memory by PIO and the mailbox, doorbells; next,
// DIMMnet-1's kick pages, BOTF windows and LLCM, UZURA's registers), and
// the host channel carries generic reads and writes to it: the host agent
// knows no device.
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace nicemu {

// How a host access ended.
struct HostBusResult {
  bool ok = true;
  uint64_t value = 0; // a read's data
  Time done = 0;      // when the host's access completes
  std::string why;    // refused: the reason, for the host's error
  // A read: no byte of the window changes before this time unless the
  // reading host itself acts (0: no such promise). The host library may
  // answer the same read again itself until then, charging its cost.
  Time stable_until = 0;
};

// The host programs as the card sees them: the earliest time each may
// still act (a store, a send). Their host group implements it.
class HostPeers {
public:
  virtual ~HostPeers() = default;
  // The earliest virtual time at which any host but `rank` may still make
  // an access: its clock while it computes; while it waits, when its reply
  // is due (or its request's time, if that is not known yet).
  virtual Time earliest_action_except(uint32_t rank) const = 0;
  // The same, over the processes that drive node `node` only.
  virtual Time earliest_action_on(uint32_t node, uint32_t except) const = 0;
};
// Called once with how the access ended. A window that held a write calls
// it when the write can land, before landing it, and drops the write if it
// returns false (the writer has gone meanwhile); otherwise the value
// returned is ignored.
using HostBusCompletion = std::function<bool(const HostBusResult &)>;

class HostWindow {
public:
  virtual ~HostWindow() = default;
  // An access of `size` bytes at `offset` in the window, made at `at`.
  // Calls `done` exactly once: at once for most windows, later for a write
  // the window holds (a PCI target retrying a write it cannot take yet).
  virtual void read(uint64_t offset, unsigned size, Time at,
                    const HostBusCompletion &done) = 0;
  virtual void write(uint64_t offset, unsigned size, uint64_t value, Time at,
                     HostBusCompletion done) = 0;
  // A burst of `bytes` written at `offset` as one bus transaction (a
  // write-combined burst into DIMMnet's BOTF windows). Windows that take no
  // bursts refuse it.
  virtual void write_block(uint64_t offset, std::span<const uint8_t> bytes,
                           Time at, const HostBusCompletion &done);
  // A burst read into `out` (DIMMnet's SO-DIMM banks); refused by default.
  virtual void read_block(uint64_t offset, std::span<uint8_t> out, Time at,
                          const HostBusCompletion &done);
  // How traces name a host's call to this window ("PioWrite").
  virtual const char *call_name(bool write) const {
    return write ? "Write" : "Read";
  }
  // What one write costs the host, for writes it posts (goes on without
  // waiting for: PCI posts writes); 0 if the window takes no posted writes.
  virtual Time posted_write_cost() const { return 0; }
};

class HostPort {
public:
  // Maps `window` at [base, base + size). Windows never overlap (an
  // emulator bug otherwise: assertion).
  void map(uint64_t base, uint64_t size, std::unique_ptr<HostWindow> window);
  void clear() { windows_.clear(); }

  // An access the host made at `at`; an address no window holds is refused
  // at once, at `at`.
  void read(uint64_t addr, unsigned size, Time at,
            const HostBusCompletion &done);
  void write(uint64_t addr, unsigned size, uint64_t value, Time at,
             HostBusCompletion done);
  void write_block(uint64_t addr, std::span<const uint8_t> bytes, Time at,
                   const HostBusCompletion &done);
  void read_block(uint64_t addr, std::span<uint8_t> out, Time at,
                  const HostBusCompletion &done);
  // How traces name a host's call to `addr` (the window's name for it).
  const char *call_name(uint64_t addr, bool write) const;
  // The window at `addr`'s posted-write cost (0: none there, or it takes
  // no posted writes).
  Time posted_write_cost(uint64_t addr) const;
  // What a write the host posts costs it (the host library posts writes
  // only where they cannot be refused): the board's choice, 0 for none.
  void set_posted_write_cost(Time cost) { posted_cost_ = cost; }
  Time posted_write_cost() const { return posted_cost_; }
  // The host programs of the run, when there are (null: none).
  void set_peers(const HostPeers *peers) { peers_ = peers; }
  const HostPeers *peers() const { return peers_; }

  // The process (its rank) whose access the port serves, while a read or
  // write call runs: windows that check who may reach them ask (several
  // processes may share a DIMMnet-1 card). Set around each call.
  uint32_t process() const { return process_; }
  // How many processes drive this card (nicemu run --procs-per-node), and
  // the place on the node of the one being served (0..per_node-1).
  void set_processes(uint32_t per_node) { per_node_ = per_node ? per_node : 1; }
  uint32_t processes() const { return per_node_; }
  uint32_t local_process() const { return process_ % per_node_; }
  class Serving {
  public:
    Serving(HostPort &port, uint32_t process)
        : port_(port), was_(std::exchange(port.process_, process)) {}
    ~Serving() { port_.process_ = was_; }
    Serving(const Serving &) = delete;
    Serving &operator=(const Serving &) = delete;

  private:
    HostPort &port_;
    uint32_t was_;
  };

private:
  struct Mapped {
    uint64_t base, size;
    std::unique_ptr<HostWindow> window;
  };
  const Mapped *find(uint64_t addr) const;

  std::vector<Mapped> windows_; // by base
  Time posted_cost_ = 0;
  const HostPeers *peers_ = nullptr;
  uint32_t process_ = 0;
  uint32_t per_node_ = 1;
};

} // namespace nicemu
