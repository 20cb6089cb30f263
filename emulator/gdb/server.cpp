#include "gdb/server.hpp"

#include "gdb/stub.hpp"
#include "nicemu/error.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace nicemu::gdb {

namespace {

using Clock = std::chrono::steady_clock;

// A debugger that reads nothing for this long is dropped rather than
// stalling the emulator on a full socket.
constexpr int kSendTimeoutMs = 30000;

void split_address(std::string_view address, std::string &host,
                   std::string &port) {
  host = "127.0.0.1";
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close == address.npos || close + 1 >= address.size() ||
        address[close + 1] != ':')
      throw Error("gdb: bad address '" + std::string(address) +
                  "': expected [IPV6]:PORT");
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else if (size_t colon = address.rfind(':'); colon != address.npos) {
    if (colon > 0)
      host = address.substr(0, colon);
    port = address.substr(colon + 1);
  } else {
    port = address;
  }
  bool digits = !port.empty() && port.size() <= 5 &&
                port.find_first_not_of("0123456789") == port.npos;
  if (!digits || std::stoul(port) > 65535)
    throw Error("gdb: bad port in '" + std::string(address) +
                "': expected HOST:PORT or PORT (0 to 65535)");
}

std::string describe(const sockaddr_storage &sa, uint16_t &port) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (sa.ss_family == AF_INET6) {
    auto &in6 = reinterpret_cast<const sockaddr_in6 &>(sa);
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    port = ntohs(in6.sin6_port);
    return "[" + std::string(text) + "]:" + std::to_string(port);
  }
  auto &in4 = reinterpret_cast<const sockaddr_in &>(sa);
  inet_ntop(AF_INET, &in4.sin_addr, text, sizeof text);
  port = ntohs(in4.sin_port);
  return std::string(text) + ":" + std::to_string(port);
}

int listen_on(const addrinfo &ai, std::string &why) {
  int fd = socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  ai.ai_protocol);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, ai.ai_addr, ai.ai_addrlen) < 0 || listen(fd, 1) < 0) {
    why = std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

} // namespace

Server::Server(std::string_view address) {
  std::string host, port;
  split_address(address, host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found))
    throw Error("gdb: cannot listen on " + std::string(address) + ": " +
                gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo *ai = found; ai && listen_ < 0; ai = ai->ai_next)
    listen_ = listen_on(*ai, why);
  freeaddrinfo(found);
  if (listen_ < 0)
    throw Error("gdb: cannot listen on " + std::string(address) + ": " + why);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(listen_, reinterpret_cast<sockaddr *>(&bound), &len);
  address_ = describe(bound, port_);
}

Server::~Server() {
  if (client_ >= 0)
    close(client_);
  if (listen_ >= 0)
    close(listen_);
}

Server::Event Server::poll(int timeout_ms, std::string &data) {
  data.clear();
  if (lost_) {
    lost_ = false;
    return Event::Disconnected;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int wait = -1;
    if (timeout_ms >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - Clock::now());
      wait = left.count() > 0 ? int(left.count()) : 0;
    }
    pollfd fds[2] = {{listen_, POLLIN, 0}, {client_, POLLIN, 0}};
    int n = ::poll(fds, client_ >= 0 ? 2 : 1, wait);
    if (n < 0 && errno != EINTR)
      return Event::None;
    if (n > 0 && client_ >= 0 && fds[1].revents) {
      Event e = read_client(data);
      if (e != Event::None)
        return e;
    }
    if (n > 0 && (fds[0].revents & POLLIN) && accept_client())
      return Event::Connected;
    if (wait == 0)
      return Event::None;
  }
}

Server::Event Server::read_client(std::string &data) {
  char buf[16384];
  ssize_t got = recv(client_, buf, sizeof buf, 0);
  if (got > 0) {
    data.assign(buf, size_t(got));
    return Event::Data;
  }
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return Event::None;
  close(client_); // closed by the debugger, or reset
  client_ = -1;
  return Event::Disconnected;
}

bool Server::accept_client() {
  int fd = accept4(listen_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0)
    return false;
  if (client_ >= 0) {
    close(fd); // one debugger at a time
    return false;
  }
  int one = 1; // packets are small and answered one by one
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  client_ = fd;
  ++connections_;
  return true;
}

bool Server::send(std::string_view bytes) {
  while (client_ >= 0 && !bytes.empty()) {
    ssize_t put = ::send(client_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (put > 0) {
      bytes.remove_prefix(size_t(put));
      continue;
    }
    if (put < 0 && errno == EINTR)
      continue;
    pollfd out{client_, POLLOUT, 0};
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
        ::poll(&out, 1, kSendTimeoutMs) > 0)
      continue;
    drop_client();
  }
  return client_ >= 0;
}

void Server::drop_client() {
  if (client_ < 0)
    return;
  close(client_);
  client_ = -1;
  lost_ = true;
}

bool pump(Server &server, Stub &stub, int timeout_ms) {
  std::string data;
  switch (server.poll(timeout_ms, data)) {
  case Server::Event::Connected:
    stub.connected();
    return true;
  case Server::Event::Data:
    stub.feed(data);
    return true;
  case Server::Event::Disconnected:
    stub.disconnected();
    return true;
  case Server::Event::None:
    break;
  }
  return false;
}

} // namespace nicemu::gdb
