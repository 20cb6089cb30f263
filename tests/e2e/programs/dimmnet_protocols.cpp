// DIMMnet-1 protocol scenarios for test_dimmnet_protocols.cpp, one per run:
//   dimmnet_protocols SCENARIO [--dynamic] [--status] [--mode botf|push]
//                              [--buffers N] [--sizes a,b,...]
// on a martini cluster with the dimmnet firmware. Each rank prints
// "rank R: SCENARIO: ok", or what failed and exits 1; some scenarios print
// figures the test compares across ranks.
#include <nicemu/dimmnet.h>
#include <nicemu/host.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int me = 0, nodes = 0;
std::string scenario;
int failures = 0;
dimm_comm_options options{};
std::vector<size_t> sizes = {0,    1,    8,     464,      465,
                             4096, 4097, 65536, 1u << 20, (1u << 20) + 1};

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("rank %d: %s: FAILED: %s\n", me, scenario.c_str(),
                what.c_str());
    ++failures;
  }
}

void must(int code, const std::string &what) {
  if (code != DIMM_OK) {
    std::printf("rank %d: %s: FAILED: %s: %s (%s)\n", me, scenario.c_str(),
                what.c_str(), dimm_strerror(code), dimm_last_error());
    std::fflush(stdout);
    std::exit(1);
  }
}

void compute_ns(uint64_t ns) {
  nicemu::host::compute(ns * 1000);
}

// ---- Barrier and global sum
// ---------------------------------------------------

// Five barriers, each with ranks arriving at different times (a different
// rank last each time): every rank prints when it entered and left; the
// test checks that nobody left before the last one entered.
void barrier(dimm_comm *comm) {
  for (int k = 0; k < 5; ++k) {
    compute_ns(uint64_t((me * 7 + k * 13) % nodes) * 3000);
    double enter = dimm_time_ns(nullptr);
    must(dimm_barrier(comm), "barrier");
    double exit = dimm_time_ns(nullptr);
    std::printf("rank %d: barrier %d enter %.0f exit %.0f\n", me, k, enter,
                exit);
  }
}

template <typename T> T value_of(int rank, int type) {
  switch (type) {
  case DIMM_FLOAT:
    return T(1.0f / float(rank + 3) + float(rank) * 1e-3f);
  case DIMM_DOUBLE:
    return T(1.0 / double(rank + 3) + double(rank) * 1e-9);
  default:
    return T(0xFFFFFFF0u + unsigned(rank) * 2654435761u);
  }
}

template <typename T> T combine(T a, T b, int op) {
  if (op == DIMM_MIN)
    return b < a ? b : a;
  if (op == DIMM_MAX)
    return a < b ? b : a;
  return T(a + b);
}

// The tree's order: a node's own value, then each child's subtree result.
template <typename T> T reference(int rank, int type, int op) {
  T acc = value_of<T>(rank, type);
  for (int c = 8 * rank + 1; c <= 8 * rank + 8 && c < nodes; ++c)
    acc = combine(acc, reference<T>(c, type, op), op);
  return acc;
}

template <typename T>
void reduce_as(dimm_comm *comm, int type, const char *name) {
  for (int op : {DIMM_SUM, DIMM_MIN, DIMM_MAX}) {
    compute_ns(uint64_t((me * 5 + op * 3) % nodes) * 2000);
    T in = value_of<T>(me, type), out{};
    must(dimm_allreduce(comm, &in, &out, type, op), "allreduce");
    T want = reference<T>(0, type, op);
    expect(std::memcmp(&out, &want, sizeof out) == 0,
           std::string(name) + " op " + std::to_string(op) +
               " differs from the reference in tree order");
    uint64_t bits = 0;
    std::memcpy(&bits, &out, sizeof out);
    std::printf("rank %d: allreduce %s %d = %016" PRIx64 "\n", me, name, op,
                bits);
  }
}

void allreduce(dimm_comm *comm) {
  reduce_as<unsigned>(comm, DIMM_UNSIGNED, "unsigned");
  reduce_as<unsigned long long>(comm, DIMM_ULONGLONG, "ulonglong");
  reduce_as<float>(comm, DIMM_FLOAT, "float");
  reduce_as<double>(comm, DIMM_DOUBLE, "double");
  // Barriers and sums interleave on the same phases.
  must(dimm_barrier(comm), "barrier between sums");
  unsigned one = 1, count = 0;
  must(dimm_allreduce(comm, &one, &count, DIMM_UNSIGNED, DIMM_SUM), "count");
  expect(count == unsigned(nodes),
         "the count of ranks is " + std::to_string(count));
}

// ---- Send and Recv
// ------------------------------------------------------------

uint8_t pattern(size_t i, size_t size, int from) {
  return uint8_t((i * 131 + size * 7 + size_t(from) * 29) >> 3 ^ i);
}

