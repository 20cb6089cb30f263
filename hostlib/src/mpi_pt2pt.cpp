// nicemu's MPI: the point-to-point calls and their checks (the protocols
// are mpi_p2p.cpp's), and the calls on requests (MPI_Wait and its
// relatives).
#include "mpi_p2p.hpp"
#include "mpi_transport.hpp"

#include <climits>

namespace nicemu::mpi {

namespace {

void check_count(int count) {
  if (count < 0)
    fail(MPI_ERR_COUNT, "a negative count: " + std::to_string(count));
}

void check_buffer(const void *buf, int count, const Type &type) {
  // MPI_BOTTOM (0) is a valid buffer for a type of absolute addresses.
  if (!buf && count > 0 && type.size > 0 && type.contiguous())
    fail(MPI_ERR_BUFFER,
         "a null buffer for " + std::to_string(count) + " elements");
}

void check_rank(const Comm &c, int rank, bool any_allowed) {
  if (rank == MPI_PROC_NULL || (any_allowed && rank == MPI_ANY_SOURCE))
    return;
  if (rank < 0 || rank >= c.size())
    fail(MPI_ERR_RANK, "rank " + std::to_string(rank) +
                           " is not in the communicator (size " +
                           std::to_string(c.size()) + ")");
}

void check_tag(int tag, bool any_allowed) {
  if (any_allowed && tag == MPI_ANY_TAG)
    return;
  if (tag < 0 || uint32_t(tag) > transport::kMaxTag)
    fail(MPI_ERR_TAG, "tag " + std::to_string(tag) + " is not in [0, " +
                          std::to_string(transport::kMaxTag) + "]");
}

void check_request_out(const MPI_Request *request) {
  if (!request)
    fail(MPI_ERR_REQUEST, "a null request pointer");
}

Request &send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm, bool sync) {
  require_running();
  Comm &c = comm_of(comm);
  check_count(count);
  TypeRef t = committed_type(type);
  check_buffer(buf, count, *t);
  check_rank(c, dest, false);
  check_tag(tag, false);
  if (dest == MPI_PROC_NULL)
    return null_request();
  Request &r = start_send(buf, count, std::move(t), c.world(dest), tag,
                          c.p2p_ctx(), sync);
  r.comm = comm;
  return r;
}

Request &recv(void *buf, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm) {
  require_running();
  Comm &c = comm_of(comm);
  check_count(count);
  TypeRef t = committed_type(type);
  check_buffer(buf, count, *t);
  check_rank(c, source, true);
  check_tag(tag, true);
  if (source == MPI_PROC_NULL)
    return null_request();
  int world = source == MPI_ANY_SOURCE ? -1 : int(c.world(source));
  Request &r =
      start_recv(buf, count, std::move(t), world, tag, c.p2p_ctx(), c.group);
  r.comm = comm;
  return r;
}

// Waits, fills the status, releases the request, raises its error.
void finish(Request &r, MPI_Status *status) {
  std::string what;
  if (int error = complete(r, status, &what))
    fail(error, what);
}

MPI_Request give(Request &r) {
  r.user = true;
  return r.handle;
}

void empty_status(MPI_Status *status) {
  if (!status || status == MPI_STATUS_IGNORE)
    return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  status->nicemu_cancelled = 0;
  status->nicemu_bytes = 0;
}

Request *user_request(MPI_Request h) {
  if (h == MPI_REQUEST_NULL)
    return nullptr;
  Request &r = request_of(h);
  if (!r.user)
    fail(MPI_ERR_REQUEST, "not an active request of the program");
  return &r;
}

void check_array(int count, const MPI_Request *requests) {
  if (count < 0)
    fail(MPI_ERR_COUNT, "a negative count: " + std::to_string(count));
  if (count > 0 && !requests)
    fail(MPI_ERR_REQUEST, "a null array of requests");
}

MPI_Status *status_at(MPI_Status *statuses, int i) {
  return statuses == MPI_STATUSES_IGNORE || !statuses ? MPI_STATUS_IGNORE
                                                      : statuses + i;
}

// Completes every request of the array (all done); MPI_ERR_IN_STATUS if
// one failed. `comm`: the communicator of the first that failed.
void complete_all(int count, MPI_Request *requests, MPI_Status *statuses,
                  MPI_Comm &comm) {
  int failed = 0;
  std::string first;
  for (int i = 0; i < count; ++i) {
    MPI_Status *s = status_at(statuses, i);
    Request *r = user_request(requests[i]);
    if (!r) {
      empty_status(s);
      continue;
    }
    MPI_Comm c = r->comm;
    std::string what;
    if (complete(*r, s, &what) && failed++ == 0) {
      first = what;
      comm = c;
    }
    requests[i] = MPI_REQUEST_NULL;
  }
  if (failed)
    fail(MPI_ERR_IN_STATUS, std::to_string(failed) +
                                " of the requests failed (see their "
                                "statuses); the first: " +
                                first);
}

bool all_done(int count, const MPI_Request *requests) {
  for (int i = 0; i < count; ++i)
    if (Request *r = user_request(requests[i]); r && !r->done)
      return false;
  return true;
}

// The first done request of the array, -1 if none, -2 if all are null.
int first_done(int count, const MPI_Request *requests) {
  bool any = false;
  for (int i = 0; i < count; ++i)
    if (Request *r = user_request(requests[i])) {
      any = true;
      if (r->done)
        return i;
    }
  return any ? -1 : -2;
}

void complete_one(MPI_Request *requests, int i, MPI_Status *status,
                  MPI_Comm &comm) {
  Request &r = *user_request(requests[i]);
  comm = r.comm;
  requests[i] = MPI_REQUEST_NULL;
  finish(r, status);
}

auto on(const MPI_Comm &comm) {
  return [&comm] { return comm_errhandler(comm); };
}

} // namespace

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
             int tag, MPI_Comm comm) {
  return call("MPI_Send", on_comm(comm), [&] {
    finish(send(buf, count, datatype, dest, tag, comm, false),
           MPI_STATUS_IGNORE);
  });
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm) {
  return call("MPI_Ssend", on_comm(comm), [&] {
    finish(send(buf, count, datatype, dest, tag, comm, true),
           MPI_STATUS_IGNORE);
  });
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status) {
  return call("MPI_Recv", on_comm(comm), [&] {
    finish(recv(buf, count, datatype, source, tag, comm), status);
  });
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm, MPI_Request *request) {
  return call("MPI_Isend", on_comm(comm), [&] {
    check_request_out(request);
    *request = give(send(buf, count, datatype, dest, tag, comm, false));
  });
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request) {
  return call("MPI_Issend", on_comm(comm), [&] {
    check_request_out(request);
    *request = give(send(buf, count, datatype, dest, tag, comm, true));
  });
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request) {
  return call("MPI_Irecv", on_comm(comm), [&] {
    check_request_out(request);
    *request = give(recv(buf, count, datatype, source, tag, comm));
  });
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 int dest, int sendtag, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                 MPI_Status *status) {
  return call("MPI_Sendrecv", on_comm(comm), [&] {
    Request &in = recv(recvbuf, recvcount, recvtype, source, recvtag, comm);
    Request &out =
        send(sendbuf, sendcount, sendtype, dest, sendtag, comm, false);
    std::string what;
    int send_error = complete(out, MPI_STATUS_IGNORE, &what);
    finish(in, status);
    if (send_error)
      fail(send_error, what);
  });
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  return call("MPI_Probe", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    check_rank(c, source, true);
    check_tag(tag, true);
    if (source == MPI_PROC_NULL) {
      Request &r = null_request();
      fill_status(r, status);
      release(r);
      return;
    }
    int world = source == MPI_ANY_SOURCE ? -1 : int(c.world(source));
    transport::until([&] {
      return probe_unexpected(world, tag, c.p2p_ctx(), *c.group, status);
    });
  });
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag,
               MPI_Status *status) {
  return call("MPI_Iprobe", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    check_rank(c, source, true);
    check_tag(tag, true);
    if (!flag)
      fail(MPI_ERR_ARG, "a null flag");
    *flag = 1;
    if (source == MPI_PROC_NULL) {
      Request &r = null_request();
      fill_status(r, status);
      release(r);
      return;
    }
    int world = source == MPI_ANY_SOURCE ? -1 : int(c.world(source));
    if (probe_unexpected(world, tag, c.p2p_ctx(), *c.group, status))
      return;
    transport::poll_once_charged();
    *flag = probe_unexpected(world, tag, c.p2p_ctx(), *c.group, status);
  });
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  MPI_Comm comm = MPI_COMM_WORLD;
  return call("MPI_Wait", on(comm), [&] {
    require_running();
    check_request_out(request);
    if (*request == MPI_REQUEST_NULL) {
      empty_status(status);
      return;
    }
    complete_one(request, 0, status, comm);
  });
}

