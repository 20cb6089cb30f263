/* nicemu/vipl.h from old C: the header compiles as GNU C89 under -pedantic,
 * the descriptor has the layout the NIC reads (sizes and offsets checked at
 * compile time), both field spellings (M-VIA's d->CS / d->DS[i].Local and
 * cLAN's d->Control / d->Data[i]) name the same bytes, the constants have
 * their standard values, and every VIPL call has a prototype (the table of
 * their addresses does not compile without one). Written in C89 so it builds
 * with -std=gnu89 -pedantic -Wall -Werror.
 *
 *   vipl_header_c89_prog   checks the spellings at run time too, calls no
 *                          VIPL function; exit status 0 when all held */
#include <nicemu/vipl.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A C89 static assertion: a negative array size stops the compile. */
#define VIPL_CHECK(name, cond) typedef char vipl_check_##name[(cond) ? 1 : -1]

/* Descriptor layout. */
VIPL_CHECK(pvoid64_size, sizeof(VIP_PVOID64) == 8);
VIPL_CHECK(cs_size, sizeof(VIP_CONTROL_SEGMENT) == 32);
VIPL_CHECK(cs_next, offsetof(VIP_CONTROL_SEGMENT, Next) == 0);
VIPL_CHECK(cs_next_handle, offsetof(VIP_CONTROL_SEGMENT, NextHandle) == 8);
VIPL_CHECK(cs_seg_count, offsetof(VIP_CONTROL_SEGMENT, SegCount) == 12);
VIPL_CHECK(cs_control, offsetof(VIP_CONTROL_SEGMENT, Control) == 14);
VIPL_CHECK(cs_reserved, offsetof(VIP_CONTROL_SEGMENT, Reserved) == 16);
VIPL_CHECK(cs_immediate, offsetof(VIP_CONTROL_SEGMENT, ImmediateData) == 20);
VIPL_CHECK(cs_length, offsetof(VIP_CONTROL_SEGMENT, Length) == 24);
VIPL_CHECK(cs_status, offsetof(VIP_CONTROL_SEGMENT, Status) == 28);
VIPL_CHECK(as_size, sizeof(VIP_ADDRESS_SEGMENT) == 16);
VIPL_CHECK(as_data, offsetof(VIP_ADDRESS_SEGMENT, Data) == 0);
VIPL_CHECK(as_handle, offsetof(VIP_ADDRESS_SEGMENT, Handle) == 8);
VIPL_CHECK(as_reserved, offsetof(VIP_ADDRESS_SEGMENT, Reserved) == 12);
VIPL_CHECK(ds_size, sizeof(VIP_DATA_SEGMENT) == 16);
VIPL_CHECK(ds_data, offsetof(VIP_DATA_SEGMENT, Data) == 0);
VIPL_CHECK(ds_handle, offsetof(VIP_DATA_SEGMENT, Handle) == 8);
VIPL_CHECK(ds_length, offsetof(VIP_DATA_SEGMENT, Length) == 12);
VIPL_CHECK(seg_size, sizeof(VIP_DESCRIPTOR_SEGMENT) == 16);
VIPL_CHECK(desc_size, sizeof(VIP_DESCRIPTOR) == 64);
VIPL_CHECK(desc_cs, offsetof(VIP_DESCRIPTOR, CS) == 0);
VIPL_CHECK(desc_ds, offsetof(VIP_DESCRIPTOR, DS) == 32);
VIPL_CHECK(desc_aliases, NICEMU_VIPL_DESCRIPTOR_ALIASES == 1);
VIPL_CHECK(desc_control, offsetof(VIP_DESCRIPTOR, Control) == 0);
VIPL_CHECK(desc_data, offsetof(VIP_DESCRIPTOR, Data) == 32);
VIPL_CHECK(alignment, VIP_DESCRIPTOR_ALIGNMENT == 64);
VIPL_CHECK(mem_handle_size, sizeof(VIP_MEM_HANDLE) == 4);
VIPL_CHECK(net_address, offsetof(VIP_NET_ADDRESS, HostAddress) == 4);
VIPL_CHECK(nic_name, sizeof(((VIP_NIC_ATTRIBUTES *)0)->Name) == 64);
VIPL_CHECK(ulong, sizeof(VIP_ULONG) == sizeof(unsigned long));

