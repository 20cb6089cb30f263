#include "fabric/tap_bridge.hpp"

#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nicemu {

TapBridge::TapBridge(const std::string &name, const Model &model)
    : name_(name) {
  std::optional<EthernetFraming> framing = ethernet_framing(model);
  if (!framing)
    throw Error("--tap: the " + model.name +
                " model's links are not Ethernet; a TAP bridge needs an "
                "Ethernet model (--model comet)");
  framing_ = *framing;
  if (name.empty() || name.size() >= IFNAMSIZ)
    throw Error("--tap '" + name + "': an interface name has 1 to " +
                std::to_string(IFNAMSIZ - 1) + " characters");
  fd_ = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    throw Error(
        "--tap " + name + ": cannot open /dev/net/tun: " + std::strerror(e) +
        (e == ENOENT ? " (no TUN/TAP support: load the tun module)"
         : e == EACCES || e == EPERM ? " (needs permission to use /dev/net/tun)"
                                     : ""));
  }
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, name.data(), name.size());
  if (::ioctl(fd_, TUNSETIFF, &ifr) < 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error(
        "--tap " + name +
        ": cannot attach to the TAP device: " + std::strerror(e) +
        (e == EPERM || e == EACCES
             ? " (creating a TAP device needs CAP_NET_ADMIN; or create it "
               "first: ip tuntap add dev " +
                   name + " mode tap user $USER)"
         : e == EINVAL || e == EBUSY
             ? " (is " + name + " a TUN device, or a TAP already in use?)"
             : ""));
  }
}

// The run (its fabric) is gone first: it must not outlive the bridge.
TapBridge::~TapBridge() {
  if (fd_ >= 0)
    ::close(fd_);
}

void TapBridge::attach(Fabric *fabric) {
  fabric_ = fabric;
  if (!fabric_)
    throw Error("--tap: the run has no network");
  uint32_t nodes = fabric_->topology().nodes;
  fabric_->set_outside([this, nodes](const Packet &p, Time now) {
    if (!for_outside(p, nodes))
      return false;
    bool left = send_out(p.payload);
    if (recorder_.out)
      recorder_.out(now, p.payload, left);
    return left;
  });
}

// The sender's own MAC is filtered, as before; anything else leaves.
bool TapBridge::for_outside(const Packet &p, uint32_t nodes) {
  std::optional<uint32_t> to =
      p.payload.size() >= 6 ? node_of_mac(p.payload.data()) : std::nullopt;
  return !(to && *to < nodes);
}

bool TapBridge::send_out(const std::vector<uint8_t> &payload) {
  size_t length = payload.size() >= kEthernetFcsBytes
                      ? payload.size() - kEthernetFcsBytes
                      : 0;
  if (length < kEthernetHeaderBytes)
    return false;
  ssize_t n = ::write(fd_, payload.data(), length);
  if (n != ssize_t(length))
    ++stats_.write_errors;
  else
    ++stats_.frames_out;
  return true;
}

void TapBridge::poll(Time now) {
  if (!fabric_)
    return;
  uint32_t nodes = fabric_->topology().nodes;
  std::vector<uint8_t> frame(framing_.max_length() + 64);
  for (int i = 0; i < 64; ++i) { // a bounded batch per round
    ssize_t n = ::read(fd_, frame.data(), frame.size());
    if (n <= 0)
      return; // EAGAIN: nothing more (errors: nothing to read either)
    size_t length = size_t(n);
    std::optional<uint32_t> to = length >= kEthernetHeaderBytes
                                     ? node_of_mac(frame.data())
                                     : std::nullopt;
    if (!to || *to >= nodes || length > framing_.max_length()) {
      ++stats_.frames_ignored;
      continue;
    }
    // As a NIC on the wire gets it: padded to the minimum, with its FCS.
    std::vector<uint8_t> payload(frame.begin(), frame.begin() + n);
    if (payload.size() < framing_.padded_length())
      payload.resize(framing_.padded_length(), 0);
    uint32_t crc = packet_crc(payload.data(), payload.size());
    for (int b = 0; b < 4; ++b)
      payload.push_back(uint8_t(crc >> (8 * b)));
    ++stats_.frames_in;
    if (recorder_.in)
      recorder_.in(now, *to, payload);
    fabric_->deliver_from_outside(*to, std::move(payload), now);
  }
}

void TapBridge::wait(int64_t timeout_ns) {
  pollfd p{fd_, POLLIN, 0};
  timespec ts{time_t(timeout_ns / 1'000'000'000),
              long(timeout_ns % 1'000'000'000)};
  (void)::ppoll(&p, 1, &ts, nullptr);
}

} // namespace nicemu
