// A TCP listener serving one debugger at a time, polled by the run loop:
// non-blocking between slices, blocking while the debugger holds the target.
// A debugger may leave (detach, disconnect) and another connect later.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nicemu::gdb {

class Stub;

class Server {
public:
  // Listens on "PORT", ":PORT", "HOST:PORT" or "[IPV6]:PORT"; the host is
  // the loopback address unless given. Port 0 takes any free port (port()
  // tells which). Throws nicemu::Error if it cannot listen.
  explicit Server(std::string_view address);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  uint16_t port() const { return port_; }
  // "HOST:PORT" as bound, for messages ("target remote HOST:PORT").
  const std::string &address() const { return address_; }
  bool has_client() const { return client_ >= 0; }
  // Debuggers served so far (tells one connection from the next).
  uint64_t connections() const { return connections_; }

  enum class Event { None, Connected, Data, Disconnected };
  // Waits up to `timeout_ms` (0: no wait; negative: no limit) for a
  // debugger to connect, bytes from it (into `data`) or its leaving. While
  // one debugger is served, other connections are closed at once.
  Event poll(int timeout_ms, std::string &data);
  // Sends all of `bytes`; false if the debugger is gone (the next poll()
  // reports Disconnected).
  bool send(std::string_view bytes);
  // Closes the debugger's connection; the next poll() reports Disconnected.
  void drop_client();

private:
  Event read_client(std::string &data);
  bool accept_client();

  int listen_ = -1;
  int client_ = -1;
  bool lost_ = false; // the client went away outside poll(): report it
  uint16_t port_ = 0;
  uint64_t connections_ = 0;
  std::string address_;
};

// One turn of the connection: waits up to `timeout_ms` for an event of
// `server` and hands it to `stub` (connected(), feed(), disconnected()).
// False if nothing happened.
bool pump(Server &server, Stub &stub, int timeout_ms);

} // namespace nicemu::gdb
