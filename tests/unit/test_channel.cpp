// Both ends of the host channel: the emulator's (emulator/host/channel.hpp)
// and the host library's (hostlib/src/host_end.hpp).
#include "host/channel.hpp"
#include "host/node_memory.hpp"
#include "host_end.hpp"

#include "nicemu/error.hpp"
#include "nicemu/spin_wait.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

using namespace nicemu::channel;
using nicemu::Error;
using nicemu::ErrorKind;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kArena = 1 << 20;

Request request(Op op, uint32_t a = 0, uint32_t b = 0) {
  Request r;
  r.op = op;
  r.a = a;
  r.b = b;
  return r;
}

// The emulator's loop for one request: sleeps on the wake pipe until the
// host posts. Gives up after `ms`, or early if child `pid` ended.
std::optional<Request> next_request(EmulatorEnd &emu, WakePipe &wake, int ms,
                                    pid_t pid = 0) {
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  Request r;
  while (!emu.pending(r)) {
    if (Clock::now() > deadline)
      return std::nullopt;
    if (pid && waitpid(pid, nullptr, WNOHANG) == pid)
      return std::nullopt;
    wake.wait(50);
  }
  return r;
}

// Waits up to `ms` for child `pid`; kills it if it hangs. Its exit status,
// or -1 if it had to be killed or did not exit normally.
int child_status(pid_t pid, int ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(1000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs `body` in a forked child that exits with its result: 0 = passed.
// The child never returns into doctest.
template <typename F> pid_t fork_child(F body) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    _exit(code);
  }
  return pid;
}

// A child's call must fail with "the emulator stopped", not hang: 0 if so.
int expect_stopped(HostEnd &host) {
  try {
    host.call(request(Op::Hello));
    return 1;
  } catch (const Error &e) {
    if (std::string(e.what()).find("the emulator stopped") != 0)
      return 2;
    return e.kind() == ErrorKind::Stopped ? 0 : 3;
  }
}

// The kind of the nicemu::Error `f` throws; nothing if it throws none.
template <typename F> std::optional<ErrorKind> kind_thrown(F f) {
  try {
    f();
  } catch (const Error &e) {
    return e.kind();
  }
  return std::nullopt;
}

} // namespace

TEST_CASE("channel: a host thread and the emulator make 1000 round trips") {
  WakePipe wake;
  EmulatorEnd emu(0, 1, kArena);
  HostEnd host(emu.fd(), wake.write_fd);
  CHECK(host.rank() == 0);
  CHECK(host.size() == 1);
  CHECK(host.arena_size() == kArena);
  constexpr uint32_t kCalls = 1000;
  std::atomic<uint32_t> bad_replies{0};
  std::thread host_thread([&] {
    for (uint32_t i = 0; i < kCalls; ++i) {
      Reply r = host.call(request(Op::Read, i));
      if (r.status != Status::Ok || r.value != i + 1 ||
          r.time != uint64_t(i + 1) * 100 || host.time() != r.time)
        ++bad_replies;
    }
  });
  uint32_t answered = 0, bad_requests = 0;
  while (answered < kCalls) {
    auto r = next_request(emu, wake, 3000);
    if (!r)
      break;
    if (r->op != Op::Read || r->a != answered ||
        r->time != uint64_t(answered) * 100)
      ++bad_requests;
    emu.reply(Reply{Status::Ok, r->a + 1, r->time + 100});
    ++answered;
  }
  host_thread.join();
  CHECK(answered == kCalls);
  CHECK(bad_requests == 0);
  CHECK(bad_replies.load() == 0);
  CHECK(host.time() == uint64_t(kCalls) * 100);
  CHECK(emu.control().request_seq == kCalls);
  CHECK(HostState(emu.control().state.load()) == HostState::Computing);
}

