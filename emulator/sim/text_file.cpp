#include "sim/text_file.hpp"

#include "nicemu/error.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace nicemu {

std::string read_text_file(const std::string &path, const std::string &what,
                           size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot read " + what + " " + path + ": " +
                std::strerror(errno));
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, size_t(in.gcount()));
    if (text.size() > max_bytes)
      throw Error(path + ": more than " + std::to_string(max_bytes >> 20) +
                  " MiB, too large for a " + what);
  }
  if (in.bad())
    throw Error("cannot read " + what + " " + path);
  return text;
}

std::optional<uint32_t> parse_u32(const std::string &s) {
  if (s.empty() || s.size() > 10 ||
      s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  uint64_t v = std::stoull(s);
  if (v > UINT32_MAX)
    return std::nullopt;
  return uint32_t(v);
}

std::string number_ranges(const std::vector<uint32_t> &sorted,
                          const std::string &separator) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1)
      ++j;
    if (!out.empty())
      out += separator;
    out += std::to_string(sorted[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(sorted[j]);
    }
    i = j + 1;
  }
  return out;
}

} // namespace nicemu
