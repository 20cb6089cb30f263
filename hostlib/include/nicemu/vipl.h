/* nicemu: VIPL, the VI Provider Library of the Intel "Virtual Interface (VI)
 * Architecture Developer's Guide" (rev 1.0, 1998), with the names, values,
 * types and descriptor layout that M-VIA and Giganet cLAN shipped, so that
 * programs written for them compile unchanged (C89/gnu89, later C, C++).
 * Link with nicemu::host. docs/vipl.md says which calls work and which
 * return VIP_ERROR_NOT_SUPPORTED; the nicemu extensions (kinds of VI, from
 * Comet-VIA) are at the end of this file.
 *
 * Every call returns a VIP_RETURN. Timeouts are in milliseconds; 0 polls,
 * VIP_INFINITE never expires. Descriptors live in the program's registered
 * memory, start on a VIP_DESCRIPTOR_ALIGNMENT boundary and are owned by the
 * provider from the post until a Done, Wait or notify call hands them
 * back. */
#ifndef NICEMU_VIPL_H
#define NICEMU_VIPL_H

#include <stdint.h>

/* C++ callers learn that these calls never throw (as nicemu/host.h). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define NICEMU_VIPL_NOEXCEPT noexcept
#else
#define NICEMU_VIPL_NOEXCEPT
#endif

/* The original headers defined IN and OUT as empty parameter markers, and
 * some programs use them in their own declarations. Define
 * NICEMU_VIPL_NO_IN_OUT before the include to leave them out. */
#ifndef NICEMU_VIPL_NO_IN_OUT
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Basic types ----
 * Fixed widths come from <stdint.h>. VIP_ULONG stays `unsigned long`, as in
 * M-VIA and Giganet (programs print attributes with %ld/%lu): 32 bits on
 * ILP32 hosts, 64 bits on LP64 Linux. Fields whose width the NIC sees
 * (descriptors, memory handles) use the fixed-width types instead. */
typedef uint8_t VIP_UINT8;
typedef uint16_t VIP_UINT16;
typedef uint32_t VIP_UINT32;
typedef uint64_t VIP_UINT64;
typedef char VIP_CHAR;
typedef unsigned char VIP_UCHAR;
typedef short VIP_SHORT;
typedef unsigned short VIP_USHORT;
typedef long VIP_LONG;
typedef unsigned long VIP_ULONG;
typedef void *VIP_PVOID;
typedef int VIP_BOOLEAN;

#define VIP_TRUE 1
#define VIP_FALSE 0

/* Waits forever (the value of INFINITE, which every provider used). */
#define VIP_INFINITE ((VIP_ULONG)0xFFFFFFFFUL)

/* ---- Handles ----
 * Opaque to the program. A memory handle is the 32-bit value the NIC finds
 * in descriptors; the others are pointers. */
typedef VIP_PVOID VIP_NIC_HANDLE;
typedef VIP_PVOID VIP_VI_HANDLE;
typedef VIP_PVOID VIP_CQ_HANDLE;
typedef VIP_PVOID VIP_PROTECTION_HANDLE;
typedef VIP_PVOID VIP_CONN_HANDLE;
typedef VIP_PVOID VIP_EVENT_HANDLE;
typedef VIP_UINT32 VIP_MEM_HANDLE;
typedef VIP_PVOID VIP_QOS; /* quality of service: left undefined by VIA */

/* ---- Return codes ---- */
typedef enum {
  VIP_SUCCESS = 0,
  VIP_NOT_DONE = 1, /* nothing completed yet (Done calls) */
  VIP_INVALID_PARAMETER = 2,
  VIP_ERROR_RESOURCE = 3, /* out of VIs, CQ entries, memory, ... */
  VIP_TIMEOUT = 4,
  VIP_REJECT = 5, /* the peer rejected the connection */
  VIP_INVALID_RELIABILITY_LEVEL = 6,
  VIP_INVALID_MTU = 7, /* MaxTransferSize not supported or not matching */
  VIP_INVALID_QOS = 8,
  VIP_INVALID_PTAG = 9,
  VIP_INVALID_RDMAREAD = 10, /* RDMA read asked where it is not allowed */
  VIP_DESCRIPTOR_ERROR = 11,
  VIP_INVALID_STATE = 12, /* the VI is not in a state for this call */
  VIP_ERROR_NAMESERVICE = 13,
  VIP_NO_MATCH = 14,      /* no name, address or request matched */
  VIP_NOT_REACHABLE = 15, /* the remote node cannot be reached */
  VIP_ERROR_NOT_SUPPORTED = 16
} VIP_RETURN;

