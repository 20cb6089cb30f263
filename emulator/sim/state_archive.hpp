// A run's state as bytes, for checkpoint files (docs/replay.md,
// "Checkpoint files"). Every stateful part of a run writes its fields into
// a StateWriter and reads them back, in the same order, from a
// StateReader. Each part opens with a named section, so that a file made
// by another build, or for another cluster, is refused at the first part
// that differs, by name, instead of being read as something else.
#pragma once

#include "nicemu/error.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace nicemu {

class StateWriter {
public:
  void section(std::string_view name) { str(name); }
  void u8(uint8_t v) { pod(v); }
  void u32(uint32_t v) { pod(v); }
  void u64(uint64_t v) { pod(v); }
  void flag(bool v) { pod(uint8_t(v)); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void bytes(std::span<const uint8_t> b) {
    u64(b.size());
    raw(b.data(), b.size());
  }
  // A fixed-size value copied as it lies in memory (the file is read by
  // the same build on the same kind of machine: the header checks both).
  // No padding (whose bytes are whatever memory held: the same state would
  // make other files): a struct with some is written field by field.
  template <class T> void pod(const T &v) {
    static_assert(std::has_unique_object_representations_v<T>);
    raw(&v, sizeof v);
  }
  template <class T> void pods(const std::vector<T> &v) {
    static_assert(std::has_unique_object_representations_v<T>);
    u64(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
  // Several fields at once: plain values, strings, lists of plain values
  // and optional plain values. A part lists its fields once, in a template
  // that both saves and loads them (StateReader::fields takes the same).
  template <class... T> void fields(const T &...v) { (field(v), ...); }
  void raw(const void *p, size_t n) {
    if (n == 0)
      return; // p may be an empty vector's null data()
    auto b = static_cast<const uint8_t *>(p);
    data_.insert(data_.end(), b, b + n);
  }
  const std::vector<uint8_t> &data() const { return data_; }
  std::vector<uint8_t> take() { return std::move(data_); }

private:
  template <class T> void field(const T &v) { pod(v); }
  void field(bool v) { flag(v); }
  void field(const std::string &v) { str(v); }
  template <class T> void field(const std::vector<T> &v) { pods(v); }
  template <class T> void field(const std::optional<T> &v) {
    flag(v.has_value());
    if (v)
      pod(*v);
  }
  std::vector<uint8_t> data_;
};

class StateReader {
public:
  // `what` names the bytes in messages ("checkpoint FILE").
  StateReader(std::span<const uint8_t> data, std::string what)
      : data_(data), what_(std::move(what)) {}

  // The next part must be `name`.
  void section(std::string_view name) {
    size_t at = pos_;
    std::string got = str(256);
    if (got != name)
      fail("expected the state of " + std::string(name) + " at byte " +
           std::to_string(at) + ", found \"" + got +
           "\" (a checkpoint of another cluster, or of another build)");
  }
  uint8_t u8() { return pod<uint8_t>(); }
  uint32_t u32() { return pod<uint32_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  bool flag() {
    uint8_t v = u8();
    if (v > 1)
      fail("a flag holds " + std::to_string(v));
    return v != 0;
  }
  // A length, at most `max`.
  uint64_t count(uint64_t max) {
    uint64_t n = u64();
    if (n > max || n > left())
      fail("a length of " + std::to_string(n) + " where at most " +
           std::to_string(std::min<uint64_t>(max, left())) + " fit");
    return n;
  }
  std::string str(uint64_t max = 1 << 20) {
    uint64_t n = count(max);
    std::string s(n, '\0');
    raw(s.data(), n);
    return s;
  }
  std::vector<uint8_t> bytes(uint64_t max) {
    std::vector<uint8_t> b(count(max));
    raw(b.data(), b.size());
    return b;
  }
  // Exactly `n` bytes into `out` (a memory of known size).
  void bytes_into(void *out, uint64_t n) {
    if (count(n) != n)
      fail("a memory of " + std::to_string(n) + " bytes has another size");
    raw(out, n);
  }
  template <class T> T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    raw(&v, sizeof v);
    return v;
  }
  template <class T> std::vector<T> pods(uint64_t max) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> v(count(max)); // count: at most one element per byte left
    raw(v.data(), v.size() * sizeof(T));
    return v;
  }
  template <class... T> void fields(T &...v) { (field(v), ...); }
  void raw(void *out, size_t n) {
    if (n > left())
      fail("cut short");
    if (n == 0)
      return; // memcpy may not be given null, even for nothing
    std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
  }
  size_t left() const { return data_.size() - pos_; }
  bool done() const { return pos_ == data_.size(); }
  [[noreturn]] void fail(const std::string &why) const {
    throw Error(what_ + ": " + why);
  }

private:
  template <class T> void field(T &v) { v = pod<T>(); }
  void field(bool &v) { v = flag(); }
  void field(std::string &v) { v = str(); }
  template <class T> void field(std::vector<T> &v) {
    v = pods<T>(uint64_t(1) << 32);
  }
  template <class T> void field(std::optional<T> &v) {
    v.reset();
    if (flag())
      v = pod<T>();
  }
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  std::string what_;
};

} // namespace nicemu