TEST_CASE("channel: card writes, reads and timed waits travel in full") {
  // 2: Op::WaitWordUntil, Reply::word; 3: posted writes; 4: generic card
  // accesses (Op::Write, Op::Read, Reply::data); 5: Op::WriteBlock; 6:
  // Reply::stable_until; 7: Op::ReadBlock; 8: ControlBlock::node, local,
  // per_node; 9: Op::WaitInterrupt; 10: WaitEither woken by an interrupt.
  CHECK(kVersion == 12);
  WakePipe wake;
  EmulatorEnd emu(0, 1, kArena);
  HostEnd host(emu.fd(), wake.write_fd);
  Reply bell, load, timed;
  std::thread host_thread([&] {
    try {
      Request w = request(Op::Write, 0xE000001C, 8);
      w.arg64 = 0x0123456789ABCDEFull;
      bell = host.call(w);
      load = host.call(request(Op::Read, 0xE0000020, 8));
      Request r = request(Op::WaitWordUntil, 64, 0xFF);
      r.c = 3;
      r.arg64 = 123'456'789'012ull;
      timed = host.call(r);
    } catch (const Error &) { // the emulator side gave up: checks fail
    }
  });
  auto first = next_request(emu, wake, 3000);
  if (first) {
    CHECK(first->op == Op::Write);
    CHECK(first->a == 0xE000001C);
    CHECK(first->b == 8);
    CHECK(first->arg64 == 0x0123456789ABCDEFull);
    emu.reply(Reply{Status::Ok, 0, 510'000});
  }
  auto read = first ? next_request(emu, wake, 3000) : std::nullopt;
  if (read) {
    CHECK(read->op == Op::Read);
    CHECK(read->a == 0xE0000020);
    CHECK(read->b == 8);
    Reply data{Status::Ok, 0x89ABCDEF, 510'000};
    data.data = 0x0123456789ABCDEFull;
    emu.reply(data);
  }
  auto second = read ? next_request(emu, wake, 3000) : std::nullopt;
  if (!second) {
    emu.shutdown(); // the host's call in progress fails: no hang
  } else {
    CHECK(second->op == Op::WaitWordUntil);
    CHECK(second->a == 64);
    CHECK(second->b == 0xFF);
    CHECK(second->c == 3);
    CHECK(second->arg64 == 123'456'789'012ull);
    CHECK(second->time == 510'000);
    emu.reply(Reply{Status::Ok, 1, 123'456'789'012ull, 0xCAFE});
  }
  host_thread.join();
  CHECK(bell.status == Status::Ok);
  CHECK(bell.time == 510'000);
  CHECK(load.data == 0x0123456789ABCDEFull);
  CHECK(timed.value == 1);
  CHECK(timed.word == 0xCAFE);
  CHECK(host.time() == 123'456'789'012ull);
}

TEST_CASE("channel: a posted write needs no reply and comes before the "
          "next call") {
  WakePipe wake;
  EmulatorEnd emu(0, 1, kArena);
  emu.set_posted_write_cost(250);
  HostEnd host(emu.fd(), wake.write_fd);
  Request w;
  CHECK_FALSE(emu.take_posted(w));
  // The host's clock moves by the model's cost at once, without a wake.
  REQUIRE(host.post_write(0x3F000, 7));
  CHECK(host.time() == 250);
  CHECK_FALSE(wake.wait(0));
  // One slot: a second write waits until the first is taken in.
  CHECK_FALSE(host.post_write(0x3F004, 8));
  CHECK(host.time() == 250);
  std::thread host_thread([&] { host.call(request(Op::Read, 0x3F008, 4)); });
  auto r = next_request(emu, wake, 3000);
  // Taken after the request was seen: the earlier write is there too.
  REQUIRE(emu.take_posted(w));
  CHECK(w.op == Op::Write);
  CHECK(w.a == 0x3F000);
  CHECK(w.b == 4);
  CHECK(w.arg64 == 7);
  CHECK(w.time == 0);
  CHECK_FALSE(emu.take_posted(w)); // taken once
  if (r) {
    CHECK(r->op == Op::Read);
    CHECK(r->time == 250); // after the write's cost
    emu.reply(Reply{Status::Ok, 5, 900});
  } else {
    emu.shutdown();
  }
  host_thread.join();
  REQUIRE(host.post_write(0x3F004, 8)); // the slot is free again
  CHECK(host.time() == 1150);
  REQUIRE(emu.take_posted(w));
  CHECK(w.a == 0x3F004);
  CHECK(w.time == 900);
}

TEST_CASE("channel: a host writes the wake byte only while the emulator "
          "sleeps") {
  WakePipe wake;
  EmulatorEnd emu(0, 1, kArena);
  HostEnd host(emu.fd(), wake.write_fd);
  // Answers one request without sleeping on the pipe (as HostGroup::wait
  // does while it spins), and says whether a wake byte came with it.
  auto round_trip = [&](Op op) {
    std::thread host_thread([&] { host.call(request(op)); });
    Request r;
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!emu.pending(r) && Clock::now() < deadline)
      std::this_thread::yield();
    bool answered = emu.pending(r);
    if (answered)
      emu.reply(Reply{Status::Ok, 0, 10});
    else
      emu.shutdown();
    host_thread.join();
    REQUIRE(answered);
    return wake.wait(0);
  };
  // The emulator starts out taken to sleep: the first request wakes it.
  CHECK(round_trip(Op::Advance));
  emu.set_emulator_sleeping(false);
  CHECK_FALSE(round_trip(Op::Advance));
  emu.set_emulator_sleeping(true);
  CHECK(round_trip(Op::Advance));
}

TEST_CASE("channel: under a lease the host answers polls itself, each one "
          "poll later, and lists them for the emulator") {
  WakePipe wake;
  EmulatorEnd emu(0, 1, kArena);
  HostEnd host(emu.fd(), wake.write_fd);
  // One call answered by `reply`; returns the request the emulator saw.
  auto round_trip = [&](Request req, Reply reply) {
    std::thread host_thread([&] { host.call(req); });
    auto r = next_request(emu, wake, 3000);
    if (r)
      emu.reply(reply);
    else
      emu.shutdown();
    host_thread.join();
    REQUIRE(r);
    return *r;
  };
  CHECK_FALSE(host.poll_locally()); // no lease yet
  // A poll answered at 1000 ps (cost 250), stable until 2000 ps.
  Reply leased{Status::Ok, 0, 1000};
  leased.stable_until = 2000;
  leased.data = 250;
  round_trip(request(Op::WaitWord), leased);
  REQUIRE(host.time() == 1000);
  // 1000, 1250, 1500 end before 2000; one at 1750 would end at 2000, where
  // a write landing at that very time may come first.
  CHECK(host.poll_locally());
  CHECK(host.poll_locally());
  CHECK(host.poll_locally());
  CHECK_FALSE(host.poll_locally());
  CHECK(host.time() == 1750);
  ControlBlock &cb = emu.control();
  REQUIRE(cb.local_polls == 3);
  CHECK(cb.local_poll_start[0] == 1000);
  CHECK(cb.local_poll_start[2] == 1500);
  // The next call ends the lease; its request comes at the host's clock.
  Request seen = round_trip(request(Op::Advance), Reply{Status::Ok, 0, 1800});
  CHECK(seen.time == 1750);
  CHECK_FALSE(host.poll_locally());
  // A lease on anything but a poll is no lease; nor is one without a cost.
  round_trip(request(Op::Read), leased);
  CHECK_FALSE(host.poll_locally());
  leased.data = 0;
  round_trip(request(Op::WaitWord), leased);
  CHECK_FALSE(host.poll_locally());
  // However long the lease, at most kMaxLocalPolls polls go unseen.
  cb.local_polls = 0;
  Reply forever{Status::Ok, 0, 3000};
  forever.stable_until = UINT64_MAX;
  forever.data = 1;
  round_trip(request(Op::WaitWord), forever);
  uint32_t answered = 0;
  while (answered < 2 * kMaxLocalPolls && host.poll_locally())
    ++answered;
  CHECK(answered == kMaxLocalPolls);
}

TEST_CASE("channel: exit is posted without waiting and ends the calls") {
  WakePipe wake;
  EmulatorEnd emu(0, 1, kArena);
  HostEnd host(emu.fd(), wake.write_fd);
  host.exit(3);
  CHECK(wake.wait(0));
  Request r;
  REQUIRE(emu.pending(r));
  CHECK(r.op == Op::Exit);
  CHECK(r.a == 3);
  CHECK(HostState(emu.control().state.load()) == HostState::Exited);
  emu.reply(Reply{});
  CHECK_FALSE(emu.pending(r));
  CHECK(HostState(emu.control().state.load()) == HostState::Exited);
  CHECK_THROWS_AS(host.call(request(Op::Hello)), Error);
}

TEST_CASE("channel: a forked host shares its arena with the emulator") {
  WakePipe wake;
  EmulatorEnd emu(1, 2, kArena);
  constexpr uint32_t kPattern = 0x100000; // bytes the host writes
  pid_t pid = fork_child([&] {
    close(wake.read_fd); // as the launcher does: only the emulator reads
    HostEnd host(emu.fd(), wake.write_fd);
    if (host.rank() != 1 || host.size() != 2 || host.arena_size() != kArena)
      return 1;
    for (uint32_t i = 0; i < kPattern; ++i)
      host.arena()[i] = uint8_t(i * 7 + 1);
    Reply r = host.call(request(Op::WaitWord, 0, 0xffffffff));
    if (r.status != Status::Ok || r.value != 42 || r.time != 5000)
      return 2;
    // The emulator's write (think DMA) is in the host's own memory.
    return host.arena()[kArena - 1] == 0xab ? 0 : 3;
  });
  auto r = next_request(emu, wake, 3000, pid);
  REQUIRE(r.has_value());
  CHECK(r->op == Op::WaitWord);
  CHECK(r->time == 0);
  uint32_t mismatches = 0;
  for (uint32_t i = 0; i < kPattern; ++i)
    mismatches += emu.arena()[i] != uint8_t(i * 7 + 1);
  CHECK(mismatches == 0);
  emu.arena()[kArena - 1] = 0xab;
  emu.reply(Reply{Status::Ok, 42, 5000});
  CHECK(child_status(pid, 3000) == 0);
}

TEST_CASE("channel: the shared object is inheritable, sealed and laid out") {
  EmulatorEnd emu(2, 4, 10000);
  WakePipe wake;
  CHECK((fcntl(emu.fd(), F_GETFD) & FD_CLOEXEC) == 0);
  CHECK((fcntl(wake.read_fd, F_GETFD) & FD_CLOEXEC) == 0);
  CHECK((fcntl(wake.write_fd, F_GETFD) & FD_CLOEXEC) == 0);
  CHECK(ftruncate(emu.fd(), 0) < 0); // a host cannot pull pages away
  const ControlBlock &cb = emu.control();
  CHECK(cb.magic == kMagic);
  CHECK(cb.version == kVersion);
  CHECK(cb.rank == 2);
  CHECK(cb.size == 4);
  CHECK(cb.arena_offset % uint64_t(sysconf(_SC_PAGESIZE)) == 0);
  CHECK(cb.arena_offset >= sizeof(ControlBlock));
  CHECK(cb.arena_size == 10000);
  CHECK(emu.arena_size() == 10000);
  CHECK(HostState(cb.state.load()) == HostState::Starting);
  CHECK(cb.reply_seq.load() == 0);
  CHECK(cb.host_time.load() == 0);
  CHECK(emu.arena()[0] == 0);
  CHECK(emu.arena()[9999] == 0);
  CHECK_THROWS_AS(EmulatorEnd(0, 1, 0), Error);
  CHECK_THROWS_AS(EmulatorEnd(4, 4, 10000), Error);
  CHECK_FALSE(wake.wait(0));
  wake.wake();
  wake.wake();
  CHECK(wake.wait(0));
  CHECK_FALSE(wake.wait(0)); // drained
}

TEST_CASE("channel: registration rules") {
  EmulatorEnd emu(0, 1, 0x10000);
  SUBCASE("ranges must lie inside the arena") {
    CHECK(emu.add_region(0, 0) == Status::BadArgument);
    CHECK(emu.add_region(0x10000, 1) == Status::BadArgument);
    CHECK(emu.add_region(0xfff0, 0x20) == Status::BadArgument);
    CHECK(emu.add_region(8, ~uint64_t(0)) == Status::BadArgument);
    CHECK(emu.add_region(0, 0x10000) == Status::Ok);
    CHECK(emu.registered(kArenaBusBase, 0x10000));
    CHECK_FALSE(emu.registered(kArenaBusBase, 0x10001));
  }
  SUBCASE("regions may not overlap, they may touch") {
    CHECK(emu.add_region(0x100, 0x100) == Status::Ok);
    CHECK(emu.add_region(0x180, 0x10) == Status::BadArgument);
    CHECK(emu.add_region(0x80, 0x81) == Status::BadArgument);
    CHECK(emu.add_region(0x0, 0x1000) == Status::BadArgument);
    CHECK(emu.add_region(0x80, 0x80) == Status::Ok);
    CHECK(emu.add_region(0x200, 0x3) == Status::Ok); // no page granularity
  }
  SUBCASE("a region registered right after another grows it") {
    CHECK(emu.add_region(0, 0x100) == Status::Ok);
    CHECK(emu.add_region(0x100, 0x40) == Status::Ok);
    CHECK(emu.registered(kArenaBusBase + 0xfc, 8)); // across the seam
    CHECK(emu.registered(kArenaBusBase, 0x140));
    CHECK(emu.remove_region(0x100) == Status::NotRegistered); // merged
    for (uint32_t i = 1; i < kMaxRegions; ++i) // one slot used so far
      REQUIRE(emu.add_region(0x1000 + i * 16, 8) == Status::Ok);
    CHECK(emu.add_region(0x140, 0x10) == Status::Ok); // grows, no slot
  }
  SUBCASE("the table fills up, and removal frees a slot") {
    for (uint32_t i = 0; i < kMaxRegions; ++i)
      REQUIRE(emu.add_region(i * 16, 8) == Status::Ok);
    CHECK(emu.add_region(0x8000, 8) == Status::Exhausted);
    CHECK(emu.remove_region(5 * 16) == Status::Ok);
    CHECK(emu.add_region(0x8000, 8) == Status::Ok);
  }
  SUBCASE("removal needs the exact start") {
    CHECK(emu.add_region(0x100, 0x100) == Status::Ok);
    CHECK(emu.remove_region(0x180) == Status::NotRegistered);
    CHECK(emu.remove_region(0x200) == Status::NotRegistered);
    CHECK(emu.remove_region(0x100) == Status::Ok);
    CHECK(emu.remove_region(0x100) == Status::NotRegistered);
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x100, 4));
  }
  SUBCASE("registered() takes bus addresses, whole ranges in one region") {
    CHECK(emu.add_region(0, 0x100) == Status::Ok);
    CHECK(emu.add_region(0x200, 0x100) == Status::Ok);
    CHECK(emu.registered(kArenaBusBase, 4));
    CHECK(emu.registered(kArenaBusBase, 0x100));
    CHECK(emu.registered(kArenaBusBase + 0xfc, 4));
    CHECK(emu.registered(kArenaBusBase + 0x2fc, 4));
    CHECK_FALSE(emu.registered(kArenaBusBase + 0xfc, 8));  // into the gap
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x2fc, 8)); // runs past
    CHECK_FALSE(emu.registered(kArenaBusBase - 4, 4));
    CHECK_FALSE(emu.registered(kArenaBusBase - 1, 2));
    CHECK_FALSE(emu.registered(0, 4));
    CHECK_FALSE(emu.registered(0x100, 4)); // an arena offset, not a bus address
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x100, 4)); // the gap
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x300, 4));
    CHECK_FALSE(emu.registered(~uint64_t(0), 4));
    CHECK_FALSE(emu.registered(kArenaBusBase + 8, ~size_t(0)));
    CHECK(emu.registered(kArenaBusBase + 8, 0));
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x300, 0));
  }
  SUBCASE("a corrupt region table never opens memory past the arena") {
    emu.control().regions[0] = Region{0x8000, ~uint64_t(0) / 2};
    CHECK(emu.registered(kArenaBusBase + 0x8000, 0x8000));
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x8000, 0x8001));
    CHECK_FALSE(emu.registered(kArenaBusBase + 0x10000, 4));
  }
}