/* Constants. */
VIPL_CHECK(ret_success, VIP_SUCCESS == 0);
VIPL_CHECK(ret_descriptor, VIP_DESCRIPTOR_ERROR == 11);
VIPL_CHECK(ret_no_match, VIP_NO_MATCH == 14);
VIPL_CHECK(ret_not_supported, VIP_ERROR_NOT_SUPPORTED == 16);
VIPL_CHECK(control_ops, VIP_CONTROL_OP_RDMAREAD == 2 &&
                            VIP_CONTROL_OP_MASK == 3 &&
                            VIP_CONTROL_QFENCE == 8);
VIPL_CHECK(status_errors,
           (VIP_STATUS_FORMAT_ERROR | VIP_STATUS_PROTECTION_ERROR |
            VIP_STATUS_LENGTH_ERROR | VIP_STATUS_PARTIAL_ERROR |
            VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_TRANSPORT_ERROR |
            VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_REMOTE_DESC_ERROR) ==
               VIP_STATUS_ERROR_MASK);
VIPL_CHECK(status_ops, VIP_STATUS_OP_RECEIVE == 0x10000L &&
                           VIP_STATUS_OP_REMOTE_RDMA_WRITE == 0x30000L &&
                           VIP_STATUS_OP_MASK == 0x70000L &&
                           VIP_STATUS_IMMEDIATE == 0x80000L);
VIPL_CHECK(status_reserved, (VIP_STATUS_RESERVED &
                             (VIP_STATUS_DONE | VIP_STATUS_ERROR_MASK |
                              VIP_STATUS_OP_MASK | VIP_STATUS_IMMEDIATE)) == 0);
VIPL_CHECK(states, VIP_STATE_IDLE == 0 && VIP_STATE_ERROR == 3);
VIPL_CHECK(services, (VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY |
                      VIP_SERVICE_RELIABLE_RECEPTION) == 7);
VIPL_CHECK(errors,
           VIP_ERROR_CATASTROPHIC == 10 && VIP_RESOURCE_DESCRIPTOR == 3);
VIPL_CHECK(kinds, VIP_VI_KIND_CONNECTED == 0 && VIP_VI_KIND_FM_IP == 1);

/* Every call, through a pointer of its own type; a call without a prototype
 * would be an implicit int function, rejected below. */
typedef void (*any_fn)(void);
#define FN(f) (any_fn) f
static const any_fn all_calls[] = {
    FN(VipOpenNic),
    FN(VipCloseNic),
    FN(VipQueryNic),
    FN(VipRegisterMem),
    FN(VipDeregisterMem),
    FN(VipQueryMem),
    FN(VipSetMemAttributes),
    FN(VipErrorCallback),
    FN(VipQuerySystemManagementInfo),
    FN(VipCreatePtag),
    FN(VipDestroyPtag),
    FN(VipCreateVi),
    FN(VipDestroyVi),
    FN(VipQueryVi),
    FN(VipSetViAttributes),
    FN(VipPostSend),
    FN(VipSendDone),
    FN(VipSendWait),
    FN(VipSendNotify),
    FN(VipPostRecv),
    FN(VipRecvDone),
    FN(VipRecvWait),
    FN(VipRecvNotify),
    FN(VipConnectWait),
    FN(VipConnectAccept),
    FN(VipConnectReject),
    FN(VipConnectRequest),
    FN(VipDisconnect),
    FN(VipConnectPeerRequest),
    FN(VipConnectPeerDone),
    FN(VipConnectPeerWait),
    FN(VipCreateCQ),
    FN(VipDestroyCQ),
    FN(VipResizeCQ),
    FN(VipCQDone),
    FN(VipCQWait),
    FN(VipCQNotify),
    FN(VipNSInit),
    FN(VipNSGetHostByName),
    FN(VipNSGetHostByAddr),
    FN(VipNSShutdown),
    FN(VipCreateViKind),
};
VIPL_CHECK(call_count, sizeof(all_calls) / sizeof(all_calls[0]) == 42);

/* A few calls again with their exact types, as programs store them. */
static VIP_RETURN (*post_send)(VIP_VI_HANDLE, VIP_DESCRIPTOR *,
                               VIP_MEM_HANDLE) = VipPostSend;
static VIP_RETURN (*recv_wait)(VIP_VI_HANDLE, VIP_ULONG,
                               VIP_DESCRIPTOR **) = VipRecvWait;
