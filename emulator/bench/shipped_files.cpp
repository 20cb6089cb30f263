#include "bench/shipped_files.hpp"

#include <unistd.h>

#include <filesystem>

namespace nicemu {

namespace fs = std::filesystem;

namespace {

// The install prefix of the running executable: <exe>/.. (empty if the
// executable is unknown).
fs::path prefix() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return {};
  exe[n] = 0;
  return fs::path(exe).parent_path() / "..";
}

} // namespace

std::string shipped_firmware_dir() {
  return (prefix() / "share/nicemu/firmware").lexically_normal().string();
}

std::string shipped_image(const std::string &name) {
  return (fs::path(shipped_firmware_dir()) / name).string();
}

std::string shipped_programs_dir() {
  return (prefix() / "lib/nicemu/examples").lexically_normal().string();
}

} // namespace nicemu
