// The framing of the GDB remote protocol ($payload#checksum, acks, the
// interrupt byte, escapes) and the hex encodings inside packets.
#pragma once

#include "gdb/target.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nicemu::gdb {

// Cuts the byte stream from the debugger into packets, one byte at a time,
// so it works on whatever a non-blocking read returned. Memory is bounded: a
// packet longer than the limit is dropped whole and reported as Overflow.
class PacketReader {
public:
  enum class Item {
    None,        // nothing complete yet
    Packet,      // payload() holds a packet with a good checksum
    BadChecksum, // a packet arrived damaged
    Overflow,    // a packet longer than the limit arrived (dropped)
    Interrupt,   // the 0x03 byte between packets
    Ack,         // '+'
    Nack,        // '-': resend the last packet
  };

  explicit PacketReader(size_t max_payload) : max_(max_payload) {}
  Item push(char c);
  // The payload of the last Packet, still escaped as it came.
  const std::string &payload() const { return payload_; }
  void reset();

private:
  enum class State { Idle, Payload, Check1, Check2 };
  State state_ = State::Idle;
  size_t max_;
  std::string payload_;
  bool overflow_ = false;
  uint8_t sum_ = 0;      // of the payload bytes as received
  unsigned check_ = 0;   // the checksum as received
  bool check_ok_ = true; // both checksum characters were hex digits
};

// "$payload#cs" with '$', '#', '}' and '*' escaped, so any bytes can travel.
std::string frame(std::string_view payload);

int hex_value(char c); // -1 if not a hex digit
void append_hex(std::string &out, std::span<const uint8_t> bytes);
std::string hex_encode(std::string_view text);
// The bytes of an even-length hex string; false on anything else.
bool hex_decode(std::string_view hex, std::vector<uint8_t> &out);
// A whole field of 1 to 16 hex digits.
bool parse_hex(std::string_view field, uint64_t &value);
// A 32-bit target address; GDB's MIPS sign-extends them to 64 bits.
bool parse_address(std::string_view field, uint32_t &addr);
// Undoes the '}' escapes of binary data (X packets).
bool unescape_binary(std::string_view data, std::vector<uint8_t> &out);
// A 32-bit register in target (little-endian) byte order, as 8 hex digits.
void append_le32(std::string &out, uint32_t value);
bool parse_le32(std::string_view hex, uint32_t &value);
// A thread id as GDB sends it: hex, "-1" (all), "0" (any) or "pPID.TID".
bool parse_thread_id(std::string_view field, ThreadId &thread);
// A number in lower-case hex without leading zeros (thread ids, addresses).
std::string hex_number(uint64_t value);

} // namespace nicemu::gdb
