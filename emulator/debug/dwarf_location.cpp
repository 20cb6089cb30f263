#include "debug/dwarf_location.hpp"

#include <dwarf.h>

#include <algorithm>

namespace nicemu {

namespace {

Location unavailable(const std::string &why) {
  Location l;
  l.why = why;
  return l;
}

Location bytes_of(uint64_t value, size_t size) {
  Location l;
  l.kind = Location::Kind::Bytes;
  for (size_t i = 0; i < size; ++i)
    l.bytes.push_back(uint8_t(value >> (8 * i)));
  return l;
}

// A DWARF expression on a 32-bit little-endian core. The stack holds
// addresses and values; what is left at the end (or at each DW_OP_piece)
// says where the object is.
class Evaluator {
public:
  Evaluator(Dwarf_Attribute &attr, std::optional<uint32_t> frame_base,
            const FrameAccess &frame)
      : attr_(attr), frame_base_(frame_base), frame_(frame) {}

  Location run(const Dwarf_Op *ops, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      const Dwarf_Op &op = ops[i];
      if (op.atom == DW_OP_piece) {
        if (!piece(op.number))
          return unavailable(why_);
        continue;
      }
      if (!step(op))
        return unavailable(why_);
    }
    if (pieces_.empty())
      return current();
    Location whole;
    whole.kind = Location::Kind::Bytes;
    whole.bytes = pieces_;
    return whole;
  }

private:
  bool fail(const std::string &why) {
    why_ = why;
    return false;
  }
  bool need(size_t n) {
    return stack_.size() >= n || fail("malformed DWARF expression");
  }
  uint64_t pop() {
    uint64_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  bool reg(unsigned regno, uint32_t &value) {
    return frame_.reg(regno, value) ||
           fail("register " + std::to_string(regno) + " unavailable");
  }

  // Where the object is after the operations so far.
  Location current() {
    if (!why_.empty())
      return unavailable(why_);
    if (in_reg_) {
      uint32_t v = 0;
      if (!reg(regno_, v))
        return unavailable(why_);
      return bytes_of(v, 4);
    }
    if (value_)
      return bytes_of(stack_.empty() ? 0 : stack_.back(), 8);
    if (!implicit_.empty()) {
      Location l;
      l.kind = Location::Kind::Bytes;
      l.bytes = implicit_;
      return l;
    }
    if (stack_.empty())
      return unavailable("optimized out");
    Location l;
    l.kind = Location::Kind::Memory;
    l.address = uint32_t(stack_.back());
    return l;
  }

  // DW_OP_piece: the next `size` bytes of the object are where the
  // operations since the last piece say.
  bool piece(uint64_t size) {
    Location part = current();
    std::vector<uint8_t> bytes;
    if (part.kind == Location::Kind::Unavailable ||
        !part.read(frame_, uint32_t(size), bytes))
      return fail(part.why.empty() ? "unreadable piece" : part.why);
    pieces_.insert(pieces_.end(), bytes.begin(), bytes.end());
    stack_.clear();
    in_reg_ = value_ = false;
    implicit_.clear();
    return true;
  }

  bool step(const Dwarf_Op &op);
  bool arithmetic(uint8_t atom);
  bool address_index(const Dwarf_Op &op);

  Dwarf_Attribute &attr_;
  std::optional<uint32_t> frame_base_;
  const FrameAccess &frame_;
  std::vector<uint64_t> stack_;
  std::vector<uint8_t> pieces_, implicit_;
  bool in_reg_ = false, value_ = false;
  unsigned regno_ = 0;
  std::string why_;
};

// DW_OP_addrx, DW_OP_constx: an entry of .debug_addr.
bool Evaluator::address_index(const Dwarf_Op &op) {
  Dwarf_Attribute result;
  Dwarf_Addr addr = 0;
  if (dwarf_getlocation_attr(&attr_, &op, &result) != 0 ||
      dwarf_formaddr(&result, &addr) != 0)
    return fail("unreadable .debug_addr entry");
  if (addr >= 0xffffffffu) // the linker's tombstone: dropped by the link
    return fail("optimized out");
  stack_.push_back(addr);
  return true;
}

bool Evaluator::arithmetic(uint8_t atom) {
  if (atom == DW_OP_neg || atom == DW_OP_not) {
    if (!need(1))
      return false;
    uint64_t a = pop();
    stack_.push_back(atom == DW_OP_neg ? 0 - a : ~a); // two's complement
    return true;
  }
  if (!need(2))
    return false;
  uint64_t b = pop(), a = pop();
  switch (atom) {
  case DW_OP_plus:
    return stack_.push_back(a + b), true;
  case DW_OP_minus:
    return stack_.push_back(a - b), true;
  case DW_OP_mul:
    return stack_.push_back(a * b), true;
  case DW_OP_and:
    return stack_.push_back(a & b), true;
  case DW_OP_or:
    return stack_.push_back(a | b), true;
  case DW_OP_xor:
    return stack_.push_back(a ^ b), true;
  case DW_OP_shl:
    return stack_.push_back(b < 64 ? a << b : 0), true;
  case DW_OP_shr:
    return stack_.push_back(b < 64 ? a >> b : 0), true;
  case DW_OP_shra:
    return stack_.push_back(uint64_t(int64_t(a) >> std::min<uint64_t>(b, 63))),
           true;
  }
  return fail("unsupported DWARF operation " + std::to_string(atom));
}

bool Evaluator::step(const Dwarf_Op &op) {
  const uint8_t a = op.atom;
  if (a >= DW_OP_lit0 && a <= DW_OP_lit31)
    return stack_.push_back(a - DW_OP_lit0), true;
  if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
    in_reg_ = true;
    regno_ = a - DW_OP_reg0;
    return true;
  }
  if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
    uint32_t v = 0;
    if (!reg(a - DW_OP_breg0, v))
      return false;
    return stack_.push_back(uint32_t(v + op.number)), true;
  }
  switch (a) {
  case DW_OP_addr:
  case DW_OP_const1u:
  case DW_OP_const2u:
  case DW_OP_const4u:
  case DW_OP_const8u:
  case DW_OP_constu:
  case DW_OP_const1s:
  case DW_OP_const2s:
  case DW_OP_const4s:
  case DW_OP_const8s:
  case DW_OP_consts:
    return stack_.push_back(op.number), true; // libdw sign-extends the -s
  case DW_OP_addrx:
  case DW_OP_constx:
  case DW_OP_GNU_addr_index:
  case DW_OP_GNU_const_index:
    return address_index(op);
  case DW_OP_regx:
    in_reg_ = true;
    regno_ = unsigned(op.number);
    return true;
  case DW_OP_bregx: {
    uint32_t v = 0;
    if (!reg(unsigned(op.number), v))
      return false;
    return stack_.push_back(uint32_t(v + op.number2)), true;
  }
  case DW_OP_fbreg:
    if (!frame_base_)
      return fail("no frame base");
    return stack_.push_back(uint32_t(*frame_base_ + op.number)), true;
  case DW_OP_plus_uconst:
    if (!need(1))
      return false;
    return stack_.back() += op.number, true;
  case DW_OP_dup:
    if (!need(1))
      return false;
    return stack_.push_back(stack_.back()), true;
  case DW_OP_drop:
    if (!need(1))
      return false;
    return stack_.pop_back(), true;
  case DW_OP_over:
    if (!need(2))
      return false;
    return stack_.push_back(stack_[stack_.size() - 2]), true;
  case DW_OP_swap:
    if (!need(2))
      return false;
    return std::swap(stack_.back(), stack_[stack_.size() - 2]), true;
  case DW_OP_deref:
  case DW_OP_deref_size: {
    if (!need(1))
      return false;
    uint8_t b[4] = {};
    size_t size = a == DW_OP_deref ? 4 : std::min<size_t>(op.number, 4);
    if (!frame_.mem(uint32_t(pop()), std::span<uint8_t>(b, size)))
      return fail("cannot read memory");
    return stack_.push_back(b[0] | b[1] << 8 | b[2] << 16 |
                            uint32_t(b[3]) << 24),
           true;
  }
  case DW_OP_stack_value:
    value_ = true;
    return true;
  case DW_OP_implicit_value: {
    Dwarf_Block block;
    if (dwarf_getlocation_implicit_value(&attr_, &op, &block) != 0)
      return fail("unreadable DW_OP_implicit_value");
    implicit_.assign(block.data, block.data + block.length);
    return true;
  }
  case DW_OP_entry_value:
  case DW_OP_GNU_entry_value:
    return fail("optimized out"); // the value at entry: not kept
  case DW_OP_nop:
    return true;
  }
  return arithmetic(a);
}

} // namespace