TEST_CASE("channel: a host not started by nicemu gets a clear error") {
  WakePipe wake;
  SUBCASE("no environment") {
    unsetenv("NICEMU_CHANNEL_FD");
    unsetenv("NICEMU_WAKE_FD");
    CHECK_THROWS_WITH_AS(HostEnd::from_environment(),
                         "NICEMU_CHANNEL_FD is not set: start this program "
                         "with `nicemu run -n N -- ./prog`",
                         Error);
  }
  SUBCASE("a malformed descriptor number") {
    setenv("NICEMU_CHANNEL_FD", "3x", 1);
    setenv("NICEMU_WAKE_FD", "4", 1);
    CHECK_THROWS_WITH_AS(HostEnd::from_environment(),
                         doctest::Contains("is not a descriptor number"),
                         Error);
    unsetenv("NICEMU_CHANNEL_FD");
    unsetenv("NICEMU_WAKE_FD");
  }
  SUBCASE("descriptors that are not open") {
    EmulatorEnd emu(0, 1, kArena);
    const int closed = 900; // high: HostEnd's own duplicates cannot reuse it
    REQUIRE(fcntl(closed, F_GETFD) < 0);
    CHECK_THROWS_WITH_AS(HostEnd(closed, wake.write_fd),
                         doctest::Contains("is not open"), Error);
    CHECK_THROWS_WITH_AS(HostEnd(-1, wake.write_fd),
                         doctest::Contains("is not open"), Error);
    CHECK_THROWS_WITH_AS(HostEnd(emu.fd(), closed),
                         doctest::Contains("is not open"), Error);
    CHECK_THROWS_WITH_AS(HostEnd(emu.fd(), emu.fd()),
                         doctest::Contains("wake pipe"), Error);
  }
  SUBCASE("a descriptor that is not a channel") {
    int fd = memfd_create("not-a-channel", 0);
    REQUIRE(fd >= 0);
    CHECK_THROWS_WITH_AS(HostEnd(fd, wake.write_fd),
                         doctest::Contains("too small"), Error);
    REQUIRE(ftruncate(fd, 1 << 16) == 0);
    CHECK_THROWS_WITH_AS(HostEnd(fd, wake.write_fd),
                         doctest::Contains("bad magic"), Error);
    close(fd);
    CHECK_THROWS_WITH_AS(HostEnd(wake.read_fd, wake.write_fd),
                         doctest::Contains("not a nicemu channel"), Error);
  }
  SUBCASE("another protocol version") {
    EmulatorEnd emu(0, 1, kArena);
    emu.control().version = kVersion + 1;
    CHECK_THROWS_WITH_AS(HostEnd(emu.fd(), wake.write_fd),
                         doctest::Contains("version mismatch"), Error);
  }
}

