#include "observe/pcap_writer.hpp"

#include "nicemu/error.hpp"
#include "observe/link_names.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace nicemu {

namespace fs = std::filesystem;

namespace {

constexpr size_t kFlushBytes = 64 * 1024;

void put16(std::vector<uint8_t> &out, uint32_t v) {
  out.push_back(uint8_t(v));
  out.push_back(uint8_t(v >> 8));
}
void put32(std::vector<uint8_t> &out, uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}
void put64(std::vector<uint8_t> &out, uint64_t v) {
  put32(out, uint32_t(v));
  put32(out, uint32_t(v >> 32));
}

// Characters other than letters, digits, '.', '-' and '_' are not expected
// in endpoint names; replace them so a name never leaves the directory.
std::string file_safe(std::string_view name) {
  std::string safe(name);
  for (char &c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_')
      c = '_';
  return safe;
}

bool is_capture_name(const std::string &name) {
  return name.size() > 10 && name.rfind("link-", 0) == 0 &&
         name.compare(name.size() - 5, 5, ".pcap") == 0;
}

} // namespace

std::string PcapWriter::file_name(std::string_view a, std::string_view b) {
  if (endpoint_before(b, a))
    std::swap(a, b);
  std::string name("link-");
  name += file_safe(a);
  name += '-';
  name += file_safe(b);
  name += ".pcap";
  return name;
}

bool PcapWriter::forward(std::string_view from, std::string_view to) {
  return !endpoint_before(to, from);
}

PcapWriter::PcapWriter(const std::string &dir) : dir_(dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error("--pcap: cannot create directory '" + dir +
                "': " + ec.message());
  if (!fs::is_directory(dir, ec))
    throw Error("--pcap: '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error("--pcap: cannot write in '" + dir +
                "': " + std::strerror(errno));
  // Captures of an earlier run would mix with this one's.
  std::vector<fs::path> stale;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && is_capture_name(e.path().filename().string()))
      stale.push_back(e.path());
  for (const fs::path &p : stale)
    if (!fs::remove(p, ec) && ec)
      throw Error("--pcap: cannot remove the old capture '" + p.string() +
                  "': " + ec.message());
}

PcapWriter::~PcapWriter() {
  try {
    finish();
  } catch (const Error &) {
    // finish() is the place to hear about errors; a destructor cannot say.
  }
}

void PcapWriter::write_out(Capture &capture) {
  if (capture.pending.empty())
    return;
  std::FILE *file =
      std::fopen(capture.path.c_str(), capture.created ? "ab" : "wb");
  bool ok =
      file && std::fwrite(capture.pending.data(), 1, capture.pending.size(),
                          file) == capture.pending.size();
  int error = errno;
  if (file)
    ok = std::fclose(file) == 0 && ok;
  if (!ok && error_.empty())
    error_ = "--pcap: could not write '" + capture.path +
             "': " + std::strerror(error ? error : EIO);
  capture.created = true;
  capture.pending.clear();
}

void PcapWriter::finish() {
  if (finished_)
    return;
  finished_ = true;
  for (auto &capture : captures_)
    if (capture)
      write_out(*capture);
  if (!error_.empty())
    throw Error(error_);
}

void PcapWriter::link_packet(const LinkRef &link, uint32_t source,
                             uint64_t packet_id, Time head, Time tail,
                             std::span<const uint8_t> frame) {
  if (finished_)
    return;
  if (link.index >= captures_.size())
    captures_.resize(size_t(link.index) + 1);
  std::unique_ptr<Capture> &capture = captures_[link.index];
  std::vector<uint8_t> *out;
  if (!capture) {
    capture = std::make_unique<Capture>();
    capture->path = (fs::path(dir_) / file_name(link.from, link.to)).string();
    capture->type = link.ethernet ? LinkType::Ethernet
                    : link.rhinet ? LinkType::NicemuRhinet
                                  : LinkType::NicemuMyrinet;
    out = &capture->pending;
    put32(*out, kMagicNanoseconds);
    put16(*out, 2); // version 2.4
    put16(*out, 4);
    put32(*out, 0); // thiszone: the virtual clock's zero
    put32(*out, 0); // sigfigs
    put32(*out, kSnapLength);
    put32(*out, uint32_t(capture->type));
  }
  out = &capture->pending;
  uint64_t ns = uint64_t(head) / 1000;
  bool ethernet = capture->type == LinkType::Ethernet;
  // Ethernet: as a NIC captures a frame, without preamble and FCS.
  std::span<const uint8_t> data =
      ethernet ? frame.first(frame.size() - std::min<size_t>(frame.size(), 4))
               : frame;
  size_t header = ethernet ? 0 : kPseudoHeaderBytes;
  size_t length = header + data.size();
  size_t kept = std::min<size_t>(length, kSnapLength);
  put32(*out, uint32_t(ns / 1'000'000'000));
  put32(*out, uint32_t(ns % 1'000'000'000));
  put32(*out, uint32_t(kept));
  put32(*out, uint32_t(length));
  if (!ethernet) {
    // The pseudo-header (docs/profiling.md), little-endian.
    out->push_back(kPseudoHeaderVersion);
    out->push_back(forward(link.from, link.to) ? 0 : 1);
    put16(*out, std::min<uint32_t>(link.route_bytes, 0xFFFF));
    put32(*out, source);
    put64(*out, packet_id);
    put64(*out, uint64_t(std::max(head, tail) - head));
    put32(*out, link.destination);
  }
  out->insert(out->end(), data.begin(), data.begin() + long(kept - header));
  if (out->size() >= kFlushBytes)
    write_out(*capture);
}

} // namespace nicemu
