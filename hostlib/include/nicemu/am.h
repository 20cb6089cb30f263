/* nicemu: Berkeley Generic Active Messages (GAM, the Myrinet LANai flavour
 * of 1995-97) over the NI-AM firmware (--firmware niam.img). Programs
 * written for it compile unchanged, as K&R C, C89/gnu89, C99 or C++, and
 * link with nicemu (pkg-config nicemu, or nicemu::host). docs/gam.md lists
 * what differs; docs/compatibility.md how to bring an old program over.
 *
 * As in the original, requests and replies take up to four argument words
 * after the handler (gam_request_4 and gam_reply_4 are variadic; the _0 to
 * _3 forms are macros onto them), and a word may be an int or a pointer:
 * each travels in 64 bits, so pointers survive on a 64-bit host. Handlers
 * run on the host, inside gam_poll, gam_wait and the calls that block, and
 * are called as
 *     request/reply:   handler(vnn_t src, word a0, word a1, word a2, word a3)
 *     gam_request and
 *     gam_reply:       handler(vnn_t src, void *buf, int len, word a0, word a1)
 *     store, get:      handler(vnn_t src, void *addr, int nbytes, void *arg)
 * where a handler may declare any of its words as int or as a pointer.
 * Handler pointers travel as offsets in the program, so ASLR does not
 * break them; every rank runs the same executable. Every call returns AM_OK,
 * or AM_ERROR with the reason in gam_error(). */
#ifndef NICEMU_AM_H
#define NICEMU_AM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int vnn_t;           /* a virtual node number: the rank */
typedef void (*handler_t)(); /* any handler; C++ callers cast to it */

#define AM_OK 0
#define AM_ERROR (-1)

/* Joins the cluster; call once, first. Old programs pass an argument (0:
 * no GLUnix), which is ignored. */
#ifdef __cplusplus
int gam_enable(...);
#else
int gam_enable();
#endif
int gam_disable(void); /* waits for this node's transfers, then leaves */
vnn_t gam_my_proc(void);
int gam_procs(void);
int gam_max_size(void); /* bytes of one store, get, transfer or gam_request */

int gam_poll(void); /* runs the handlers of arrived messages */
/* Polls until *flag >= value, then subtracts value from *flag (a handler
 * counts into the flag). With a null flag: waits for one message and runs
 * it (nicemu's earlier gam_wait(void)). */
int gam_wait(volatile int *flag, int value);
/* The same, but looks at the flag before the first poll. */
int gam_poll_wait(volatile int *flag, int value);
/* Waits until a message arrives, then runs it. */
int gam_sleep(void);
int gam_barrier(void);

/* Short messages: up to four words after the handler. */
int gam_request_4(vnn_t dest, handler_t fun, ...);
int gam_reply_4(vnn_t dest, handler_t fun, ...);
#define gam_request_0(dest, fun) gam_request_4(dest, fun)
#define gam_request_1(dest, fun, a0) gam_request_4(dest, fun, a0)
#define gam_request_2(dest, fun, a0, a1) gam_request_4(dest, fun, a0, a1)
#define gam_request_3(dest, fun, a0, a1, a2)                                   \
  gam_request_4(dest, fun, a0, a1, a2)
#define gam_reply_0(dest, fun) gam_reply_4(dest, fun)
#define gam_reply_1(dest, fun, a0) gam_reply_4(dest, fun, a0)
#define gam_reply_2(dest, fun, a0, a1) gam_reply_4(dest, fun, a0, a1)
#define gam_reply_3(dest, fun, a0, a1, a2) gam_reply_4(dest, fun, a0, a1, a2)
/* The Split-C spellings. */
#define gam_request0 gam_request_0
#define gam_request1 gam_request_1
#define gam_request2 gam_request_2
#define gam_request3 gam_request_3
#define gam_request4 gam_request_4
#define gam_reply0 gam_reply_0
#define gam_reply1 gam_reply_1
#define gam_reply2 gam_reply_2
#define gam_reply3 gam_reply_3
#define gam_reply4 gam_reply_4

/* Medium messages: nbytes (up to gam_max_size()) from lva and two words;
 * the destination's handler gets a buffer of the library's holding the
 * bytes, valid while it runs: handler(src, buf, nbytes, a0, a1). */
int gam_request(vnn_t dest, handler_t fun, void *lva, int nbytes, ...);
int gam_reply(vnn_t dest, handler_t fun, void *lva, int nbytes, ...);

/* Copies nbytes from lva here to rva on dest, then runs fun there. Returns
 * when lva may be reused. rva is an address in dest's process: the address
 * of a global of the program is translated (it may differ under ASLR); any
 * other address is used as given. */
int gam_store(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
              void *arg);
/* As gam_store; endfunc(dest, lva, nbytes, earg) runs here, at the next
 * poll, once lva may be reused. */
int gam_store_async(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
                    void *arg, handler_t endfunc, void *earg);
/* Copies nbytes from rva on dest to lva here, then runs fun here. */
int gam_get(vnn_t dest, void *rva, void *lva, int nbytes, handler_t fun,
            void *arg);
/* From a request handler: stores back to the requester, like gam_store. */
int gam_reply_xfer(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
                   void *arg);

const char *gam_error(void); /* why the last call returned AM_ERROR */

/* The am_* names GAM programs were written with. */
#ifndef NICEMU_GAM_NO_AM_NAMES
#define am_enable gam_enable
#define am_disable gam_disable
#define am_my_proc gam_my_proc
#define am_procs gam_procs
#define am_max_size gam_max_size
#define am_poll gam_poll
#define am_wait gam_wait
#define am_poll_wait gam_poll_wait
#define am_sleep gam_sleep
#define am_barrier gam_barrier
#define am_request_0 gam_request_0
#define am_request_1 gam_request_1
#define am_request_2 gam_request_2
#define am_request_3 gam_request_3
#define am_request_4 gam_request_4
#define am_reply_0 gam_reply_0
#define am_reply_1 gam_reply_1
#define am_reply_2 gam_reply_2
#define am_reply_3 gam_reply_3
#define am_reply_4 gam_reply_4
#define am_request gam_request
#define am_reply gam_reply
#define am_store gam_store
#define am_store_async gam_store_async
#define am_get gam_get
#define am_reply_xfer gam_reply_xfer
#endif

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_AM_H */
