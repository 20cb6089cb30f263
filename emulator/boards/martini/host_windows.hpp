// DIMMnet-1 on the host's memory bus (nicemu/martini.h has the map): the
// AOTF kick pages, LLCM, the BOTF windows and their kick/status words, and
// the user's status page. Every access is an uncached load or store of 1-8
// bytes and costs the host the model's figure for one; a write-combined
// burst into a BOTF window costs one store per 32-byte line (docs/dimmnet.md).
#pragma once

#include "boards/martini/otf_engine.hpp"
#include "devices/host_port.hpp"

namespace nicemu::martini {

class KickWindow final : public HostWindow {
public:
  KickWindow(OtfEngine &otf, const HostPort &port) : otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  Time posted_write_cost() const override { return otf_.figures().store; }
  const char *call_name(bool) const override { return "AotfStore"; }

private:
  OtfEngine &otf_;
  const HostPort &port_;
};

// A load also says until when LLCM stays as it is (unless the loading host
// acts), so that the host library can answer a polling loop's loads itself
// meanwhile (docs/dimmnet.md, "Polling").
class LlcmWindow final : public HostWindow {
public:
  LlcmWindow(DeviceHost &card, OtfEngine &otf, const HostPort &port)
      : card_(card), otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  const char *call_name(bool write) const override {
    return write ? "LlcmStore" : "LlcmLoad";
  }

private:
  DeviceHost &card_;
  OtfEngine &otf_;
  const HostPort &port_;
};

class BotfWindows final : public HostWindow {
public:
  BotfWindows(OtfEngine &otf, const HostPort &port) : otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  void write_block(uint64_t offset, std::span<const uint8_t> bytes, Time at,
                   const HostBusCompletion &done) override;
  const char *call_name(bool) const override { return "BotfWrite"; }

private:
  OtfEngine &otf_;
  const HostPort &port_;
};

// Store: send window w's packet; load: its status (NICEMU_MARTINI_BOTF_*).
class BotfKickWindow final : public HostWindow {
public:
  BotfKickWindow(OtfEngine &otf, const HostPort &port)
      : otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  Time posted_write_cost() const override { return otf_.figures().store; }
  const char *call_name(bool write) const override {
    return write ? "BotfKick" : "BotfStatus";
  }

private:
  OtfEngine &otf_;
  const HostPort &port_;
};

class StatusWindow final : public HostWindow {
public:
  explicit StatusWindow(OtfEngine &otf) : otf_(otf) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  const char *call_name(bool) const override { return "StatusLoad"; }

private:
  OtfEngine &otf_;
};

// An SO-DIMM bank, while it faces the host: single accesses at the
// uncached costs, bursts of up to 4 KiB at the bank's bandwidth.
class BankWindow final : public HostWindow {
public:
  BankWindow(OtfEngine &otf, const HostPort &port, uint32_t bank)
      : otf_(otf), port_(port), bank_(bank) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  void read_block(uint64_t offset, std::span<uint8_t> out, Time at,
                  const HostBusCompletion &done) override;
  void write_block(uint64_t offset, std::span<const uint8_t> bytes, Time at,
                   const HostBusCompletion &done) override;
  const char *call_name(bool write) const override {
    return write ? "BankStore" : "BankLoad";
  }

private:
  const char *refusal(uint64_t offset, uint64_t len) const;
  OtfEngine &otf_;
  const HostPort &port_;
  uint32_t bank_;
};

// Which side each bank faces: a load reads it, a store switches it.
class BankSidesWindow final : public HostWindow {
public:
  BankSidesWindow(OtfEngine &otf, const HostPort &port)
      : otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  const char *call_name(bool write) const override {
    return write ? "BankSwitch" : "BankSide";
  }

private:
  OtfEngine &otf_;
  const HostPort &port_;
};

// The RDMA engine's descriptor, kick and status words, 8 bytes each.
class RdmaWindow final : public HostWindow {
public:
  RdmaWindow(OtfEngine &otf, const HostPort &port) : otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  const char *call_name(bool write) const override {
    return write ? "RdmaStore" : "RdmaLoad";
  }

private:
  OtfEngine &otf_;
  const HostPort &port_;
};

// The driver's JOIN word (nicemu/martini.h): the storing process joins a
// group; a load reads the group back.
class JoinWindow final : public HostWindow {
public:
  JoinWindow(OtfEngine &otf, const HostPort &port) : otf_(otf), port_(port) {}
  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  const char *call_name(bool) const override { return "Join"; }

private:
  OtfEngine &otf_;
  const HostPort &port_;
};

} // namespace nicemu::martini
