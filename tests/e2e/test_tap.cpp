// End-to-end: nicemu run --tap (docs/fm.md, "Bridging to Linux (--tap)").
// In a network namespace of its own, the test makes a TAP device with the
// outside's addresses (FM node 1 of a one-node cluster: MAC
// 02:4e:4d:00:00:01, IPv4 10.77.0.2) and a static neighbour for the
// emulated node 0; a Python UDP socket on 10.77.0.2:4815 then exchanges
// Comet-FM datagrams with programs/fm_tap_peer.c on the emulated node. The
// test needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN): without it, it
// fails, it does not skip.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

using namespace e2e;

namespace {

const char *const kIp = "/usr/sbin/ip";

// A network namespace, deleted with everything in it (the TAP device too).
class NetNamespace {
public:
  NetNamespace() : name_("nicemu-tap-" + std::to_string(::getpid())) {
    run_command(kIp, {"netns", "delete", name_}); // left by a crashed run
    CommandResult r = run_command(kIp, {"netns", "add", name_});
    REQUIRE_MESSAGE(r.status == 0, "cannot create a network namespace (the "
                                   "--tap test needs root):\n"
                                       << r);
  }
  ~NetNamespace() { run_command(kIp, {"netns", "delete", name_}); }
  NetNamespace(const NetNamespace &) = delete;
  NetNamespace &operator=(const NetNamespace &) = delete;

  // `args` run inside the namespace; must succeed.
  void must(const std::vector<std::string> &args) {
    CommandResult r = exec(args);
    REQUIRE_MESSAGE(r.status == 0, r);
  }
  CommandResult exec(const std::vector<std::string> &args) {
    std::vector<std::string> all = {"netns", "exec", name_};
    all.insert(all.end(), args.begin(), args.end());
    return run_command(kIp, all);
  }
  const std::string &name() const { return name_; }

private:
  std::string name_;
};

// The Linux side: one datagram in, checked and printed; one reply out.
const char kPeerScript[] = R"py(import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.2", 4815))
s.settimeout(60)
open(sys.argv[1], "w").close()
data, addr = s.recvfrom(4096)
print("from %s:%d" % addr)
dest, src, handler, flags, length = struct.unpack("<HHHHI", data[:12])
print("fm dest %d src %d handler %d flags %d length %d" %
      (dest, src, handler, flags, length))
print("payload '%s' (%d bytes)" % (data[12:].decode(), len(data) - 12))
msg = b"hello from linux side"
s.sendto(struct.pack("<HHHHI", 0, 1, 9, 0, len(msg)) + msg,
         ("10.77.0.1", 4815))
print("replied")
)py";

} // namespace

TEST_CASE("run --tap: an FM datagram to a Linux UDP socket and one back") {
  TempDir dir;
  const std::string script = dir.file("peer.py"), ready = dir.file("ready"),
                    py_out = dir.file("peer.out"),
                    recording = dir.file("run.nrec");
  { std::ofstream(script) << kPeerScript; }
  NetNamespace ns;
  ns.must({kIp, "tuntap", "add", "dev", "tapfm", "mode", "tap"});
  ns.must({kIp, "link", "set", "tapfm", "address", "02:4e:4d:00:00:01"});
  ns.must({kIp, "addr", "add", "10.77.0.2/16", "dev", "tapfm"});
  ns.must({kIp, "link", "set", "tapfm", "up"});
  ns.must({kIp, "neigh", "add", "10.77.0.1", "lladdr", "02:4e:4d:00:00:00",
           "dev", "tapfm"});

  // The Python peer, in the background, bounded by `timeout`.
  pid_t py = ::fork();
  REQUIRE(py >= 0);
  if (py == 0) {
    int fd = ::open(py_out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(kIp, kIp, "netns", "exec", ns.name().c_str(), "timeout", "90",
            "/usr/bin/env", "python3", script.c_str(), ready.c_str(),
            (char *)nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 400 && !fs::exists(ready); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  CHECK_MESSAGE(fs::exists(ready), "the Python peer did not start:\n"
                                       << read_text(py_out));

  CommandResult r = ns.exec(
      {"timeout", "90", NICEMU_TOOL_PATH, "run", "-n", "1", "--model", "comet",
       "--firmware", NICEMU_VIA_IMAGE, "--tap", "tapfm", "--max-time", "30s",
       "--record", recording, "--", NICEMU_FM_TAP_PEER});
  int py_status = 0;
  for (int i = 0; i < 400 && ::waitpid(py, &py_status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  if (::waitpid(py, &py_status, WNOHANG) == 0) {
    ::kill(py, SIGKILL);
    ::waitpid(py, &py_status, 0);
  }
  const std::string py_text = read_text(py_out);
  INFO(r);
  INFO("[python peer]\n" << py_text);
  CHECK(r.err.find("Sanitizer") == std::string::npos);
  CHECK(r.err.find("runtime error:") == std::string::npos);
  CHECK(r.status == 0);
  CHECK(WIFEXITED(py_status));
  CHECK(WEXITSTATUS(py_status) == 0);
  // Linux got the emulated node's datagram, from its address and port.
  CHECK(contains(py_text, "from 10.77.0.1:4815\n"));
  CHECK(contains(py_text, "fm dest 1 src 0 handler 7 flags 0 length 23\n"));
  CHECK(contains(py_text, "payload 'hello from nicemu node0' (23 bytes)\n"));
  CHECK(contains(py_text, "replied\n"));
  // The emulated node got the reply, from FM node 1 (the outside).
  CHECK(contains(r.out, "fm_tap_peer: numnodes 2\n"));
  CHECK(contains(r.out, "fm_tap_peer: sent 23 bytes\n"));
  CHECK(contains(r.out, "fm_tap_peer: got 21 bytes from node 1: 'hello from "
                        "linux side'\n"));
  CHECK(contains(r.err, "tap tapfm: 1 frames out, 1 in"));

  // The recording plays the run again with no TAP device and no Linux:
  // the frame from Linux enters at its recorded time, the frame to Linux
  // is compared with the recorded one, and the host's calls get the
  // recorded replies (any difference would stop the replay).
  CommandResult replay = nicemu({"replay", recording});
  INFO(replay);
  CHECK(replay.status == 0);
  CHECK(!contains(replay.err, "diverged"));
  CHECK(run_summary(replay.err) == run_summary(r.err));
  // After the summary's wall time: the bridge's figures, the host's end.
  auto after_summary = [](const std::string &err) {
    size_t wall = err.find(", wall time");
    return wall == std::string::npos ? "" : err.substr(err.find('\n', wall));
  };
  CHECK(after_summary(replay.err) == after_summary(r.err));
  CHECK(contains(replay.err, "tap tapfm: 1 frames out, 1 in"));
}

TEST_CASE("run --tap refuses a model without Ethernet before starting") {
  CommandResult r =
      nicemu({"run", "--firmware", firmware("hello.img"), "--tap", "tapx"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "not Ethernet"));
  CHECK(!contains(r.out, "[node0]"));
}