/* ---- Reliability levels ----
 * A VI has one level; a NIC reports the levels it offers as a mask of these
 * bits (ReliabilityLevelSupport, RDMAReadSupport). */
typedef VIP_USHORT VIP_RELIABILITY_LEVEL;
#define VIP_SERVICE_UNRELIABLE 0x01
#define VIP_SERVICE_RELIABLE_DELIVERY 0x02
#define VIP_SERVICE_RELIABLE_RECEPTION 0x04

/* ---- Network addresses ----
 * A host (NIC) address followed by a discriminator that tells endpoints on
 * that host apart, both of variable length: HostAddress holds
 * HostAddressLen + DiscriminatorLen bytes, so programs allocate
 * sizeof(VIP_NET_ADDRESS) plus the extra bytes (HostAddress[1] is the
 * pre-C99 way to write a flexible array member). */
typedef struct _VIP_NET_ADDRESS {
  VIP_UINT16 HostAddressLen;
  VIP_UINT16 DiscriminatorLen;
  VIP_UINT8 HostAddress[1];
} VIP_NET_ADDRESS;

/* ---- NIC attributes (VipQueryNic) ----
 * Fixed for the life of the provider. Sizes in bytes. */
#define VIP_MAX_NIC_NAME 64 /* the size of Name below */
typedef struct _VIP_NIC_ATTRIBUTES {
  VIP_CHAR Name[VIP_MAX_NIC_NAME];
  VIP_ULONG HardwareVersion;
  VIP_ULONG ProviderVersion;
  VIP_UINT16 NicAddressLen;         /* bytes of a host address */
  const VIP_UINT8 *LocalNicAddress; /* this NIC's host address */
  VIP_BOOLEAN ThreadSafe;           /* calls may come from several threads */
  VIP_UINT16 MaxDiscriminatorLen;
  VIP_ULONG MaxRegisterBytes;      /* all registered memory together */
  VIP_ULONG MaxRegisterRegions;    /* registered regions at once */
  VIP_ULONG MaxRegisterBlockBytes; /* one region */
  VIP_ULONG MaxVI;
  VIP_ULONG MaxDescriptorsPerQueue;
  VIP_ULONG MaxSegmentsPerDesc; /* address and data segments together */
  VIP_ULONG MaxCQ;
  VIP_ULONG MaxCQEntries;
  VIP_ULONG MaxTransferSize; /* data bytes of one descriptor */
  VIP_ULONG NativeMTU;       /* payload of one packet on the wire */
  VIP_ULONG MaxPtags;
  VIP_RELIABILITY_LEVEL ReliabilityLevelSupport; /* VIP_SERVICE_* mask */
  VIP_RELIABILITY_LEVEL RDMAReadSupport; /* levels where RDMA read works */
} VIP_NIC_ATTRIBUTES;

/* ---- Descriptors ----
 * What the NIC reads and writes, so the layout is fixed: a 32-byte control
 * segment, then 16-byte segments. A send or receive carries data segments
 * only; an RDMA write or read puts one address segment (the remote buffer)
 * first, then the local data segments. SegCount counts all of them. A
 * descriptor may have more segments than the two of VIP_DESCRIPTOR: the
 * program lays them out after it, in the same memory. */
#define VIP_DESCRIPTOR_ALIGNMENT 64

struct _VIP_DESCRIPTOR;

/* A 64-bit address field, whatever the size of a host pointer. */
typedef union {
  VIP_UINT64 AddressBits;
  VIP_PVOID Address;
  struct _VIP_DESCRIPTOR *Descriptor; /* cLAN name, for Next */
} VIP_PVOID64;

typedef struct {
  VIP_PVOID64 Next;          /* link kept by the provider */
  VIP_MEM_HANDLE NextHandle; /* memory handle of Next */
  VIP_UINT16 SegCount;
  VIP_UINT16 Control;       /* VIP_CONTROL_* */
  VIP_UINT32 Reserved;      /* must be 0 */
  VIP_UINT32 ImmediateData; /* sent with VIP_CONTROL_IMMEDIATE */
  VIP_UINT32 Length;        /* data bytes: set by the sender, written on
                               receive completion */
  VIP_UINT32 Status;        /* VIP_STATUS_*, written by the NIC; 0 when
                               posted */
} VIP_CONTROL_SEGMENT;

