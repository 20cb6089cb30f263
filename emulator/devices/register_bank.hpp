// A device's registers as the bus sees them: the layout (where each
// register is, from the contract header) plus what each register does, in
// one table the device fills in its constructor:
//
//   registers()
//       .bind(NICEMU_TX_ADDR, addr_)                        // plain storage
//       .on_write(NICEMU_TX_CTRL, [this](uint64_t v) { start(v); })
//       .write_one_to_clear(NICEMU_TX_STATUS, status_, DONE | ERROR);
//
// The bus (node/) finds the register in O(1), refuses what the table does
// not allow (no register there, a read of a write-only register, a write
// of a read-only one, an access of the wrong size) with a reason, and
// calls the behaviour otherwise. A register wider than the access (a 64-bit
// register read by the 32-bit core) is reached in aligned parts: a part
// read returns its bytes of the whole; a part write merges into the current
// value, so such a register must be readable without side effects.
#pragma once

#include "devices/registers.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nicemu {

class RegisterBank {
public:
  using Reader = std::function<uint64_t()>;
  using Writer = std::function<void(uint64_t value)>;
  using ElementReader = std::function<uint64_t(uint32_t element)>;
  using ElementWriter = std::function<void(uint32_t element, uint64_t value)>;

  explicit RegisterBank(const RegisterLayout &layout);

  // What the register declared at `offset` does. Each call names a
  // register of the layout (an emulator bug otherwise: assertion).
  RegisterBank &on_read(uint32_t offset, Reader read);
  RegisterBank &on_write(uint32_t offset, Writer write);
  RegisterBank &on_read(uint32_t offset, ElementReader read);   // arrays
  RegisterBank &on_write(uint32_t offset, ElementWriter write); // arrays
  // Reads and writes `storage`; `after_write` runs after each write.
  RegisterBank &bind(uint32_t offset, uint32_t &storage,
                     std::function<void()> after_write = {});
  // Reads `storage`; a write clears the bits written as 1 within `mask`.
  RegisterBank &write_one_to_clear(uint32_t offset, uint32_t &storage,
                                   uint32_t mask,
                                   std::function<void()> after_write = {});
  // Reads as `value`; writes are refused by the layout (read-only).
  RegisterBank &constant(uint32_t offset, uint64_t value);
  // Declares that reading the register at `offset` (given an on_read) has
  // no side effect and returns state that changes only when the device
  // acts: in an event, or on a write. bind, write_one_to_clear and
  // constant registers are so already. A core's polling loop that reads
  // only such registers may be fast-forwarded (unicorn_cpu.cpp); a reader
  // that depends on the time (a cycle counter) must not be declared so.
  RegisterBank &stable_read(uint32_t offset);
  // Whether a read at `offset` is stable (false where no register is).
  bool read_is_stable(uint32_t offset) const;

  // True when every readable register has a reader and every writable one
  // a writer (checked when the device is installed).
  bool complete() const;
  const RegisterLayout &layout() const { return layout_; }

  // The bus: an access of `size` bytes at `offset` in the window. False,
  // with the reason in `why` ("register is read-only"), when refused.
  bool read(uint32_t offset, unsigned size, uint64_t &value, std::string &why);
  bool write(uint32_t offset, unsigned size, uint64_t value, std::string &why);

private:
  struct Behaviour {
    ElementReader read;
    ElementWriter write;
    bool stable = false; // stable_read
  };
  Behaviour &behaviour(uint32_t offset);
  const RegisterInfo *check(uint32_t offset, unsigned size, Access need,
                            uint32_t &element, uint32_t &byte,
                            std::string &why) const;

  const RegisterLayout &layout_;
  std::vector<Behaviour> behaviour_; // by register index in the layout
};

} // namespace nicemu
