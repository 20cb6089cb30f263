// nicemu's MPI: point to point (docs/mpi.md, "Protocols"). Receives are
// matched by (context, source, tag) in the order they were posted, with
// an unexpected-message queue in arrival order; messages from one source
// arrive in the order they were sent, so matching never overtakes.
//
// Eager: up to the eager limit, the data travels in the message itself
// (copied on both sides; the send completes at once). Rendezvous: above
// it, and for synchronous sends, the sender sends an RTS naming its
// registered buffer; the receiver reads the data with one RDMA read into
// its own buffer, then answers FIN, which completes the send.
#pragma once

#include "mpi_comm.hpp"
#include "mpi_datatype.hpp"

#include <string>

namespace nicemu::mpi {

struct Request {
  enum class What { Send, Recv, Null } what = What::Null;
  MPI_Request handle = MPI_REQUEST_NULL;
  bool done = false;
  bool user = false;  // a handle the program holds
  bool freed = false; // MPI_Request_free: removed when it completes
  int error = MPI_SUCCESS;
  std::string error_what;
  MPI_Comm comm = MPI_COMM_NULL; // for its error handler
  GroupRef group;                // to name the source as a rank of it
  // What arrived (status).
  uint32_t source_world = 0;
  int tag = MPI_ANY_TAG;
  size_t bytes = 0;
  bool proc_null = false;
  // A receive: where, and what it matches.
  void *buf = nullptr;
  int count = 0;
  TypeRef type;
  size_t capacity = 0;
  int match_source = -1; // world rank, -1: any
  int match_tag = -1;    // -1: any
  uint16_t ctx = 0;
  // Rendezvous.
  std::vector<uint8_t> staging; // packed data (a non-contiguous send or
                                // receive)
  uint32_t peer = 0;            // receive: the sender (world rank)
  uint32_t sender_request = 0;  // receive: the sender's request index
};

// A request's handle and the request of a handle (MPI_ERR_REQUEST).
int handle_of(const Request &r);
Request &request_of(MPI_Request handle);
Request *find_request(MPI_Request handle);
void release(Request &r);

// Sends and receives: every check done by the caller.
Request &start_send(const void *buf, int count, TypeRef type, uint32_t world,
                    int tag, uint16_t ctx, bool sync);
Request &start_recv(void *buf, int count, TypeRef type, int source_world,
                    int tag, uint16_t ctx, GroupRef group);
Request &null_request(); // a completed request (MPI_PROC_NULL)

// Waits for the request, fills `status` (may be MPI_STATUS_IGNORE or
// null), releases the request; returns its error code (and what it was).
int complete(Request &r, MPI_Status *status, std::string *what = nullptr);
void fill_status(const Request &r, MPI_Status *status);

// Bytes between ranks of an internal collective: blocking, and raising the
// error of the receive (a truncated internal message is a bug).
void send_bytes(const Team &team, int to, int tag, const void *data,
                size_t len);
void recv_bytes(const Team &team, int from, int tag, void *buf, size_t len);

// Probing the unexpected queue: true and the message's status if one
// matches.
bool probe_unexpected(int source_world, int tag, uint16_t ctx,
                      const Group &group, MPI_Status *status);

void p2p_init();
void p2p_finalize();

} // namespace nicemu::mpi
