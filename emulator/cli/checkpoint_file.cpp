#include "cli/checkpoint_file.hpp"

#include "nicemu/error.hpp"
#include "sim/state_archive.hpp"

#include <zlib.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace nicemu {

namespace {

constexpr char kMagic[] = "nicemu checkpoint\n";
// 2: the packets in the network keep when they can arrive at the soonest.
constexpr uint32_t kVersion = 2;
// A file holds memory layouts of this build (the cores' registers, events'
// tags): only the same version of nicemu reads it.
constexpr char kBuild[] = NICEMU_VERSION;

} // namespace

std::string checkpoint_name(Time time) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint-%020" PRIu64 "ps.nck",
                uint64_t(time));
  return name;
}

void write_checkpoint(const std::string &path, const CheckpointFile &c) {
  StateWriter w;
  w.raw(kMagic, sizeof kMagic - 1);
  w.u32(kVersion);
  w.str(kBuild);
  w.str(c.run.manifest);
  w.u64(c.run.blobs.size());
  for (const auto &[name, data] : c.run.blobs) {
    w.str(name);
    w.bytes(*data);
  }
  w.u64(c.time);
  w.bytes(c.state);
  const std::string temp = path + ".part";
  // Level 1: memories' zero pages are gone already; what is left
  // compresses about as well at higher levels, at a fraction of the time.
  gzFile f = gzopen(temp.c_str(), "wb1");
  if (!f)
    throw Error("checkpoint " + path +
                ": cannot write: " + std::strerror(errno));
  const std::vector<uint8_t> &data = w.data();
  bool ok = true;
  for (size_t done = 0; ok && done < data.size();) {
    unsigned chunk = unsigned(std::min<size_t>(data.size() - done, 1 << 30));
    ok = gzwrite(f, data.data() + done, chunk) == int(chunk);
    done += chunk;
  }
  if (gzclose(f) != Z_OK || !ok || std::rename(temp.c_str(), path.c_str())) {
    std::remove(temp.c_str());
    throw Error("checkpoint " + path + ": cannot write (disk full?)");
  }
}

CheckpointFile read_checkpoint(const std::string &path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw Error(path + ": cannot read: " + std::strerror(errno));
  std::vector<uint8_t> data;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    data.insert(data.end(), buf, buf + n);
  int err = Z_OK;
  std::string why = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  const std::string what = path + ": not a nicemu checkpoint, or a damaged one";
  if (n < 0)
    throw Error(what + " (" + why + ")");
  StateReader r(data, what);
  const size_t magic = sizeof kMagic - 1;
  if (data.size() < magic || std::memcmp(data.data(), kMagic, magic) != 0)
    r.fail("it does not start as one");
  r.raw(buf, magic);
  if (uint32_t v = r.u32(); v != kVersion)
    throw Error(path + ": a checkpoint of format " + std::to_string(v) +
                "; this nicemu reads format " + std::to_string(kVersion));
  if (std::string build = r.str(256); build != kBuild)
    throw Error(path + ": a checkpoint made by nicemu " + build +
                "; it is read only by the same version (this is " + kBuild +
                ")");
  CheckpointFile c;
  c.run.manifest = r.str(1 << 24);
  for (uint64_t blobs = r.count(1 << 20); blobs--;) {
    std::string name = r.str(4096);
    c.run.blobs[name] = std::make_shared<const std::vector<uint8_t>>(
        r.bytes(uint64_t(1) << 40));
  }
  c.time = r.u64();
  c.state = r.bytes(uint64_t(1) << 40);
  if (!r.done())
    r.fail("bytes after its end");
  return c;
}

} // namespace nicemu