int MPI_Waitall(int count, MPI_Request array_of_requests[],
                MPI_Status array_of_statuses[]) {
  MPI_Comm comm = MPI_COMM_WORLD;
  return call("MPI_Waitall", on(comm), [&] {
    require_running();
    check_array(count, array_of_requests);
    transport::until([&] { return all_done(count, array_of_requests); });
    complete_all(count, array_of_requests, array_of_statuses, comm);
  });
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
                MPI_Status *status) {
  MPI_Comm comm = MPI_COMM_WORLD;
  return call("MPI_Waitany", on(comm), [&] {
    require_running();
    check_array(count, array_of_requests);
    if (!index)
      fail(MPI_ERR_ARG, "a null index");
    int i = -1;
    transport::until(
        [&] { return (i = first_done(count, array_of_requests)) != -1; });
    if (i == -2) {
      *index = MPI_UNDEFINED;
      empty_status(status);
      return;
    }
    *index = i;
    complete_one(array_of_requests, i, status, comm);
  });
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  MPI_Comm comm = MPI_COMM_WORLD;
  return call("MPI_Test", on(comm), [&] {
    require_running();
    check_request_out(request);
    if (!flag)
      fail(MPI_ERR_ARG, "a null flag");
    *flag = 1;
    if (*request == MPI_REQUEST_NULL) {
      empty_status(status);
      return;
    }
    Request &r = *user_request(*request);
    if (!r.done)
      transport::poll_once_charged();
    if (!r.done) {
      *flag = 0;
      return;
    }
    complete_one(request, 0, status, comm);
  });
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]) {
  MPI_Comm comm = MPI_COMM_WORLD;
  return call("MPI_Testall", on(comm), [&] {
    require_running();
    check_array(count, array_of_requests);
    if (!flag)
      fail(MPI_ERR_ARG, "a null flag");
    if (!all_done(count, array_of_requests))
      transport::poll_once_charged();
    *flag = all_done(count, array_of_requests);
    if (*flag)
      complete_all(count, array_of_requests, array_of_statuses, comm);
  });
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index,
                int *flag, MPI_Status *status) {
  MPI_Comm comm = MPI_COMM_WORLD;
  return call("MPI_Testany", on(comm), [&] {
    require_running();
    check_array(count, array_of_requests);
    if (!index || !flag)
      fail(MPI_ERR_ARG, "a null index or flag");
    int i = first_done(count, array_of_requests);
    if (i == -1) {
      transport::poll_once_charged();
      i = first_done(count, array_of_requests);
    }
    *flag = i != -1;
    *index = MPI_UNDEFINED;
    if (i == -2)
      empty_status(status);
    if (i < 0)
      return;
    *index = i;
    complete_one(array_of_requests, i, status, comm);
  });
}

int MPI_Request_free(MPI_Request *request) {
  return call("MPI_Request_free", on_world(), [&] {
    require_running();
    check_request_out(request);
    Request *r = user_request(*request);
    if (!r)
      fail(MPI_ERR_REQUEST, "MPI_REQUEST_NULL cannot be freed");
    r->user = false;
    r->freed = true;
    if (r->done)
      release(*r);
    *request = MPI_REQUEST_NULL;
  });
}

} // extern "C"