uint32_t checksum(const uint8_t *p, size_t n) {
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < n; ++i) {
    a = (a + p[i]) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

constexpr size_t kGuardBytes = 64;
constexpr uint8_t kGuard = 0xA5;

// The head start that makes one side come first: longer than the other
// side's staging of the message into its bank (1024 MB/s).
uint64_t head_start_ns(size_t size) {
  return 30'000 + 3 * uint64_t(size);
}

// Rank 0 and 1 (others idle): every size both ways, once with the Recv
// first (the sender computes a while first), once with the Send first. The
// receiver's buffer is larger than the message, guard bytes after it.
void sendrecv(dimm_comm *comm) {
  if (me > 1)
    return;
  int peer = 1 - me;
  for (size_t size : sizes) {
    for (int recv_first : {1, 0}) {
      for (int sender : {0, 1}) {
        std::vector<uint8_t> msg(size);
        for (size_t i = 0; i < size; ++i)
          msg[i] = pattern(i, size, sender);
        std::string what = std::to_string(size) + " bytes from rank " +
                           std::to_string(sender) +
                           (recv_first ? ", Recv first" : ", Send first");
        if (me == sender) {
          if (recv_first)
            compute_ns(head_start_ns(size));
          must(DIMM_Send(comm, msg.data(), size, peer), "send " + what);
        } else {
          std::vector<uint8_t> buf(size + 100 + kGuardBytes, kGuard);
          if (!recv_first)
            compute_ns(head_start_ns(size));
          size_t got = 0;
          must(DIMM_Recv(comm, buf.data(), size + 100, peer, &got),
               "recv " + what);
          expect(got == size, what + ": received " + std::to_string(got));
          expect(
              checksum(buf.data(), size) == checksum(msg.data(), size) &&
                  (size == 0 || std::memcmp(buf.data(), msg.data(), size) == 0),
              what + ": the data differ");
          bool guarded = true;
          for (size_t i = size; i < buf.size(); ++i)
            guarded = guarded && buf[i] == kGuard;
          expect(guarded, what + ": bytes past the message changed");
        }
      }
    }
  }
  dimm_comm_counters k{};
  must(dimm_comm_counters_get(comm, &k), "counters");
  std::printf("rank %d: counters sends_first %u recvs_first %u botf %u push "
              "%u pull %u multi %u registered %u\n",
              me, k.sends_first, k.recvs_first, k.botf_rounds, k.push_rounds,
              k.pull_rounds, k.multi_round_messages, k.registered);
}

// Every rank sends to the next and receives from the one before, in an
// order that cannot deadlock (even ranks send first), several times.
void neighbours(dimm_comm *comm) {
  int next = (me + 1) % nodes, prev = (me + nodes - 1) % nodes;
  for (int round = 0; round < 3; ++round) {
    size_t size = 100 + size_t(round) * 3000;
    std::vector<uint8_t> msg(size), buf(size);
    for (size_t i = 0; i < size; ++i)
      msg[i] = pattern(i, size, me);
    size_t got = 0;
    if (me % 2 == 0) {
      must(DIMM_Send(comm, msg.data(), size, next), "send");
      must(DIMM_Recv(comm, buf.data(), size, prev, &got), "recv");
    } else {
      must(DIMM_Recv(comm, buf.data(), size, prev, &got), "recv");
      must(DIMM_Send(comm, msg.data(), size, next), "send");
    }
    bool same = got == size;
    for (size_t i = 0; same && i < size; ++i)
      same = buf[i] == pattern(i, size, prev);
    expect(same, "round " + std::to_string(round) + " from rank " +
                     std::to_string(prev));
  }
}

// Bad arguments, each refused with a message; a message too large for the
// Recv's buffer fails on both sides, in both orders, and the pair goes on.
void errors(dimm_comm *comm) {
  uint8_t buf[600] = {};
  auto refused = [&](int code, const char *what) {
    expect(code == DIMM_EINVAL, std::string(what) + " was not refused");
    expect(std::strlen(dimm_last_error()) > 0,
           std::string(what) + ": no message");
  };
  refused(DIMM_Send(comm, buf, 8, nodes), "a send to no such rank");
  refused(DIMM_Send(comm, buf, 8, -1), "a send to rank -1");
  refused(DIMM_Recv(comm, buf, 8, me, nullptr), "a receive from itself");
  refused(DIMM_Send(comm, nullptr, 8, 1 - me), "a send of no buffer");
  refused(dimm_allreduce(comm, buf, buf, 9, DIMM_SUM), "an unknown type");
  dimm_ring *ring = nullptr;
  refused(dimm_ring_open(comm, 0, 1, 1 - me, 0x1F000, 4096, &ring),
          "a ring over the protocols' page");
  refused(dimm_ring_open(comm, 7, 1, 1 - me, 0x4000, 4096, &ring), "ring 7");
  for (int recv_first : {1, 0}) {
    if (me == 0) {
      if (recv_first)
        compute_ns(30'000);
      int code = DIMM_Send(comm, buf, 600, 1);
      expect(code == DIMM_EINVAL, "a message larger than the receiver's "
                                  "buffer was sent");
    } else {
      if (!recv_first)
        compute_ns(30'000);
      int code = DIMM_Recv(comm, buf, 500, 0, nullptr);
      expect(code == DIMM_EINVAL,
             "a message larger than the buffer was received");
      std::printf("rank %d: too large: %s\n", me, dimm_last_error());
    }
  }
  // Still in step: one more message each way.
  size_t got = 0;
  if (me == 0) {
    must(DIMM_Send(comm, "after", 6, 1), "send after the errors");
  } else {
    must(DIMM_Recv(comm, buf, sizeof buf, 0, &got), "recv after the errors");
    expect(got == 6 && std::strcmp(reinterpret_cast<char *>(buf), "after") == 0,
           "the message after the errors");
  }
}

// ---- Ring buffers
// ----------------------------------------------------------------

// Rank 0 produces 96 KiB into a 4 KiB ring in rank 1's LLCM in pieces of
// 1 to 700 bytes; rank 1 takes them in pieces of other sizes, sometimes
// slower than rank 0 (the ring fills), sometimes faster (it empties).
void ring(dimm_comm *comm) {
  if (me > 1)
    return;
  constexpr uint32_t kTotal = 96 * 1024;
  dimm_ring *r = nullptr;
  must(dimm_ring_open(comm, 0, me == 0, 1 - me, 0x4000, 4096, &r), "open");
  std::vector<uint8_t> data(kTotal);
  for (uint32_t i = 0; i < kTotal; ++i)
    data[i] = pattern(i, kTotal, 0);
  uint32_t done = 0, turn = 0;
  if (me == 0) {
    while (done < kTotal) {
      uint32_t n = std::min<uint32_t>(1 + (turn * 97) % 700, kTotal - done);
      if (turn % 9 == 0)
        n = std::min<uint32_t>(8, kTotal - done); // AOTF-sized pieces too
      must(dimm_ring_put(r, data.data() + done, n), "put");
      done += n;
      if (turn++ % 50 == 25)
        compute_ns(40'000); // the consumer catches up: the ring empties
    }
  } else {
    std::vector<uint8_t> got(kTotal);
    while (done < kTotal) {
      uint32_t n = std::min<uint32_t>(1 + (turn * 61) % 900, kTotal - done);
      must(dimm_ring_get(r, got.data() + done, n), "get");
      done += n;
      if (turn++ % 40 == 10)
        compute_ns(60'000); // the producer fills the ring
    }
    expect(got == data,
           "the stream differs (checksum " +
               std::to_string(checksum(got.data(), kTotal)) + " against " +
               std::to_string(checksum(data.data(), kTotal)) + ")");
  }
  // The pauses above made the ring fill (the producer waits) and empty
  // (the consumer waits); the test checks both happened.
  std::printf("rank %d: ring stalls %u\n", me, dimm_ring_stalls(r));
  must(dimm_ring_close(r), "close");
}

std::vector<size_t> parse_sizes(const char *text) {
  std::vector<size_t> out;
  for (const char *p = text; *p;) {
    char *end = nullptr;
    out.push_back(std::strtoull(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dimmnet_protocols SCENARIO [options]\n");
    return 2;
  }
  scenario = argv[1];
  unsigned pgid = 1;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dynamic")
      options.dynamic_registration = 1;
    else if (a == "--status")
      options.receive_status = 1;
    else if (a == "--mode" && i + 1 < argc)
      options.send_mode =
          std::string(argv[++i]) == "botf" ? DIMM_SEND_BOTF : DIMM_SEND_PUSH;
    else if (a == "--buffers" && i + 1 < argc)
      options.receive_buffers = unsigned(std::atoi(argv[++i]));
    else if (a == "--sizes" && i + 1 < argc)
      sizes = parse_sizes(argv[++i]);
  }
  me = int(nicemu::host::rank());
  if (scenario == "pgid")
    pgid = 1 + unsigned(me % 2); // neighbours in different groups
  dimm_card *card = nullptr;
  must(dimm_open(pgid, 0, &card), "open");
  nodes = dimm_nodes(card);
  dimm_comm *comm = nullptr;
  int code = dimm_comm_open(card, &options, &comm);
  if (scenario == "pgid") {
    expect(code == DIMM_EREFUSED, "a cluster of two process groups opened");
    std::printf("rank %d: pgid: %s\n", me, dimm_last_error());
  } else {
    must(code, "dimm_comm_open");
    if (scenario == "barrier")
      barrier(comm);
    else if (scenario == "allreduce")
      allreduce(comm);
    else if (scenario == "sendrecv")
      sendrecv(comm);
    else if (scenario == "neighbours")
      neighbours(comm);
    else if (scenario == "errors")
      errors(comm);
    else if (scenario == "ring")
      ring(comm);
    else
      expect(false, "no such scenario");
    dimm_comm_close(comm);
  }
  dimm_close(card);
  if (failures == 0)
    std::printf("rank %d: %s: ok\n", me, scenario.c_str());
  return failures ? 1 : 0;
}
