// DIMM_Send / DIMM_Recv on DIMMnet-1: a ping-pong and a bandwidth sweep
// from 4 bytes to 1 MB in both arrival orders, on two nodes of the martini
// card with the dimmnet firmware:
//
//   nicemu run -n 2 --model martini:SR
//       --firmware build/firmware/dimmnet/dimmnet.img
//       -- build/examples/dimm_sendrecv [--quick] [--status]   (one line)
//
// Ping-pong: half the mean round trip of a message there and back (each
// Recv is posted before its Send arrives: the Recv-first path).
// Sweep: one message per size and path, timed from the call of the party
// that comes second (the other one started long before) to the end of the
// Recv; MB/s = bytes / that time. Paths:
//   Recv first, BOTF  the later Send moves the data by BOTF pieces
//   Recv first, PUSH  ... by PUSH (DIMM_Send's default above 464 bytes)
//   Send first, PULL  the later Recv pulls it
// --status: data carry the receive-status address instead of being
// followed by a separate notice (needs --model martini:SR-status).
//
// --raw (for `nicemu bench dimmnet`): lines "KEY VALUE..." instead:
//   pingpong SIZE US     half round trip
//   sr PATH SIZE US      PATH 0 Recv first BOTF, 1 Recv first PUSH,
//                        2 Send first PULL
#include <nicemu/dimmnet.h>
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

dimm_card *card;
dimm_comm *comm;
int rank;
bool raw = false, status = false;

void must(int code, const char *what) {
  if (code != DIMM_OK) {
    std::fprintf(stderr, "dimm_sendrecv: %s: %s (%s)\n", what,
                 dimm_strerror(code), dimm_last_error());
    std::exit(1);
  }
}

void open_comm(int mode) {
  if (comm)
    must(dimm_comm_close(comm), "dimm_comm_close");
  dimm_comm_options o{};
  o.send_mode = mode;
  o.receive_status = status;
  must(dimm_comm_open(card, &o, &comm), "dimm_comm_open");
}

// Spends `ns` of the host's time computing (a head start for the other
// side).
void compute_ns(double ns) {
  nicemu::host::compute(uint64_t(ns * 1000));
}

double pingpong_us(size_t size, int rounds) {
  std::vector<unsigned char> buf(size ? size : 1);
  int peer = 1 - rank;
  size_t got = 0;
  double start = dimm_time_ns(card);
  for (int i = 0; i < rounds; ++i) {
    if (rank == 0) {
      must(DIMM_Send(comm, buf.data(), size, peer), "send");
      must(DIMM_Recv(comm, buf.data(), size, peer, &got), "recv");
    } else {
      must(DIMM_Recv(comm, buf.data(), size, peer, &got), "recv");
      must(DIMM_Send(comm, buf.data(), size, peer), "send");
    }
  }
  return (dimm_time_ns(card) - start) / rounds / 2 / 1000;
}

// One message from rank 0 to rank 1, the `later` side starting a head
// start after the other; rank 1 returns the time from that start to the
// end of its Recv (rank 0 tells it when it started).
double one_message_us(size_t size, bool send_first) {
  std::vector<unsigned char> buf(size ? size : 1);
  for (size_t i = 0; i < size; ++i)
    buf[i] = (unsigned char)(i * 7);
  double head_start = 20'000 + 3.0 * double(size);
  double t0 = 0;
  size_t got = 0;
  if (rank == 0) {
    if (!send_first) {
      compute_ns(head_start);
      t0 = dimm_time_ns(card);
    }
    must(DIMM_Send(comm, buf.data(), size, 1), "send");
    must(DIMM_Send(comm, &t0, sizeof t0, 1), "send the start");
    return 0;
  }
  if (send_first) {
    compute_ns(head_start);
    t0 = dimm_time_ns(card);
  }
  must(DIMM_Recv(comm, buf.data(), size, 0, &got), "recv");
  double t1 = dimm_time_ns(card);
  double sender_t0 = 0;
  must(DIMM_Recv(comm, &sender_t0, sizeof sender_t0, 0, nullptr),
       "recv the start");
  if (!send_first)
    t0 = sender_t0;
  return (t1 - t0) / 1000;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--raw")
      raw = true;
    else if (a == "--quick")
      quick = true;
    else if (a == "--status")
      status = true;
    else {
      std::fprintf(stderr,
                   "usage: dimm_sendrecv [--quick] [--status] [--raw]\n");
      return 2;
    }
  }
  must(dimm_open(1, 0, &card), "dimm_open");
  if (dimm_nodes(card) < 2) {
    std::fprintf(stderr, "dimm_sendrecv: run on 2 nodes\n");
    return 1;
  }
  rank = dimm_node(card);
  if (rank > 1) { // idle: only ranks 0 and 1 talk
    open_comm(DIMM_SEND_AUTO);
    dimm_comm_close(comm);
    return 0;
  }

  open_comm(DIMM_SEND_AUTO);
  const size_t pp_sizes[] = {4, 64, 464, 465, 4096};
  int rounds = quick ? 20 : 100;
  std::vector<double> pp;
  pingpong_us(4, 2); // warm: seeds and HTLB entries
  for (size_t size : pp_sizes)
    pp.push_back(pingpong_us(size, rounds));

  std::vector<size_t> sizes = {4,    16,   64,    256,   464,    465,
                               1024, 4096, 16384, 65536, 262144, 1048576};
  if (quick)
    sizes.resize(10); // to 64 KiB
  // PATH x size; modes need their own communicator.
  std::vector<std::vector<double>> us(3, std::vector<double>(sizes.size()));
  const int modes[3] = {DIMM_SEND_BOTF, DIMM_SEND_PUSH, DIMM_SEND_AUTO};
  for (int path = 0; path < 3; ++path) {
    open_comm(modes[path]);
    one_message_us(8, path == 2); // warm
    for (size_t i = 0; i < sizes.size(); ++i)
      us[path][i] = one_message_us(sizes[i], path == 2);
  }
  dimm_comm_close(comm);

  if (rank == 1) {
    if (raw) {
      for (size_t i = 0; i < pp.size(); ++i)
        std::printf("pingpong %zu %.4f\n", pp_sizes[i], pp[i]);
      for (int path = 0; path < 3; ++path)
        for (size_t i = 0; i < sizes.size(); ++i)
          std::printf("sr %d %zu %.4f\n", path, sizes[i], us[path][i]);
    } else {
      std::printf("DIMM_Send/DIMM_Recv ping-pong (half round trip, %d "
                  "rounds)%s\n",
                  rounds, status ? ", receive status" : "");
      for (size_t i = 0; i < pp.size(); ++i)
        std::printf("  %7zu bytes %9.3f us\n", pp_sizes[i], pp[i]);
      std::printf("one message, from the later call to the data in the "
                  "buffer: us (MB/s)\n");
      std::printf("  %8s %22s %22s %22s\n", "bytes", "Recv first, BOTF",
                  "Recv first, PUSH", "Send first, PULL");
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::printf("  %8zu", sizes[i]);
        for (int path = 0; path < 3; ++path)
          std::printf(" %11.3f (%7.1f)", us[path][i],
                      double(sizes[i]) / us[path][i]);
        std::printf("\n");
      }
    }
  }
  dimm_close(card);
  return 0;
}