TEST_CASE("channel: a host whose emulator goes away gets an error, no hang") {
  auto start = Clock::now();
  SUBCASE("the wake pipe has no reader") {
    WakePipe wake;
    EmulatorEnd emu(0, 1, kArena);
    close(wake.read_fd);
    wake.read_fd = -1;
    pid_t pid = fork_child([&] {
      HostEnd host(emu.fd(), wake.write_fd);
      return expect_stopped(host); // and SIGPIPE does not kill it
    });
    CHECK(child_status(pid, 2000) == 0);
  }
  SUBCASE("a pipe as the wake descriptor has no reader") {
    // The socket's MSG_NOSIGNAL does not apply: the fallback blocks SIGPIPE.
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    close(fds[0]);
    EmulatorEnd emu(0, 1, kArena);
    pid_t pid = fork_child([&] {
      HostEnd host(emu.fd(), fds[1]);
      return expect_stopped(host);
    });
    CHECK(child_status(pid, 2000) == 0);
    close(fds[1]);
  }
  SUBCASE("the emulator shuts the channel while the host waits") {
    WakePipe wake;
    EmulatorEnd emu(0, 1, kArena);
    pid_t pid = fork_child([&] {
      close(wake.read_fd);
      HostEnd host(emu.fd(), wake.write_fd);
      int first = expect_stopped(host);
      return first ? first : expect_stopped(host); // and again
    });
    REQUIRE(next_request(emu, wake, 2000, pid).has_value());
    emu.shutdown();
    CHECK(child_status(pid, 2000) == 0);
  }
  SUBCASE("the emulator replies Shutdown") {
    WakePipe wake;
    EmulatorEnd emu(0, 1, kArena);
    HostEnd host(emu.fd(), wake.write_fd);
    std::atomic<int> result{-1};
    std::thread t([&] { result = expect_stopped(host); });
    if (next_request(emu, wake, 2000))
      emu.reply(Reply{Status::Shutdown, 0, 0});
    t.join();
    CHECK(result.load() == 0);
  }
  SUBCASE("the emulator process dies without a word") {
    // Three generations: this process adopts the orphaned host (subreaper)
    // and hears its verdict through a pipe.
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int verdict[2];
    REQUIRE(pipe(verdict) == 0);
    pid_t emulator = fork_child([&] {
      WakePipe wake;
      EmulatorEnd emu(0, 1, kArena);
      pid_t host_pid = fork_child([&] {
        close(wake.read_fd);
        HostEnd host(emu.fd(), wake.write_fd);
        int v[2] = {int(getpid()), expect_stopped(host)};
        return write(verdict[1], v, sizeof v) == sizeof v ? 0 : 1;
      });
      if (!next_request(emu, wake, 2000, host_pid))
        return 1;
      _exit(0); // crashes, as far as the host can tell: no shutdown
    });
    CHECK(child_status(emulator, 2000) == 0);
    pollfd p{verdict[0], POLLIN, 0};
    int v[2] = {0, -1};
    if (poll(&p, 1, 2000) == 1)
      CHECK(read(verdict[0], v, sizeof v) == sizeof v);
    CHECK(v[1] == 0);
    if (v[0] > 0)
      CHECK(child_status(v[0], 1000) == 0);
    close(verdict[0]);
    close(verdict[1]);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
  CHECK(Clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("channel: errors carry their kind for the host library") {
  // The host library's status codes come from these kinds, not from the
  // messages (hostlib/src/host.cpp, host_c.cpp).
  WakePipe wake;
  SUBCASE("no channel: NotRun") {
    unsetenv("NICEMU_CHANNEL_FD");
    unsetenv("NICEMU_WAKE_FD");
    CHECK(kind_thrown([] { HostEnd::from_environment(); }) ==
          ErrorKind::NotRun);
    setenv("NICEMU_CHANNEL_FD", "3x", 1);
    setenv("NICEMU_WAKE_FD", "4", 1);
    CHECK(kind_thrown([] { HostEnd::from_environment(); }) ==
          ErrorKind::NotRun);
    unsetenv("NICEMU_CHANNEL_FD");
    unsetenv("NICEMU_WAKE_FD");
    EmulatorEnd emu(0, 1, kArena);
    const int closed = 900;
    REQUIRE(fcntl(closed, F_GETFD) < 0);
    CHECK(kind_thrown([&] { HostEnd(closed, wake.write_fd); }) ==
          ErrorKind::NotRun);
    CHECK(kind_thrown([&] { HostEnd(emu.fd(), emu.fd()); }) ==
          ErrorKind::NotRun);
    CHECK(kind_thrown([&] { HostEnd(wake.read_fd, wake.write_fd); }) ==
          ErrorKind::NotRun);
    emu.control().version = kVersion + 1;
    CHECK(kind_thrown([&] { HostEnd(emu.fd(), wake.write_fd); }) ==
          ErrorKind::NotRun);
  }
  SUBCASE("a call after exit: State") {
    EmulatorEnd emu(0, 1, kArena);
    HostEnd host(emu.fd(), wake.write_fd);
    host.exit(0);
    CHECK(kind_thrown([&] { host.call(request(Op::Hello)); }) ==
          ErrorKind::State);
  }
  SUBCASE("a call after shutdown: Stopped") {
    EmulatorEnd emu(0, 1, kArena);
    HostEnd host(emu.fd(), wake.write_fd);
    emu.shutdown();
    CHECK(kind_thrown([&] { host.call(request(Op::Hello)); }) ==
          ErrorKind::Stopped);
    CHECK(kind_thrown([&] { host.post_write(0x1000, 1); }) ==
          ErrorKind::Stopped);
  }
  SUBCASE("a bad channel asked for: BadArgument") {
    CHECK(kind_thrown([] { EmulatorEnd(4, 4, kArena); }) ==
          ErrorKind::BadArgument);
    CHECK(kind_thrown([] { EmulatorEnd(0, 1, 0); }) == ErrorKind::BadArgument);
  }
}

// Several processes on one node: each one's arena is its own bus window,
// and the card's view of the node (NodeHostMemory) reaches each process's
// registered memory there and nowhere else.
TEST_CASE("channel: each process sharing a card has its own bus window") {
  EmulatorEnd first(2, 4, 0x10000, 2), second(3, 4, 0x10000, 2);
  CHECK(first.bus_base() == kArenaBusBase);
  CHECK(second.bus_base() == kArenaBusBase + kArenaBusStride);
  CHECK(first.add_region(0, 0x1000) == Status::Ok);
  CHECK(second.add_region(0, 0x1000) == Status::Ok);
  CHECK(first.registered(kArenaBusBase, 0x1000));
  CHECK_FALSE(first.registered(kArenaBusBase + kArenaBusStride, 4));
  CHECK(second.registered(kArenaBusBase + kArenaBusStride, 0x1000));
  CHECK_FALSE(second.registered(kArenaBusBase, 4));

  // The card's DMA through the node's memory.
  struct Process final : nicemu::HostMemory {
    EmulatorEnd &end;
    explicit Process(EmulatorEnd &e) : end(e) {}
    bool registered(uint64_t a, size_t n) const override {
      return end.registered(a, n);
    }
    bool read(uint64_t a, void *out, size_t n) const override {
      if (!registered(a, n))
        return false;
      std::memcpy(out, end.arena() + (a - end.bus_base()), n);
      return true;
    }
    bool write(uint64_t a, const void *in, size_t n) override {
      if (!registered(a, n))
        return false;
      std::memcpy(end.arena() + (a - end.bus_base()), in, n);
      return true;
    }
  } p0(first), p1(second);
  nicemu::NodeHostMemory node({&p0, &p1});
  const uint32_t word = 0xC0FFEE;
  CHECK(node.write(kArenaBusBase + kArenaBusStride + 8, &word, 4));
  uint32_t got = 0;
  std::memcpy(&got, second.arena() + 8, 4);
  CHECK(got == word);
  std::memcpy(&got, first.arena() + 8, 4);
  CHECK(got == 0); // the other process's memory is untouched
  // Past the node's processes, below the first window, across a window's
  // end: nobody's.
  CHECK_FALSE(node.registered(kArenaBusBase + 2 * kArenaBusStride, 4));
  CHECK_FALSE(node.registered(kArenaBusBase - 4, 4));
  CHECK_FALSE(node.write(kArenaBusBase + kArenaBusStride - 4, &word, 8));
  CHECK_FALSE(node.registered(kArenaBusBase + 0x1000, 4)); // unregistered

  // An arena larger than a window cannot share a card.
  CHECK_THROWS_AS(EmulatorEnd(0, 2, kArenaBusStride + 4096, 2), nicemu::Error);
}

TEST_CASE("channel: sleeping hosts check the emulator less often when they "
          "are many, about 256 wakes a second in all at most") {
  using nicemu::liveness_check_ms;
  CHECK(liveness_check_ms(1) == 250);
  CHECK(liveness_check_ms(64) == 250);
  CHECK(liveness_check_ms(128) == 500);
  CHECK(liveness_check_ms(1024) == 4000);
  CHECK(liveness_check_ms(4096) == 16000);
  CHECK(liveness_check_ms(100000) == 16000);
  // Wakes a second of all hosts together (the period is whole ms).
  for (uint32_t hosts : {1u, 8u, 64u, 65u, 300u, 1024u, 4096u}) {
    CAPTURE(hosts);
    CHECK(hosts * 1000.0 / liveness_check_ms(hosts) < 257.0);
  }
}