/* The remote buffer of an RDMA operation. */
typedef struct {
  VIP_PVOID64 Data;
  VIP_MEM_HANDLE Handle; /* the remote region's memory handle */
  VIP_UINT32 Reserved;
} VIP_ADDRESS_SEGMENT;

/* A local buffer. */
typedef struct {
  VIP_PVOID64 Data;
  VIP_MEM_HANDLE Handle;
  VIP_UINT32 Length;
} VIP_DATA_SEGMENT;

typedef union {
  VIP_ADDRESS_SEGMENT Remote;
  VIP_DATA_SEGMENT Local;
} VIP_DESCRIPTOR_SEGMENT;

/* Two spellings of the same 64 bytes are in use:
 *   M-VIA and the Developer's Guide (and cLAN with VIPL095 defined):
 *       d->CS.Length, d->DS[0].Local.Data.Address, d->DS[0].Remote.Handle
 *   cLAN's own:
 *       d->Control.Length, d->Data[0].Data.Address, d->Data[0].Handle
 * Both work here, at the same offsets, with no macro renaming a field.
 * Standard C89 cannot give one storage two member names at offset 32, and
 * macros cannot do it either: `Control` and `Data` are also member names
 * inside the segments (d->Control.Control, d->Data[0].Data), so a macro
 * would rename those too. So each pair shares an anonymous union: standard
 * in C11 and C++, and in older C a GNU extension (gcc, clang) that
 * __extension__ keeps quiet under -pedantic. A compiler that has neither
 * gets the Developer's Guide spelling only, with
 * NICEMU_VIPL_DESCRIPTOR_ALIASES 0. Through Data[], a segment of an RDMA
 * descriptor is read as a data segment (Length standing for Reserved), as
 * cLAN programs did. sizeof(VIP_DESCRIPTOR) is 64 in both spellings (cLAN's
 * own struct had one data segment, 48 bytes). */
#if defined(__cplusplus) ||                                                    \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#define NICEMU_VIPL_DESCRIPTOR_ALIASES 1
#define NICEMU_VIPL_EXTENSION_
#elif defined(__GNUC__)
#define NICEMU_VIPL_DESCRIPTOR_ALIASES 1
#define NICEMU_VIPL_EXTENSION_ __extension__
#else
#define NICEMU_VIPL_DESCRIPTOR_ALIASES 0
#define NICEMU_VIPL_EXTENSION_
#endif

NICEMU_VIPL_EXTENSION_ typedef struct _VIP_DESCRIPTOR {
#if NICEMU_VIPL_DESCRIPTOR_ALIASES
  union {
    VIP_CONTROL_SEGMENT CS;
    VIP_CONTROL_SEGMENT Control;
  };
  union {
    VIP_DESCRIPTOR_SEGMENT DS[2];
    VIP_DATA_SEGMENT Data[2];
  };
#else
  VIP_CONTROL_SEGMENT CS;
  VIP_DESCRIPTOR_SEGMENT DS[2];
#endif
} VIP_DESCRIPTOR;

/* Control segment, Control field: the operation, and flags. */
#define VIP_CONTROL_OP_SENDRECV 0x0000
#define VIP_CONTROL_OP_RDMAWRITE 0x0001
#define VIP_CONTROL_OP_RDMAREAD 0x0002
#define VIP_CONTROL_OP_RESERVED 0x0003
#define VIP_CONTROL_OP_MASK 0x0003
#define VIP_CONTROL_IMMEDIATE 0x0004 /* carry ImmediateData */
#define VIP_CONTROL_QFENCE 0x0008    /* wait for earlier RDMA reads */
#define VIP_CONTROL_RESERVED 0xFFF0

/* Control segment, Status field: DONE, then error bits (any error bit
 * means the operation failed), the operation that completed, and whether
 * immediate data arrived. */
#define VIP_STATUS_DONE 0x00000001
#define VIP_STATUS_FORMAT_ERROR 0x00000002     /* malformed descriptor */
#define VIP_STATUS_PROTECTION_ERROR 0x00000004 /* handle, tag or bounds */
#define VIP_STATUS_LENGTH_ERROR 0x00000008     /* lengths disagree or too big */
#define VIP_STATUS_PARTIAL_ERROR 0x00000010    /* only part arrived */
#define VIP_STATUS_DESC_FLUSHED_ERROR 0x00000020 /* flushed, not executed */
#define VIP_STATUS_TRANSPORT_ERROR 0x00000040
#define VIP_STATUS_RDMA_PROT_ERROR 0x00000080   /* remote RDMA protection */
#define VIP_STATUS_REMOTE_DESC_ERROR 0x00000100 /* remote receive failed */
#define VIP_STATUS_ERROR_MASK 0x000001FE

