// Small text files a user writes (topologies, partitions): read whole, and
// the numbers in them; lists of numbers as a person reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

// The file's text. Throws nicemu::Error "cannot read <what> <path>: <why>",
// or "<path>: more than N MiB, too large for a <what>" beyond `max_bytes`
// (a device such as /dev/zero is never read to its end).
std::string read_text_file(const std::string &path, const std::string &what,
                           size_t max_bytes);

// A decimal number below 2^32, digits only, or nothing.
std::optional<uint32_t> parse_u32(const std::string &s);

// Numbers in increasing order with runs shortened, for a person: "3",
// "0-511,1024" (separator ","), "0, 2-7" (", ").
std::string number_ranges(const std::vector<uint32_t> &sorted,
                          const std::string &separator);

} // namespace nicemu