static VIP_RETURN (*cq_notify)(VIP_CQ_HANDLE, VIP_PVOID,
                               void (*)(VIP_PVOID, VIP_NIC_HANDLE,
                                        VIP_VI_HANDLE,
                                        VIP_BOOLEAN)) = VipCQNotify;
static VIP_RETURN (*error_callback)(
    VIP_NIC_HANDLE, VIP_PVOID,
    void (*)(VIP_PVOID, VIP_ERROR_DESCRIPTOR *)) = VipErrorCallback;

/* Handlers of the callback types. */
static void on_error(VIP_PVOID context, VIP_ERROR_DESCRIPTOR *error) {
  (void)context;
  (void)error;
}
static void on_vi(VIP_PVOID context, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi,
                  VIP_DESCRIPTOR *desc) {
  (void)context;
  (void)nic;
  (void)vi;
  (void)desc;
}
static void on_cq(VIP_PVOID context, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi,
                  VIP_BOOLEAN recv_queue) {
  (void)context;
  (void)nic;
  (void)vi;
  (void)recv_queue;
}
static VIP_ERROR_HANDLER error_handler = on_error;
static VIP_VI_CALLBACK vi_callback = on_vi;
static VIP_CQ_CALLBACK cq_callback = on_cq;

/* Descriptors as programs declare them: inside their own buffers. */
typedef struct {
  VIP_DESCRIPTOR desc;
  char data[64];
} vbuf;

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    ++failures;
    printf("vipl_header_c89: %s\n", what);
  }
}

/* M-VIA style: a send and an RDMA write. */
static void fill_mvia(VIP_DESCRIPTOR *d, vbuf *buf, VIP_MEM_HANDLE mh) {
  memset(d, 0, sizeof *d);
  d->CS.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
  d->CS.SegCount = 1;
  d->CS.ImmediateData = 42;
  d->CS.Length = sizeof buf->data;
  d->CS.Status = 0;
  d->DS[0].Local.Data.Address = buf->data;
  d->DS[0].Local.Handle = mh;
  d->DS[0].Local.Length = sizeof buf->data;
}

static void fill_mvia_rdma(VIP_DESCRIPTOR *d, void *remote, VIP_MEM_HANDLE rh,
                           vbuf *buf, VIP_MEM_HANDLE mh) {
  memset(d, 0, sizeof *d);
  d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
  d->CS.SegCount = 2;
  d->CS.Length = sizeof buf->data;
  d->DS[0].Remote.Data.Address = remote;
  d->DS[0].Remote.Handle = rh;
  d->DS[0].Remote.Reserved = 0;
  d->DS[1].Local.Data.Address = buf->data;
  d->DS[1].Local.Handle = mh;
  d->DS[1].Local.Length = sizeof buf->data;
}

/* cLAN style, the same send. */
static void fill_clan(VIP_DESCRIPTOR *d, vbuf *buf, VIP_MEM_HANDLE mh) {
  memset(d, 0, sizeof *d);
  d->Control.Next.Descriptor = 0;
  d->Control.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
  d->Control.SegCount = 1;
  d->Control.ImmediateData = 42;
  d->Control.Length = sizeof buf->data;
  d->Control.Status = 0;
  d->Data[0].Data.Address = buf->data;
  d->Data[0].Handle = mh;
  d->Data[0].Length = sizeof buf->data;
}

