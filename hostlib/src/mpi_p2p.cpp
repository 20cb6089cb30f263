// nicemu's MPI: point to point (mpi_p2p.hpp): requests, matching, the
// eager and rendezvous protocols, and MPI_Send and its relatives.
#include "mpi_p2p.hpp"

#include "mpi_memory.hpp"
#include "mpi_transport.hpp"
#include "nicemu/uzura.h"

#include <cstring>
#include <list>

namespace nicemu::mpi {

namespace {

using transport::Msg;

Table<Request> requests(Kind::Request, "request", MPI_ERR_REQUEST);

struct RtsBody {
  uint64_t len;
  uint64_t addr;
  uint32_t request; // the sender's, named again in the FIN
  uint32_t reserved;
};

struct FinBody {
  uint32_t request;
};

struct Unexpected {
  uint16_t ctx;
  uint32_t src; // world rank
  int tag;
  size_t len;
  bool rts;
  RtsBody body;              // rts
  std::vector<uint8_t> data; // eager
  Request *sync_sender;      // a synchronous send to this process
};

std::list<Request *> posted;
std::list<Unexpected> unexpected;

bool matches(const Request &r, uint16_t ctx, uint32_t src, int tag) {
  return r.ctx == ctx &&
         (r.match_source < 0 || uint32_t(r.match_source) == src) &&
         (r.match_tag < 0 || r.match_tag == tag);
}

bool matches(const Unexpected &u, uint16_t ctx, int source, int tag) {
  return u.ctx == ctx && (source < 0 || uint32_t(source) == u.src) &&
         (tag < 0 || tag == u.tag);
}

Request *take_posted(uint16_t ctx, uint32_t src, int tag) {
  for (auto it = posted.begin(); it != posted.end(); ++it)
    if (matches(**it, ctx, src, tag)) {
      Request *r = *it;
      posted.erase(it);
      return r;
    }
  return nullptr;
}

void finish(Request &r) {
  r.done = true;
  if (r.freed)
    release(r);
}

uint32_t index_of_request(const Request &r) {
  return index_of(handle_of(r));
}

// What arrived, against what the receive can hold.
void note_arrival(Request &r, uint32_t src, int tag, size_t len) {
  r.source_world = src;
  r.tag = tag;
  r.bytes = std::min(len, r.capacity);
  if (len > r.capacity) {
    r.error = MPI_ERR_TRUNCATE;
    r.error_what = "message truncated: " + std::to_string(len) +
                   " bytes arrived for a receive of " +
                   std::to_string(r.capacity) + " bytes";
  }
}

void receive_eager(Request &r, uint32_t src, int tag, const uint8_t *data,
                   size_t len) {
  note_arrival(r, src, tag, len);
  if (r.bytes && r.type->contiguous()) // (with no bytes, buf may be null)
    std::memcpy(r.buf, data, r.bytes);
  else if (r.bytes)
    unpack(data, r.bytes, r.buf, r.count, *r.type);
  finish(r);
}

// ---- Rendezvous
// ---------------------------------------------------------------

void send_fin(uint32_t to, uint32_t sender_request) {
  FinBody fin{sender_request};
  transport::send(to, Msg::Fin, 0, 0, &fin, sizeof fin);
}

// Runs outside the handlers (it may register the buffer).
void read_rendezvous(Request &r, uint64_t addr) {
  if (r.bytes == 0) {
    send_fin(r.peer, r.sender_request);
    finish(r);
    return;
  }
  void *land = r.buf;
  if (!r.type->contiguous()) {
    r.staging.resize(r.bytes);
    land = r.staging.data();
  }
  memory::ensure_registered(land, r.bytes, 0);
  transport::read(r.peer, land, addr, r.bytes, transport::Owner::Read,
                  index_of_request(r));
}

void start_rendezvous(Request &r, uint32_t src, int tag, const RtsBody &body) {
  note_arrival(r, src, tag, body.len);
  r.peer = src;
  r.sender_request = body.request;
  Request *p = &r;
  uint64_t addr = body.addr;
  transport::defer([p, addr] { read_rendezvous(*p, addr); });
}

void on_read_done(uint64_t id, uint32_t status) {
  Request &r = *requests.find(make_handle(Kind::Request, uint32_t(id)));
  if (status != UZ_STATUS_OK && r.error == MPI_SUCCESS) {
    r.error = MPI_ERR_OTHER;
    r.error_what = "the card could not read the message from rank " +
                   std::to_string(r.peer) + " (status " +
                   std::to_string(status) + ")";
  } else if (!r.staging.empty()) {
    unpack(r.staging.data(), r.bytes, r.buf, r.count, *r.type);
    r.staging = {};
  }
  send_fin(r.peer, r.sender_request);
  finish(r);
}

// ---- Arrivals
// -------------------------------------------------------------------

void deliver_eager(uint32_t src, int tag, uint16_t ctx, const uint8_t *data,
                   size_t len, Request *sync_sender) {
  if (Request *r = take_posted(ctx, src, tag)) {
    receive_eager(*r, src, tag, data, len);
    if (sync_sender)
      finish(*sync_sender);
    return;
  }
  unexpected.push_back({ctx, src, tag, len, false, RtsBody{},
                        std::vector<uint8_t>(data, data + len), sync_sender});
}

void on_eager(const transport::Arrival &a) {
  deliver_eager(a.src, int(a.tag), a.ctx, a.data, a.len, nullptr);
}

void on_rts(const transport::Arrival &a) {
  RtsBody body;
  std::memcpy(&body, a.data, sizeof body);
  if (Request *r = take_posted(a.ctx, a.src, int(a.tag))) {
    start_rendezvous(*r, a.src, int(a.tag), body);
    return;
  }
  unexpected.push_back(
      {a.ctx, a.src, int(a.tag), size_t(body.len), true, body, {}, nullptr});
}

void on_fin(const transport::Arrival &a) {
  FinBody fin;
  std::memcpy(&fin, a.data, sizeof fin);
  if (Request *r = requests.find(make_handle(Kind::Request, fin.request)))
    finish(*r);
}

Request &new_request(Request::What what) {
  auto r = std::make_unique<Request>();
  r->what = what;
  Request *p = r.get();
  p->handle = requests.add(std::move(r));
  return *p;
}

} // namespace

// ---- Requests
// ---------------------------------------------------------------------

int handle_of(const Request &r) {
  return r.handle;
}

Request &request_of(MPI_Request handle) {
  return requests.get(handle);
}

Request *find_request(MPI_Request handle) {
  return requests.find(handle);
}

void release(Request &r) {
  requests.remove(handle_of(r));
}

Request &null_request() {
  Request &r = new_request(Request::What::Null);
  r.proc_null = true;
  r.done = true;
  return r;
}

Request &start_send(const void *buf, int count, TypeRef type, uint32_t world,
                    int tag, uint16_t ctx, bool sync) {
  Request &r = new_request(Request::What::Send);
  r.source_world = world;
  r.tag = tag;
  size_t bytes = size_t(count) * type->size;
  r.bytes = bytes;
  if (world == transport::rank()) {
    Packed data(buf, count, *type);
    deliver_eager(world, tag, ctx, data.data(), data.size(),
                  sync ? &r : nullptr);
    if (!sync)
      finish(r);
    return r;
  }
  if (!sync && bytes <= transport::eager_limit()) {
    Packed data(buf, count, *type);
    transport::send(world, Msg::Eager, uint32_t(tag), ctx, data.data(),
                    data.size());
    finish(r);
    return r;
  }
  const uint8_t *src = static_cast<const uint8_t *>(buf);
  if (!type->contiguous()) {
    r.staging.resize(bytes);
    pack(buf, count, *type, r.staging.data());
    src = r.staging.data();
  }
  if (bytes)
    memory::ensure_registered(src, bytes, UZ_REMOTE_READ);
  RtsBody body{bytes, reinterpret_cast<uintptr_t>(src), index_of_request(r), 0};
  transport::send(world, Msg::Rts, uint32_t(tag), ctx, &body, sizeof body);
  return r;
}

Request &start_recv(void *buf, int count, TypeRef type, int source_world,
                    int tag, uint16_t ctx, GroupRef group) {
  Request &r = new_request(Request::What::Recv);
  r.buf = buf;
  r.count = count;
  r.type = std::move(type);
  r.capacity = size_t(count) * r.type->size;
  r.match_source = source_world;
  r.match_tag = tag;
  r.ctx = ctx;
  r.group = std::move(group);
  for (auto it = unexpected.begin(); it != unexpected.end(); ++it) {
    if (!matches(*it, ctx, source_world, tag))
      continue;
    Unexpected u = std::move(*it);
    unexpected.erase(it);
    if (u.rts) {
      start_rendezvous(r, u.src, u.tag, u.body);
    } else {
      receive_eager(r, u.src, u.tag, u.data.data(), u.len);
      if (u.sync_sender)
        finish(*u.sync_sender);
    }
    return r;
  }
  posted.push_back(&r);
  return r;
}

void fill_status(const Request &r, MPI_Status *status) {
  if (!status || status == MPI_STATUS_IGNORE)
    return;
  status->MPI_ERROR = r.error;
  status->nicemu_cancelled = 0;
  if (r.what != Request::What::Recv) {
    status->MPI_SOURCE = r.proc_null ? MPI_PROC_NULL : MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->nicemu_bytes = 0;
    return;
  }
  status->MPI_SOURCE =
      r.group ? r.group->rank_of(r.source_world) : int(r.source_world);
  status->MPI_TAG = r.tag;
  status->nicemu_bytes = MPI_Count(r.bytes);
}

int complete(Request &r, MPI_Status *status, std::string *what) {
  transport::until([&r] { return r.done; });
  fill_status(r, status);
  int error = r.error;
  if (what)
    *what = r.error_what;
  release(r);
  return error;
}

// ---- Internal collectives' messages
// -----------------------------------------------

void send_bytes(const Team &team, int to, int tag, const void *data,
                size_t len) {
  TypeRef bytes = type_of(MPI_BYTE);
  Request &r =
      start_send(data, int(len), bytes, team.world(to), tag, team.ctx, false);
  complete(r, MPI_STATUS_IGNORE);
}

void recv_bytes(const Team &team, int from, int tag, void *buf, size_t len) {
  TypeRef bytes = type_of(MPI_BYTE);
  Request &r = start_recv(buf, int(len), bytes, int(team.world(from)), tag,
                          team.ctx, team.group);
  std::string what;
  int error = complete(r, MPI_STATUS_IGNORE, &what);
  if (error)
    fail(MPI_ERR_INTERN, "a collective's message: " + what);
}

bool probe_unexpected(int source_world, int tag, uint16_t ctx,
                      const Group &group, MPI_Status *status) {
  for (const Unexpected &u : unexpected) {
    if (!matches(u, ctx, source_world, tag))
      continue;
    if (status && status != MPI_STATUS_IGNORE) {
      status->MPI_SOURCE = group.rank_of(u.src);
      status->MPI_TAG = u.tag;
      status->MPI_ERROR = MPI_SUCCESS;
      status->nicemu_cancelled = 0;
      status->nicemu_bytes = MPI_Count(u.len);
    }
    return true;
  }
  return false;
}

void p2p_init() {
  transport::set_handler(Msg::Eager, on_eager);
  transport::set_handler(Msg::Rts, on_rts);
  transport::set_handler(Msg::Fin, on_fin);
  transport::set_completion_handler(transport::Owner::Read, on_read_done);
}

void p2p_finalize() {
  posted.clear();
  unexpected.clear();
  requests.clear();
}

} // namespace nicemu::mpi
