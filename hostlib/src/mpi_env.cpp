// nicemu's MPI: the environment: MPI_Init and MPI_Finalize, thread levels,
// MPI_Abort, the clock, names and versions.
#include "mpi_base.hpp"
#include "mpi_coll.hpp"
#include "mpi_comm.hpp"
#include "mpi_datatype.hpp"
#include "mpi_p2p.hpp"
#include "mpi_transport.hpp"
#include "mpi_win.hpp"
#include "nicemu/host.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

namespace nicemu::mpi {

namespace {

int thread_level = MPI_THREAD_SINGLE;
std::thread::id main_thread;

void init(int required) {
  if (phase() != Phase::Before)
    fail(MPI_ERR_OTHER, phase() == Phase::Running
                            ? "MPI is initialized already"
                            : "MPI cannot be initialized after MPI_Finalize");
  try {
    nicemu::host::rank();
  } catch (const nicemu::host::Error &) {
    fail(MPI_ERR_OTHER, "not started by nicemu run: run MPI programs with "
                        "`nicemu run -n N --model uzura --firmware "
                        "uzura.img -- ./program`");
  }
  // Handlers first: a faster rank's messages may come during start-up.
  datatypes_init();
  p2p_init();
  windows_init();
  rma_init();
  transport::open();
  comms_init(transport::rank(), transport::size());
  thread_level = std::min(required, MPI_THREAD_FUNNELED);
  main_thread = std::this_thread::get_id();
  set_phase(Phase::Running);
}

int copy_string(char *out, const char *in, int max) {
  int n = int(std::strlen(in));
  if (n >= max)
    n = max - 1;
  std::memcpy(out, in, size_t(n));
  out[n] = 0;
  return n;
}

} // namespace

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Init(int *, char ***) {
  return call("MPI_Init", on_world(), [&] { init(MPI_THREAD_SINGLE); });
}

int MPI_Init_thread(int *, char ***, int required, int *provided) {
  return call("MPI_Init_thread", on_world(), [&] {
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
      fail(MPI_ERR_ARG, "required is not a thread level");
    if (!provided)
      fail(MPI_ERR_ARG, "a null provided");
    init(required);
    *provided = thread_level;
  });
}

int MPI_Initialized(int *flag) {
  return call("MPI_Initialized", on_world(), [&] {
    if (!flag)
      fail(MPI_ERR_ARG, "a null flag");
    *flag = phase() != Phase::Before;
  });
}

int MPI_Finalized(int *flag) {
  return call("MPI_Finalized", on_world(), [&] {
    if (!flag)
      fail(MPI_ERR_ARG, "a null flag");
    *flag = phase() == Phase::Finalized;
  });
}

int MPI_Finalize(void) {
  return call("MPI_Finalize", on_world(), [&] {
    require_running();
    team_barrier(comm_of(MPI_COMM_WORLD).team());
    transport::close();
    rma_finalize();
    windows_finalize();
    p2p_finalize();
    comms_finalize();
    datatypes_finalize();
    set_phase(Phase::Finalized);
  });
}

int MPI_Query_thread(int *provided) {
  return call("MPI_Query_thread", on_world(), [&] {
    require_running();
    if (!provided)
      fail(MPI_ERR_ARG, "a null provided");
    *provided = thread_level;
  });
}

int MPI_Is_thread_main(int *flag) {
  return call("MPI_Is_thread_main", on_world(), [&] {
    require_running();
    if (!flag)
      fail(MPI_ERR_ARG, "a null flag");
    *flag = std::this_thread::get_id() == main_thread;
  });
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  // The whole job ends: this process exits with the code (1 if its low
  // byte is 0, so that the run fails), and nicemu stops the others.
  int status = errorcode & 0xFF ? errorcode & 0xFF : 1;
  char what[160];
  std::snprintf(
      what, sizeof what, "MPI_Abort(%s, %d): the job ends (exit status %d)",
      comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "comm", errorcode, status);
  abort_job(status, what);
}

int MPI_Get_version(int *version, int *subversion) {
  return call("MPI_Get_version", on_world(), [&] {
    if (!version || !subversion)
      fail(MPI_ERR_ARG, "a null version or subversion");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
  });
}

int MPI_Get_library_version(char *version, int *resultlen) {
  return call("MPI_Get_library_version", on_world(), [&] {
    if (!version || !resultlen)
      fail(MPI_ERR_ARG, "a null version or resultlen");
    std::string v = std::string("nicemu MPI ") + nicemu::host::version() +
                    " (an MPI-3.1 subset on the UZURA card; docs/mpi.md)";
    *resultlen =
        copy_string(version, v.c_str(), MPI_MAX_LIBRARY_VERSION_STRING);
  });
}

int MPI_Get_processor_name(char *name, int *resultlen) {
  return call("MPI_Get_processor_name", on_world(), [&] {
    if (!name || !resultlen)
      fail(MPI_ERR_ARG, "a null name or resultlen");
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    if (gethostname(host, sizeof host) != 0)
      std::snprintf(host, sizeof host, "node%u", nicemu::host::rank());
    host[sizeof host - 1] = 0;
    *resultlen = copy_string(name, host, MPI_MAX_PROCESSOR_NAME);
  });
}

// The virtual clock, read as a program reads the clock (each read costs
// the host a little virtual time, so a loop on MPI_Wtime moves on).
double MPI_Wtime(void) {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double MPI_Wtick(void) {
  return 1e-9;
}

} // extern "C"