static void check_spellings(void) {
  static vbuf a, b;
  static char remote[16];
  VIP_DESCRIPTOR *d = &a.desc;

  fill_mvia(&a.desc, &a, 7);
  fill_clan(&b.desc, &a, 7);
  expect(memcmp(&a.desc, &b.desc, sizeof a.desc) == 0,
         "M-VIA and cLAN spellings fill different bytes");

  /* Each spelling reads what the other wrote. */
  expect(d->Control.Length == sizeof a.data, "Control.Length");
  expect(d->Data[0].Data.Address == a.data, "Data[0].Data.Address");
  expect(d->Data[0].Handle == 7, "Data[0].Handle");
  d->Control.Status =
      VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE;
  expect((d->CS.Status & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_RECEIVE,
         "CS.Status op");
  expect((d->CS.Status & VIP_STATUS_ERROR_MASK) == 0, "CS.Status errors");

  fill_mvia_rdma(&a.desc, remote, 9, &a, 7);
  expect(a.desc.Data[0].Data.Address == remote, "RDMA remote address");
  expect(a.desc.Data[0].Handle == 9, "RDMA remote handle");
  expect(a.desc.Data[1].Length == sizeof a.data, "RDMA local length");
  expect((a.desc.CS.Control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_RDMAWRITE,
         "RDMA op");

  /* The 64-bit address field keeps a pointer whole. */
  a.desc.CS.Next.AddressBits = 0;
  a.desc.CS.Next.Address = &b.desc;
  expect(a.desc.Control.Next.Descriptor == &b.desc, "Next.Descriptor");
}

static void check_types(void) {
  VIP_NIC_ATTRIBUTES nic;
  VIP_VI_ATTRIBUTES vi;
  VIP_MEM_ATTRIBUTES mem;
  VIP_ERROR_DESCRIPTOR err;
  VIP_AUTODISCOVERY_LIST list;
  VIP_VI_STATE state = VIP_STATE_CONNECT_PENDING;
  VIP_RETURN ret = VIP_NOT_REACHABLE;
  VIP_VI_KIND kind = VIP_VI_KIND_FM_IP;
  VIP_ULONG timeout = VIP_INFINITE;
  /* An address with room for a 6-byte host and a 4-byte discriminator. */
  union {
    VIP_NET_ADDRESS addr;
    char room[sizeof(VIP_NET_ADDRESS) + 10];
  } addr;
  VIP_UINT8 *host;
  VIP_UINT8 u8 = 1;
  VIP_UINT16 u16 = 2;
  VIP_UINT32 u32 = 3;
  VIP_UINT64 u64 = 4;
  VIP_CHAR c = 'v';
  VIP_UCHAR uc = 5;
  VIP_USHORT us = 6;
  VIP_BOOLEAN yes = VIP_TRUE;
  VIP_EVENT_HANDLE ev = 0;
  VIP_CONN_HANDLE conn = 0;
  VIP_QOS qos = 0;

  memset(&nic, 0, sizeof nic);
  nic.ReliabilityLevelSupport =
      VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY;
  nic.RDMAReadSupport = VIP_SERVICE_RELIABLE_DELIVERY;
  expect(nic.MaxTransferSize == 0 && nic.LocalNicAddress == 0, "NIC fields");

  vi.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
  vi.MaxTransferSize = 32768;
  vi.QoS = qos;
  vi.Ptag = 0;
  vi.EnableRdmaWrite = VIP_TRUE;
  vi.EnableRdmaRead = VIP_FALSE;
  mem.Ptag = vi.Ptag;
  mem.EnableRdmaWrite = vi.EnableRdmaWrite;
  mem.EnableRdmaRead = vi.EnableRdmaRead;
  expect(mem.EnableRdmaWrite == VIP_TRUE, "memory attributes");

  err.ResourceCode = VIP_RESOURCE_VI;
  err.ErrorCode = VIP_ERROR_CONN_LOST;
  err.DescriptorPtr = 0;
  expect(err.ErrorCode == 1, "error codes");

  list.ADAddrArray = 0;
  list.NumAdAddrs = 0;
  expect(list.ADAddrArray == 0 && VIP_SMI_AUTODISCOVERY == 1, "autodiscovery");

  /* Past HostAddress[0] through a pointer, as programs do (indexing the
   * [1] array itself is out of bounds for -fsanitize=bounds). */
  addr.addr.HostAddressLen = 6;
  addr.addr.DiscriminatorLen = 4;
  host = addr.addr.HostAddress;
  memset(host, 0, 10);
  host[6] = 0x5a;
  expect(host[9] == 0 && addr.room[4 + 6] == 0x5a, "net address");

  expect(timeout == 0xFFFFFFFFUL, "VIP_INFINITE");
  expect(state == 2 && ret == 15 && kind == 1, "enum values");
  expect(u8 + u16 + u32 + u64 + uc + us == 21 && c == 'v' && yes == 1,
         "basic types");
  expect(ev == 0 && conn == 0, "handles");
}

int main(void) {
  size_t i;
  for (i = 0; i < sizeof all_calls / sizeof all_calls[0]; ++i)
    expect(all_calls[i] != 0, "a call has no address");
  expect(post_send != 0 && recv_wait != 0 && cq_notify != 0 &&
             error_callback != 0,
         "typed call pointers");
  expect(error_handler != 0 && vi_callback != 0 && cq_callback != 0,
         "callback types");
  check_spellings();
  check_types();
  if (failures == 0)
    printf("vipl_header_c89: ok\n");
  return failures == 0 ? 0 : 1;
}
