#include "devices/register_bank.hpp"

#include <cassert>

namespace nicemu {

RegisterBank::RegisterBank(const RegisterLayout &layout)
    : layout_(layout), behaviour_(layout.registers().size()) {}

RegisterBank::Behaviour &RegisterBank::behaviour(uint32_t offset) {
  uint32_t element = 0, byte = 0;
  const RegisterInfo *r = layout_.at(offset, element, byte);
  assert(r && r->offset == offset && "no register declared at this offset");
  return behaviour_[layout_.index_of(*r)];
}

RegisterBank &RegisterBank::on_read(uint32_t offset, Reader read) {
  Behaviour &b = behaviour(offset);
  b.read = [read = std::move(read)](uint32_t) { return read(); };
  b.stable = false;
  return *this;
}

RegisterBank &RegisterBank::on_write(uint32_t offset, Writer write) {
  behaviour(offset).write = [write = std::move(write)](uint32_t, uint64_t v) {
    write(v);
  };
  return *this;
}

RegisterBank &RegisterBank::on_read(uint32_t offset, ElementReader read) {
  Behaviour &b = behaviour(offset);
  b.read = std::move(read);
  b.stable = false;
  return *this;
}

RegisterBank &RegisterBank::on_write(uint32_t offset, ElementWriter write) {
  behaviour(offset).write = std::move(write);
  return *this;
}

RegisterBank &RegisterBank::bind(uint32_t offset, uint32_t &storage,
                                 std::function<void()> after_write) {
  Behaviour &b = behaviour(offset);
  b.read = [&storage](uint32_t) { return uint64_t(storage); };
  b.stable = true;
  b.write = [&storage, after = std::move(after_write)](uint32_t, uint64_t v) {
    storage = uint32_t(v);
    if (after)
      after();
  };
  return *this;
}

RegisterBank &
RegisterBank::write_one_to_clear(uint32_t offset, uint32_t &storage,
                                 uint32_t mask,
                                 std::function<void()> after_write) {
  Behaviour &b = behaviour(offset);
  b.read = [&storage](uint32_t) { return uint64_t(storage); };
  b.stable = true;
  b.write = [&storage, mask, after = std::move(after_write)](uint32_t,
                                                             uint64_t v) {
    storage &= ~(uint32_t(v) & mask);
    if (after)
      after();
  };
  return *this;
}

RegisterBank &RegisterBank::constant(uint32_t offset, uint64_t value) {
  Behaviour &b = behaviour(offset);
  b.read = [value](uint32_t) { return value; };
  b.stable = true;
  return *this;
}

RegisterBank &RegisterBank::stable_read(uint32_t offset) {
  Behaviour &b = behaviour(offset);
  assert(b.read && "stable_read before on_read");
  b.stable = true;
  return *this;
}

bool RegisterBank::read_is_stable(uint32_t offset) const {
  uint32_t element = 0, byte = 0;
  const RegisterInfo *r = layout_.at(offset, element, byte);
  return r && behaviour_[layout_.index_of(*r)].stable;
}

bool RegisterBank::complete() const {
  auto regs = layout_.registers();
  for (size_t i = 0; i < regs.size(); ++i) {
    bool readable = uint8_t(regs[i].access) & uint8_t(Access::R);
    bool writable = uint8_t(regs[i].access) & uint8_t(Access::W);
    if ((readable && !behaviour_[i].read) || (writable && !behaviour_[i].write))
      return false;
  }
  return true;
}

const RegisterInfo *RegisterBank::check(uint32_t offset, unsigned size,
                                        Access need, uint32_t &element,
                                        uint32_t &byte,
                                        std::string &why) const {
  const RegisterInfo *r = layout_.at(offset, element, byte);
  if (!r) {
    why = "no such register";
    return nullptr;
  }
  // The register's own width, or an aligned part of a wider register.
  if (size > r->bytes || (size != r->bytes && size < 4) || byte % size != 0) {
    why = std::to_string(size) + "-byte access to a " +
          std::to_string(r->bytes * 8) + "-bit register";
    return nullptr;
  }
  if ((uint8_t(r->access) & uint8_t(need)) == 0) {
    why = std::string("register is ") +
          (need == Access::W ? "read-only" : "write-only");
    return nullptr;
  }
  return r;
}

namespace {

uint64_t low_bytes(unsigned size) {
  return size >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
}

} // namespace

bool RegisterBank::read(uint32_t offset, unsigned size, uint64_t &value,
                        std::string &why) {
  uint32_t element, byte;
  const RegisterInfo *r = check(offset, size, Access::R, element, byte, why);
  if (!r)
    return false;
  uint64_t whole = behaviour_[layout_.index_of(*r)].read(element);
  value = (whole >> (8 * byte)) & low_bytes(size);
  return true;
}

bool RegisterBank::write(uint32_t offset, unsigned size, uint64_t value,
                         std::string &why) {
  uint32_t element, byte;
  const RegisterInfo *r = check(offset, size, Access::W, element, byte, why);
  if (!r)
    return false;
  Behaviour &b = behaviour_[layout_.index_of(*r)];
  if (size == r->bytes) {
    b.write(element, value & low_bytes(size));
    return true;
  }
  if (!b.read) { // a part of a write-only register: nothing to merge with
    why = std::to_string(size) + "-byte part of a write-only " +
          std::to_string(r->bytes * 8) + "-bit register";
    return false;
  }
  uint64_t mask = low_bytes(size) << (8 * byte);
  uint64_t merged = (b.read(element) & ~mask) | ((value << (8 * byte)) & mask);
  b.write(element, merged);
  return true;
}

} // namespace nicemu
