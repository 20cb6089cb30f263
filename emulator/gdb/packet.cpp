#include "gdb/packet.hpp"

namespace nicemu::gdb {

namespace {

constexpr char kDigits[] = "0123456789abcdef";

bool needs_escape(char c) {
  return c == '$' || c == '#' || c == '}' || c == '*';
}

} // namespace

PacketReader::Item PacketReader::push(char c) {
  switch (state_) {
  case State::Idle:
    if (c == '$') {
      reset();
      state_ = State::Payload;
      return Item::None;
    }
    if (c == '\x03')
      return Item::Interrupt;
    if (c == '+')
      return Item::Ack;
    if (c == '-')
      return Item::Nack;
    return Item::None; // noise between packets
  case State::Payload:
    if (c == '#') {
      state_ = State::Check1;
    } else if (c == '$') {
      reset(); // the previous packet was cut: resynchronise on this one
      state_ = State::Payload;
    } else {
      sum_ = uint8_t(sum_ + uint8_t(c));
      if (payload_.size() < max_)
        payload_ += c;
      else
        overflow_ = true;
    }
    return Item::None;
  case State::Check1:
  case State::Check2: {
    int v = hex_value(c);
    check_ok_ = check_ok_ && v >= 0;
    check_ = check_ * 16 + unsigned(v < 0 ? 0 : v);
    if (state_ == State::Check1) {
      state_ = State::Check2;
      return Item::None;
    }
    state_ = State::Idle;
    if (!check_ok_ || check_ != sum_)
      return Item::BadChecksum;
    return overflow_ ? Item::Overflow : Item::Packet;
  }
  }
  return Item::None;
}

void PacketReader::reset() {
  state_ = State::Idle;
  payload_.clear();
  overflow_ = false;
  sum_ = 0;
  check_ = 0;
  check_ok_ = true;
}

std::string frame(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 4);
  out += '$';
  uint8_t sum = 0;
  auto put = [&](char c) {
    out += c;
    sum = uint8_t(sum + uint8_t(c));
  };
  for (char c : payload) {
    if (needs_escape(c)) {
      put('}');
      put(char(c ^ 0x20));
    } else {
      put(c);
    }
  }
  out += '#';
  out += kDigits[sum >> 4];
  out += kDigits[sum & 15];
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void append_hex(std::string &out, std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
}

std::string hex_encode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  append_hex(out,
             {reinterpret_cast<const uint8_t *>(text.data()), text.size()});
  return out;
}

bool hex_decode(std::string_view hex, std::vector<uint8_t> &out) {
  out.clear();
  if (hex.size() % 2)
    return false;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out.push_back(uint8_t(hi * 16 + lo));
  }
  return true;
}

bool parse_hex(std::string_view field, uint64_t &value) {
  if (field.empty() || field.size() > 16)
    return false;
  value = 0;
  for (char c : field) {
    int v = hex_value(c);
    if (v < 0)
      return false;
    value = value * 16 + uint64_t(v);
  }
  return true;
}

bool parse_address(std::string_view field, uint32_t &addr) {
  uint64_t v = 0;
  if (!parse_hex(field, v))
    return false;
  uint64_t high = v >> 32;
  bool sign_extended = high == 0xffffffff && (v & 0x80000000u);
  if (high != 0 && !sign_extended)
    return false;
  addr = uint32_t(v);
  return true;
}

bool unescape_binary(std::string_view data, std::vector<uint8_t> &out) {
  out.clear();
  out.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != '}') {
      out.push_back(uint8_t(data[i]));
      continue;
    }
    if (++i == data.size())
      return false; // an escape with nothing after it
    out.push_back(uint8_t(data[i] ^ 0x20));
  }
  return true;
}

void append_le32(std::string &out, uint32_t value) {
  uint8_t bytes[4] = {uint8_t(value), uint8_t(value >> 8), uint8_t(value >> 16),
                      uint8_t(value >> 24)};
  append_hex(out, bytes);
}

bool parse_le32(std::string_view hex, uint32_t &value) {
  std::vector<uint8_t> bytes;
  if (hex.size() != 8 || !hex_decode(hex, bytes))
    return false;
  value = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 |
          uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
  return true;
}

std::string hex_number(uint64_t value) {
  std::string out;
  do {
    out.insert(out.begin(), kDigits[value & 15]);
    value >>= 4;
  } while (value);
  return out;
}

// Thread ids as GDB sends them: hex, "-1" (all), "0" (any), or "pPID.TID".
bool parse_thread_id(std::string_view s, ThreadId &thread) {
  if (!s.empty() && s[0] == 'p') {
    size_t dot = s.find('.');
    s = dot == std::string_view::npos ? "-1" : s.substr(dot + 1);
  }
  if (s == "-1") {
    thread = kAllThreads;
    return true;
  }
  uint64_t v = 0;
  if (!parse_hex(s, v) || v >= kAllThreads)
    return false;
  thread = ThreadId(v);
  return true;
}

} // namespace nicemu::gdb
