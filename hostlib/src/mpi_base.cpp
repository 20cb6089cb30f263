// nicemu's MPI: errors (codes, their names and strings, the handlers'
// effect) and the library's phase (mpi_base.hpp).
#include "mpi_base.hpp"

#include "nicemu/host.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace nicemu::mpi {

namespace {

Phase current = Phase::Before;

struct ErrorText {
  int code;
  const char *name;
  const char *text;
};

constexpr ErrorText kErrors[] = {
    {MPI_SUCCESS, "MPI_SUCCESS", "no error"},
    {MPI_ERR_BUFFER, "MPI_ERR_BUFFER", "invalid buffer pointer"},
    {MPI_ERR_COUNT, "MPI_ERR_COUNT", "invalid count argument"},
    {MPI_ERR_TYPE, "MPI_ERR_TYPE", "invalid datatype"},
    {MPI_ERR_TAG, "MPI_ERR_TAG", "invalid tag"},
    {MPI_ERR_COMM, "MPI_ERR_COMM", "invalid communicator"},
    {MPI_ERR_RANK, "MPI_ERR_RANK", "invalid rank"},
    {MPI_ERR_REQUEST, "MPI_ERR_REQUEST", "invalid request"},
    {MPI_ERR_ROOT, "MPI_ERR_ROOT", "invalid root"},
    {MPI_ERR_GROUP, "MPI_ERR_GROUP", "invalid group"},
    {MPI_ERR_OP, "MPI_ERR_OP", "invalid reduction operation"},
    {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY", "invalid topology"},
    {MPI_ERR_DIMS, "MPI_ERR_DIMS", "invalid dimension argument"},
    {MPI_ERR_ARG, "MPI_ERR_ARG", "invalid argument"},
    {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"},
    {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE", "message truncated"},
    {MPI_ERR_OTHER, "MPI_ERR_OTHER", "other error"},
    {MPI_ERR_INTERN, "MPI_ERR_INTERN", "internal error"},
    {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS", "error code is in status"},
    {MPI_ERR_PENDING, "MPI_ERR_PENDING", "pending request"},
    {MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL", "invalid keyval"},
    {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM", "out of memory"},
    {MPI_ERR_BASE, "MPI_ERR_BASE", "invalid base address"},
    {MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY", "invalid info key"},
    {MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE", "invalid info value"},
    {MPI_ERR_INFO_NOKEY, "MPI_ERR_INFO_NOKEY", "no such info key"},
    {MPI_ERR_SPAWN, "MPI_ERR_SPAWN", "error spawning processes"},
    {MPI_ERR_PORT, "MPI_ERR_PORT", "invalid port name"},
    {MPI_ERR_SERVICE, "MPI_ERR_SERVICE", "invalid service name"},
    {MPI_ERR_NAME, "MPI_ERR_NAME", "invalid name"},
    {MPI_ERR_WIN, "MPI_ERR_WIN", "invalid window"},
    {MPI_ERR_SIZE, "MPI_ERR_SIZE", "invalid size"},
    {MPI_ERR_DISP, "MPI_ERR_DISP", "invalid displacement"},
    {MPI_ERR_INFO, "MPI_ERR_INFO", "invalid info object"},
    {MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE", "invalid lock type"},
    {MPI_ERR_ASSERT, "MPI_ERR_ASSERT", "invalid assert argument"},
    {MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT",
     "conflicting accesses to a window"},
    {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC",
     "wrong synchronization of RMA calls"},
    {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE",
     "target memory is not part of the window"},
    {MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH", "memory cannot be attached"},
    {MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED", "memory cannot be shared"},
    {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR", "wrong window flavor"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "MPI_ERR_UNSUPPORTED_DATAREP",
     "unsupported data representation"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION",
     "operation not supported by nicemu's MPI"},
    {MPI_ERR_FILE, "MPI_ERR_FILE", "invalid file handle"},
    {MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME",
     "collective argument not identical on all processes"},
    {MPI_ERR_AMODE, "MPI_ERR_AMODE", "invalid file access mode"},
    {MPI_ERR_ACCESS, "MPI_ERR_ACCESS", "permission denied"},
    {MPI_ERR_NO_SPACE, "MPI_ERR_NO_SPACE", "not enough space"},
    {MPI_ERR_QUOTA, "MPI_ERR_QUOTA", "quota exceeded"},
    {MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY", "read-only file or file system"},
    {MPI_ERR_FILE_IN_USE, "MPI_ERR_FILE_IN_USE", "file in use"},
    {MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP",
     "data representation already defined"},
    {MPI_ERR_CONVERSION, "MPI_ERR_CONVERSION", "conversion error"},
    {MPI_ERR_IO, "MPI_ERR_IO", "I/O error"},
    {MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS", "file exists"},
    {MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE", "no such file"},
    {MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE", "invalid file name"},
};
static_assert(sizeof kErrors / sizeof kErrors[0] == MPI_ERR_LASTCODE + 1);

const ErrorText *text_of(int code) {
  if (code < 0 || code > MPI_ERR_LASTCODE)
    return nullptr;
  return &kErrors[code];
}

int my_rank() {
  try {
    return int(nicemu::host::rank());
  } catch (...) {
    return -1;
  }
}

} // namespace

void fail(int code, std::string what) {
  throw Failure{code, std::move(what)};
}

Phase phase() {
  return current;
}

void set_phase(Phase p) {
  current = p;
}

void require_running() {
  if (current == Phase::Before)
    fail(MPI_ERR_OTHER, "called before MPI_Init");
  if (current == Phase::Finalized)
    fail(MPI_ERR_OTHER, "called after MPI_Finalize");
}

const char *error_name(int code) {
  const ErrorText *t = text_of(code);
  return t ? t->name : "(unknown error code)";
}

void abort_job(int status, const std::string &message) {
  std::fflush(stdout);
  int rank = my_rank();
  if (rank >= 0)
    std::fprintf(stderr, "nicemu MPI: rank %d: %s\n", rank, message.c_str());
  else
    std::fprintf(stderr, "nicemu MPI: %s\n", message.c_str());
  std::fflush(stderr);
  // _exit, not exit: the process ends without telling the emulator it
  // leaves, as a crash would, so the emulator stops the other ranks and
  // the run's exit status is this one.
  _exit(status);
}

int handle_failure(const char *name, int errhandler,
                   const Failure &f) noexcept {
  if (errhandler == MPI_ERRORS_RETURN)
    return f.code;
  std::string message = std::string(name) + ": " + error_name(f.code) + ": " +
                        f.what +
                        " (errors are fatal: MPI_Comm_set_errhandler with "
                        "MPI_ERRORS_RETURN returns them instead)";
  abort_job(1, message);
}

void internal_failure(const char *name, const char *what) noexcept {
  abort_job(1, std::string(name) + ": " + what);
}

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  return call("MPI_Error_string", on_world(), [&] {
    if (!string || !resultlen)
      fail(MPI_ERR_ARG, "a null string or resultlen");
    const ErrorText *t = text_of(errorcode);
    if (!t)
      fail(MPI_ERR_ARG, "no such error code: " + std::to_string(errorcode));
    int n =
        std::snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", t->name, t->text);
    *resultlen = n;
  });
}

int MPI_Error_class(int errorcode, int *errorclass) {
  return call("MPI_Error_class", on_world(), [&] {
    if (!errorclass)
      fail(MPI_ERR_ARG, "a null errorclass");
    if (!text_of(errorcode))
      fail(MPI_ERR_ARG, "no such error code: " + std::to_string(errorcode));
    *errorclass = errorcode; // every code is its own class
  });
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler) {
  return call("MPI_Errhandler_free", on_world(), [&] {
    if (!errhandler || (*errhandler != MPI_ERRORS_ARE_FATAL &&
                        *errhandler != MPI_ERRORS_RETURN))
      fail(MPI_ERR_ARG, "not an error handler");
    *errhandler = MPI_ERRHANDLER_NULL; // the predefined ones stay
  });
}

} // extern "C"
