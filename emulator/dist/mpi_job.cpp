#include "dist/mpi_job.hpp"

#include <cstdlib>
#include <string>

namespace nicemu {

namespace {

std::optional<uint32_t> variable(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return std::nullopt;
  std::string s(v);
  if (s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return uint32_t(std::stoul(s));
}

std::optional<MpiJob> job(const char *rank, const char *size) {
  auto r = variable(rank), n = variable(size);
  if (!r || !n || *n == 0 || *r >= *n)
    return std::nullopt;
  return MpiJob{*r, *n};
}

} // namespace

std::optional<MpiJob> mpi_job_from_environment() {
  if (auto j = job("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"))
    return j;
  return job("PMI_RANK", "PMI_SIZE");
}

} // namespace nicemu
