// Reading, writing and damaging the gzip files nicemu writes (recordings,
// checkpoint files), for tests that look inside them or spoil them.
#pragma once

#include <doctest/doctest.h>

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace e2e {

// The uncompressed bytes of a gzip file.
inline std::string gunzip(const std::string &path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string data;
  char buf[1 << 14];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    data.append(buf, size_t(n));
  gzclose(f);
  return data;
}

inline void gzip_to(const std::string &path, const std::string &data) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, data.data(), unsigned(data.size())) == int(data.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// What one gzip stream in memory decodes to, or nothing when zlib finds it
// damaged (a bad code, a wrong check sum, a short stream).
inline std::optional<std::string> inflated(const std::vector<uint8_t> &bytes) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK); // gzip wrapper
  z.next_in = const_cast<Bytef *>(bytes.data());
  z.avail_in = uInt(bytes.size());
  std::string out;
  int ret = Z_OK;
  while (ret == Z_OK) {
    char buf[1 << 14];
    z.next_out = reinterpret_cast<Bytef *>(buf);
    z.avail_out = sizeof buf;
    ret = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  if (ret != Z_STREAM_END)
    return std::nullopt;
  return out;
}

// Flips one bit near the middle of a gzip file such that what it decodes
// to changes (or zlib refuses it). Some flips change nothing: a bit of the
// header's time stamp, or one of the few in deflate's code tables that
// leave the same codes; a test that needs damage must not hit those.
inline void flip_a_bit_that_matters(std::vector<uint8_t> &bytes) {
  const std::optional<std::string> before = inflated(bytes);
  REQUIRE(before.has_value());
  for (size_t at = bytes.size() / 2; at < bytes.size(); ++at) {
    bytes[at] ^= 0x10;
    if (inflated(bytes) != before)
      return;
    bytes[at] ^= 0x10;
  }
  FAIL("no bit past the middle changes the file");
}

} // namespace e2e