#define VIP_STATUS_OP_SEND 0x00000000
#define VIP_STATUS_OP_RECEIVE 0x00010000
#define VIP_STATUS_OP_RDMA_WRITE 0x00020000
/* OP_REMOTE_RDMA_WRITE: a receive consumed by an incoming RDMA write with
 * immediate data. */
#define VIP_STATUS_OP_REMOTE_RDMA_WRITE 0x00030000
#define VIP_STATUS_OP_RDMA_READ 0x00040000
#define VIP_STATUS_OP_MASK 0x00070000
#define VIP_STATUS_IMMEDIATE 0x00080000
#define VIP_STATUS_RESERVED 0xFFF0FE00

/* ---- VIs ---- */
typedef enum {
  VIP_STATE_IDLE = 0,
  VIP_STATE_CONNECTED = 1,
  VIP_STATE_CONNECT_PENDING = 2,
  VIP_STATE_ERROR = 3
} VIP_VI_STATE;

/* Chosen at creation; both ends of a connection must agree. */
typedef struct _VIP_VI_ATTRIBUTES {
  VIP_RELIABILITY_LEVEL ReliabilityLevel;
  VIP_ULONG MaxTransferSize; /* data bytes of one descriptor on this VI */
  VIP_QOS QoS;
  VIP_PROTECTION_HANDLE Ptag;  /* the VI may touch memory of this tag */
  VIP_BOOLEAN EnableRdmaWrite; /* accept incoming RDMA writes */
  VIP_BOOLEAN EnableRdmaRead;  /* accept incoming RDMA reads */
} VIP_VI_ATTRIBUTES;

/* ---- Registered memory ---- */
typedef struct _VIP_MEM_ATTRIBUTES {
  VIP_PROTECTION_HANDLE Ptag;
  VIP_BOOLEAN EnableRdmaWrite; /* remote VIs may write the region */
  VIP_BOOLEAN EnableRdmaRead;  /* remote VIs may read the region */
} VIP_MEM_ATTRIBUTES;

/* ---- Asynchronous errors (VipErrorCallback) ----
 * Errors that no call can return: what they hit and what happened. */
typedef enum _VIP_RESOURCE_CODE {
  VIP_RESOURCE_NIC = 0,
  VIP_RESOURCE_VI = 1,
  VIP_RESOURCE_CQ = 2,
  VIP_RESOURCE_DESCRIPTOR = 3
} VIP_RESOURCE_CODE;

typedef enum _VIP_ERROR_CODE {
  VIP_ERROR_POST_DESC = 0, /* a posted descriptor could not be used */
  VIP_ERROR_CONN_LOST = 1,
  VIP_ERROR_RECVQ_EMPTY = 2, /* data came, no receive was posted */
  VIP_ERROR_VI_OVERRUN = 3,
  VIP_ERROR_RDMAW_PROT = 4,
  VIP_ERROR_RDMAW_DATA = 5,
  VIP_ERROR_RDMAW_ABORT = 6,
  VIP_ERROR_RDMAR_PROT = 7,
  VIP_ERROR_COMP_PROT = 8, /* completion queue protection */
  VIP_ERROR_RDMA_TRANSPORT = 9,
  VIP_ERROR_CATASTROPHIC = 10 /* the NIC is lost */
} VIP_ERROR_CODE;

typedef struct _VIP_ERROR_DESCRIPTOR {
  VIP_NIC_HANDLE NicHandle;
  VIP_VI_HANDLE ViHandle;        /* NULL when no VI is involved */
  VIP_CQ_HANDLE CQHandle;        /* NULL when no CQ is involved */
  VIP_DESCRIPTOR *DescriptorPtr; /* NULL when no descriptor is involved */
  VIP_ULONG OpCode;
  VIP_RESOURCE_CODE ResourceCode;
  VIP_ERROR_CODE ErrorCode;
} VIP_ERROR_DESCRIPTOR;

/* ---- System management (VipQuerySystemManagementInfo) ---- */
#define VIP_SMI_AUTODISCOVERY ((VIP_ULONG)1)
typedef struct {
  VIP_ULONG NumberOfHops;
  VIP_NET_ADDRESS **ADAddrArray; /* the addresses found */
  VIP_ULONG NumAdAddrs;
} VIP_AUTODISCOVERY_LIST;