bool Location::read(const FrameAccess &frame, uint32_t size,
                    std::vector<uint8_t> &out) const {
  if (kind == Kind::Unavailable)
    return false;
  if (kind == Kind::Memory) {
    out.assign(size, 0);
    return size == 0 || frame.mem(address, out);
  }
  out = bytes;
  out.resize(size, 0); // a value narrower than its type: zero-extended
  return true;
}

Location evaluate_location(Dwarf_Attribute &attr, uint32_t pc,
                           std::optional<uint32_t> frame_base,
                           const FrameAccess &frame) {
  if (dwarf_whatattr(&attr) == DW_AT_const_value) {
    Dwarf_Block block;
    Dwarf_Sword value = 0;
    if (dwarf_formblock(&attr, &block) == 0) {
      Location l;
      l.kind = Location::Kind::Bytes;
      l.bytes.assign(block.data, block.data + block.length);
      return l;
    }
    if (dwarf_formsdata(&attr, &value) == 0)
      return bytes_of(uint64_t(value), 8);
    return unavailable("unreadable DW_AT_const_value");
  }
  Dwarf_Op *ops = nullptr;
  size_t count = 0;
  int n = dwarf_getlocation_addr(&attr, pc, &ops, &count, 1);
  if (n <= 0)
    return unavailable("optimized out");
  return Evaluator(attr, frame_base, frame).run(ops, count);
}

std::optional<uint32_t> frame_base_of(Dwarf_Die &function, uint32_t pc,
                                      const FrameAccess &frame) {
  Dwarf_Attribute attr;
  if (!dwarf_attr_integrate(&function, DW_AT_frame_base, &attr))
    return std::nullopt;
  Location l = evaluate_location(attr, pc, std::nullopt, frame);
  std::vector<uint8_t> b;
  if (l.kind == Location::Kind::Memory) // DW_OP_bregN: an address
    return l.address;
  if (!l.read(frame, 4, b))
    return std::nullopt;
  return uint32_t(b[0] | b[1] << 8 | b[2] << 16 | uint32_t(b[3]) << 24);
}

} // namespace nicemu
