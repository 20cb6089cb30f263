// VIPL on the via firmware: the name service. Host names are the cluster's
// ("node3", "n3", and this host's own name or "localhost"); a host address is
// a node's Ethernet MAC (nicemu/vipl.h, docs/via.md).
#include "vipl_card.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace nicemu::vipl {

namespace {

// "123" -> 123; false unless all digits (and not too many).
bool parse_number(const char *s, uint32_t &out) {
  if (!*s || std::strlen(s) > 6)
    return false;
  uint32_t n = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9')
      return false;
    n = n * 10 + uint32_t(*s - '0');
  }
  out = n;
  return true;
}

bool is_this_host(const char *name) {
  if (std::strcmp(name, "localhost") == 0)
    return true;
  char me[256] = {};
  if (gethostname(me, sizeof me - 1) != 0)
    return false;
  if (std::strcmp(name, me) == 0)
    return true;
  // The short name matches too ("host" for "host.example.org").
  const char *dot = std::strchr(me, '.');
  return dot && std::strlen(name) == size_t(dot - me) &&
         std::strncmp(name, me, size_t(dot - me)) == 0;
}

bool name_node(const char *name, uint32_t &node) {
  Library &l = lib();
  uint32_t n;
  if ((std::strncmp(name, "node", 4) == 0 && parse_number(name + 4, n)) ||
      (name[0] == 'n' && parse_number(name + 1, n))) {
    if (n >= l.nodes)
      return false;
    node = n;
    return true;
  }
  if (is_this_host(name)) {
    node = l.node;
    return true;
  }
  return false;
}

} // namespace

} // namespace nicemu::vipl

using namespace nicemu::vipl;

// ---- Name service
// -----------------------------------------------------------------------

VIP_RETURN VipNSInit(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo) noexcept {
  (void)NSInitInfo; // the names are the cluster's: nothing to set up
  return guarded("VipNSInit", [&] {
    return nic_of(NicHandle) ? VIP_SUCCESS
                             : refuse_handle("VipNSInit", Kind::Nic, NicHandle);
  });
}

VIP_RETURN VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name,
                              VIP_NET_ADDRESS *Address,
                              VIP_ULONG NameIndex) noexcept {
  return guarded("VipNSGetHostByName", [&] {
    if (!nic_of(NicHandle))
      return refuse_handle("VipNSGetHostByName", Kind::Nic, NicHandle);
    if (const char *null = null_among({{"Name", Name}, {"Address", Address}}))
      return refuse("VipNSGetHostByName", VIP_INVALID_PARAMETER, "%s is NULL",
                    null);
    uint32_t node;
    if (NameIndex != 0)
      return refuse("VipNSGetHostByName", VIP_ERROR_NAMESERVICE,
                    "NameIndex %lu: a name has one address here (index 0)",
                    static_cast<unsigned long>(NameIndex));
    if (!name_node(Name, node))
      return refuse("VipNSGetHostByName", VIP_ERROR_NAMESERVICE,
                    "no node is named \"%s\" (names are nodeN or nN below "
                    "the cluster size %u, localhost, or this machine's name)",
                    Name, lib().nodes);
    // The host address only: the program sets the discriminator.
    uint8_t mac[6];
    node_mac(node, mac);
    Address->HostAddressLen = 6;
    std::memcpy(Address->HostAddress, mac, 6);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle,
                              VIP_NET_ADDRESS *Address, VIP_CHAR *Name,
                              VIP_ULONG *NameLen) noexcept {
  return guarded("VipNSGetHostByAddr", [&] {
    if (!nic_of(NicHandle))
      return refuse_handle("VipNSGetHostByAddr", Kind::Nic, NicHandle);
    if (const char *null = null_among(
            {{"Address", Address}, {"Name", Name}, {"NameLen", NameLen}}))
      return refuse("VipNSGetHostByAddr", VIP_INVALID_PARAMETER, "%s is NULL",
                    null);
    uint32_t node;
    if (!address_node(Address, node))
      return refuse("VipNSGetHostByAddr", VIP_ERROR_NAMESERVICE,
                    "the address is no node's (a host address is 6 bytes, "
                    "02:4E:4D:00:hi:lo for node hi * 256 + lo, below %u)",
                    lib().nodes);
    char text[32];
    int n = std::snprintf(text, sizeof text, "node%u", node);
    VIP_ULONG need = VIP_ULONG(n) + 1;
    if (*NameLen < need) {
      *NameLen = need;
      return refuse("VipNSGetHostByAddr", VIP_INVALID_PARAMETER,
                    "the name \"%s\" needs %lu bytes (NUL included), "
                    "*NameLen now says so",
                    text, static_cast<unsigned long>(need));
    }
    std::memcpy(Name, text, need);
    *NameLen = need;
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipNSShutdown(VIP_NIC_HANDLE NicHandle) noexcept {
  return guarded("VipNSShutdown", [&] {
    return nic_of(NicHandle)
               ? VIP_SUCCESS
               : refuse_handle("VipNSShutdown", Kind::Nic, NicHandle);
  });
}