/* ---- Callback types ----
 * The types of the handlers the notify and error calls take (the typedef
 * names are cLAN's; M-VIA spelled the same types inline). */
typedef void (*VIP_ERROR_HANDLER)(VIP_PVOID Context,
                                  VIP_ERROR_DESCRIPTOR *ErrorDesc);
typedef void (*VIP_VI_CALLBACK)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
                                VIP_VI_HANDLE ViHandle,
                                VIP_DESCRIPTOR *Descriptor);
typedef void (*VIP_CQ_CALLBACK)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
                                VIP_VI_HANDLE ViHandle, VIP_BOOLEAN RecvQueue);

/* ---- The NIC ----
 * Open a NIC by its device name, learn its attributes, close it (which
 * ends what the program still holds on it). */
VIP_RETURN VipOpenNic(const VIP_CHAR *DeviceName,
                      VIP_NIC_HANDLE *NicHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipCloseNic(VIP_NIC_HANDLE NicHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipQueryNic(VIP_NIC_HANDLE NicHandle,
                       VIP_NIC_ATTRIBUTES *NicAttribs) NICEMU_VIPL_NOEXCEPT;

/* ---- Protection tags ----
 * A VI reaches only memory registered with its own tag. */
VIP_RETURN VipCreatePtag(VIP_NIC_HANDLE NicHandle,
                         VIP_PROTECTION_HANDLE *Ptag) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipDestroyPtag(VIP_NIC_HANDLE NicHandle,
                          VIP_PROTECTION_HANDLE Ptag) NICEMU_VIPL_NOEXCEPT;

/* ---- Memory registration ----
 * Pins a region and names it by a memory handle; descriptors and every
 * buffer they point to must lie in registered memory. */
VIP_RETURN VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                          VIP_ULONG Length, VIP_MEM_ATTRIBUTES *MemAttribs,
                          VIP_MEM_HANDLE *MemHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipDeregisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                            VIP_MEM_HANDLE MemHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                       VIP_MEM_HANDLE MemHandle,
                       VIP_MEM_ATTRIBUTES *MemAttribs) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN
VipSetMemAttributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                    VIP_MEM_HANDLE MemHandle,
                    VIP_MEM_ATTRIBUTES *MemAttribs) NICEMU_VIPL_NOEXCEPT;

/* ---- Errors and management ---- */
VIP_RETURN VipErrorCallback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context,
                            VIP_ERROR_HANDLER Handler) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN
VipQuerySystemManagementInfo(VIP_NIC_HANDLE NicHandle, VIP_ULONG InfoType,
                             VIP_PVOID SysManInfo) NICEMU_VIPL_NOEXCEPT;

/* ---- VIs ----
 * A VI is a send queue and a receive queue; each may report completions to
 * a completion queue (NULL: none). */
VIP_RETURN VipCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs,
                       VIP_CQ_HANDLE SendCQHandle, VIP_CQ_HANDLE RecvCQHandle,
                       VIP_VI_HANDLE *ViHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipDestroyVi(VIP_VI_HANDLE ViHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipQueryVi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State,
                      VIP_VI_ATTRIBUTES *ViAttribs, VIP_BOOLEAN *ViSendQEmpty,
                      VIP_BOOLEAN *ViRecvQEmpty) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN
VipSetViAttributes(VIP_VI_HANDLE ViHandle,
                   VIP_VI_ATTRIBUTES *ViAttribs) NICEMU_VIPL_NOEXCEPT;

/* ---- Data transfer ----
 * Post hands a descriptor (and the memory handle of the region it lies in)
 * to the NIC. Done takes the oldest completed descriptor off a queue, or
 * returns VIP_NOT_DONE; Wait blocks for it; Notify calls the handler once,
 * for the next completion, instead. Descriptors complete in posting order
 * on each queue. */
VIP_RETURN VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
                       VIP_MEM_HANDLE MemoryHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipSendDone(VIP_VI_HANDLE ViHandle,
                       VIP_DESCRIPTOR **DescriptorPtr) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout,
                       VIP_DESCRIPTOR **DescriptorPtr) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_VI_CALLBACK Handler) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
                       VIP_MEM_HANDLE MemoryHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipRecvDone(VIP_VI_HANDLE ViHandle,
                       VIP_DESCRIPTOR **DescriptorPtr) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout,
                       VIP_DESCRIPTOR **DescriptorPtr) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_VI_CALLBACK Handler) NICEMU_VIPL_NOEXCEPT;

