// The GDB remote serial protocol over a byte stream, driving a Target.
//
// The stub owns neither the connection nor the run loop; it is fed bytes and
// told about stops. The integrator:
//   - calls connected() when a debugger connects and disconnected() when the
//     connection ends, and hands every byte received to feed(); replies go
//     out through the Sender (server.hpp's pump() does all of this);
//   - while running() is false, the debugger holds the target: run nothing,
//     wait (blocking) for input;
//   - while running() is true, runs the target and polls for input between
//     slices (Ctrl-C arrives that way and becomes Target::interrupt()); when
//     the target has stopped (every thread halted), calls on_stop().
// From feed() the stub calls the Target: registers, memory, points,
// resume(), interrupt(), detach(), kill(). A run loop with a debugger:
//
//   gdb::Server server(address);
//   gdb::Stub stub(target, [&](std::string_view b) { server.send(b); });
//   while (run goes on) {
//     if (!stub.running()) {          // halted: virtual time stands still
//       gdb::pump(server, stub, -1);  // also waits for the first debugger
//       continue;
//     }
//     run one slice of every core the ResumePlan lets run;
//     if (something stopped) stub.on_stop(event); // after halting all
//     gdb::pump(server, stub, 0);
//   }
//
// All-stop mode, one process, threads without the multiprocess extension.
#pragma once

#include "gdb/packet.hpp"
#include "gdb/target.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

namespace nicemu::gdb {

class Stub {
public:
  using Sender = std::function<void(std::string_view bytes)>;

  // Longest packet GDB may send us (advertised as PacketSize).
  static constexpr size_t kPacketSize = 0x2000;
  // Most bytes one 'm' reply carries; GDB asks again for the rest.
  static constexpr size_t kMaxMemoryRead = 0x1000;
  // Most breakpoints and watchpoints inserted at once.
  static constexpr size_t kMaxPoints = 4096;

  Stub(Target &target, Sender send);

  // A debugger connected: fresh protocol state (acks on). A running target
  // is interrupted, since GDB expects to find it stopped.
  void connected();
  // The connection ended: removes the points GDB left inserted; the target
  // keeps its state (a halted target waits for the next debugger).
  void disconnected();
  void feed(std::string_view bytes);

  // The target stopped (after resume() or interrupt()). Answers the pending
  // resume or '?' with a stop reply; otherwise kept for the next '?'.
  void on_stop(const StopEvent &event);
  // Text to show in GDB's console while the target runs (O packets);
  // dropped when no resume is pending.
  void console_output(std::string_view text);

  bool running() const { return running_; }
  bool has_client() const { return client_; }

  // The protocol state of a debugger session (ack mode, features, thread
  // selections, inserted points) as text, and taking it on in another copy
  // of the process (a checkpoint resumed for reverse execution): the
  // target's points are brought in line, and the session waits for a stop,
  // as GDB does after its bs or bc.
  std::string save_session() const;
  bool restore_session(std::string_view saved);
  // In such a copy, resumed for a monitor command that moved the run (a
  // jump in time): answers that command with `output` (GDB still waits
  // for its reply, not for a stop), and the target stands at `event`.
  void answer_command(const StopEvent &event, std::string_view output);

private:
  using Reply = std::optional<std::string>; // nullopt: no reply (c, s, k)

  struct Point {
    char type; // '0'..'4' as in Z packets
    uint32_t addr, len;
    bool operator<(const Point &o) const {
      return std::tie(type, addr, len) < std::tie(o.type, o.addr, o.len);
    }
  };

  void send_packet(std::string_view payload);
  // O packets: text for GDB's console.
  void send_output(std::string_view output);
  void handle_packet(std::string_view packet);
  Reply dispatch(std::string_view packet);
  // The reply for `event`; its thread becomes the Hg thread, as GDB
  // assumes.
  std::string stop_reply(const StopEvent &event);

  // Threads.
  bool thread_exists(ThreadId thread);
  ThreadId current_thread();
  ThreadId general_thread();
  Reply set_thread(std::string_view args);
  Reply thread_alive(std::string_view args);

  // Registers and memory (stub_data.cpp).
  Reply read_registers();
  Reply write_registers(std::string_view hex);
  Reply read_register(std::string_view args);
  Reply write_register(std::string_view args);
  Reply read_memory(std::string_view args);
  Reply write_memory(std::string_view args, bool binary); // M or X

  // Execution and points (stub_resume.cpp).
  Reply resume_legacy(char command, std::string_view args);
  Reply resume_vcont(std::string_view actions);
  Reply resume(const ResumePlan &plan);
  Reply reverse(bool step);
  Reply point(bool insert, std::string_view args);
  PointResult remove_point(const Point &p);
  void remove_all_points();
  Reply detach();
  Reply kill();

  // Queries (stub_query.cpp).
  Reply query(std::string_view packet);
  Reply query_set(std::string_view packet);
  Reply query_v(std::string_view packet);
  Reply supported(std::string_view features);
  Reply thread_info(bool first);
  Reply thread_extra_info(std::string_view args);
  Reply xfer(std::string_view args);
  Reply monitor(std::string_view hex);
  std::string threads_xml();

  Target &target_;
  Sender send_;
  PacketReader reader_{kPacketSize + 64};
  std::string last_sent_; // for '-'

  bool client_ = false;
  bool ack_mode_ = true;
  bool gdb_swbreak_ = false; // GDB understands swbreak/hwbreak stop reasons
  bool gdb_hwbreak_ = false;

  bool running_ = false; // the target runs; on_stop() will come
  bool waiting_ = false; // GDB waits for a stop reply
  std::optional<StopEvent> last_stop_;
  ThreadId current_ = kAnyThread;  // thread of the last stop
  ThreadId general_ = kAnyThread;  // Hg: registers and memory
  ThreadId continue_ = kAnyThread; // Hc: legacy c and s

  size_t thread_cursor_ = 0; // qsThreadInfo position
  std::string threads_xml_;  // qXfer:threads:read, built at offset 0
  std::set<Point> points_;
};

} // namespace nicemu::gdb