/* ---- Client-server connections ----
 * The server waits for a request on its local address (host address and
 * discriminator), then accepts it onto one of its idle VIs or rejects it;
 * the client's request names both addresses and blocks until then. */
VIP_RETURN VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr,
                          VIP_ULONG Timeout, VIP_NET_ADDRESS *RemoteAddr,
                          VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          VIP_CONN_HANDLE *ConnHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipConnectAccept(VIP_CONN_HANDLE ConnHandle,
                            VIP_VI_HANDLE ViHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipConnectReject(VIP_CONN_HANDLE ConnHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN
VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
                  VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout,
                  VIP_VI_ATTRIBUTES *RemoteViAttribs) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipDisconnect(VIP_VI_HANDLE ViHandle) NICEMU_VIPL_NOEXCEPT;

/* ---- Peer-to-peer connections ----
 * Both ends start a request naming each other, without blocking; the
 * connection is made when the two requests meet. Done polls for that, Wait
 * blocks (up to the Timeout given with the request). */
VIP_RETURN VipConnectPeerRequest(VIP_VI_HANDLE ViHandle,
                                 VIP_NET_ADDRESS *LocalAddr,
                                 VIP_NET_ADDRESS *RemoteAddr,
                                 VIP_ULONG Timeout) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN
VipConnectPeerDone(VIP_VI_HANDLE ViHandle,
                   VIP_VI_ATTRIBUTES *RemoteViAttribs) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN
VipConnectPeerWait(VIP_VI_HANDLE ViHandle,
                   VIP_VI_ATTRIBUTES *RemoteViAttribs) NICEMU_VIPL_NOEXCEPT;

/* ---- Completion queues ----
 * A CQ tells which VI, and which of its queues, has a completed
 * descriptor; the program then takes the descriptor with VipSendDone or
 * VipRecvDone on that VI. */
VIP_RETURN VipCreateCQ(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount,
                       VIP_CQ_HANDLE *CQHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipDestroyCQ(VIP_CQ_HANDLE CQHandle) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipResizeCQ(VIP_CQ_HANDLE CQHandle,
                       VIP_ULONG EntryCount) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle,
                     VIP_BOOLEAN *RecvQueue) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipCQWait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout,
                     VIP_VI_HANDLE *ViHandle,
                     VIP_BOOLEAN *RecvQueue) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipCQNotify(VIP_CQ_HANDLE CQHandle, VIP_PVOID Context,
                       VIP_CQ_CALLBACK Handler) NICEMU_VIPL_NOEXCEPT;

/* ---- Name service ----
 * Host names to host addresses and back (in nicemu, the names of the
 * emulated nodes). NameIndex picks one of several addresses of a name;
 * NameLen is the size of Name on entry and the length used on return. */
VIP_RETURN VipNSInit(VIP_NIC_HANDLE NicHandle,
                     VIP_PVOID NSInitInfo) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name,
                              VIP_NET_ADDRESS *Address,
                              VIP_ULONG NameIndex) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle,
                              VIP_NET_ADDRESS *Address, VIP_CHAR *Name,
                              VIP_ULONG *NameLen) NICEMU_VIPL_NOEXCEPT;
VIP_RETURN VipNSShutdown(VIP_NIC_HANDLE NicHandle) NICEMU_VIPL_NOEXCEPT;

/* ==== nicemu extensions (not in VIPL) ====
 * Comet-VIA: one provider offers several kinds of VI, and the kind is
 * chosen when the VI is created. VipCreateVi makes a
 * VIP_VI_KIND_CONNECTED VI. A VIP_VI_KIND_FM_IP VI is not a connection
 * endpoint: it carries Comet-FM packets over IPv4/UDP to many nodes, and
 * the connection calls do not apply to it. */
typedef enum {
  VIP_VI_KIND_CONNECTED = 0, /* the standard VI */
  VIP_VI_KIND_FM_IP = 1      /* Comet-FM over IP */
} VIP_VI_KIND;

VIP_RETURN VipCreateViKind(VIP_NIC_HANDLE NicHandle,
                           VIP_VI_ATTRIBUTES *ViAttribs, VIP_VI_KIND Kind,
                           VIP_CQ_HANDLE SendCQ, VIP_CQ_HANDLE RecvCQ,
                           VIP_VI_HANDLE *ViHandle) NICEMU_VIPL_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NICEMU_VIPL_H */
