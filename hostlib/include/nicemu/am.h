/* nicemu: Berkeley Generic Active Messages (GAM 1.1, Myrinet LANai flavour)
 * over the NI-AM firmware (--firmware niam.img). Programs written for
 * Berkeley's Myrinet AM compile unchanged, as C89/gnu89 (K&R style too) or
 * C++, and link with nicemu::host. docs/gam.md lists what differs.
 *
 * Handlers run on the host, inside gam_poll, gam_wait and the calls that
 * block (gam_barrier, gam_store, gam_get, a request waiting for room).
 * Handler pointers travel as offsets in the program (or library) they
 * belong to, so ASLR does not break them; every rank runs the same
 * executable. Request and reply handlers are called as
 *     void handler(vnn_t src, int a0, int a1, int a2, int a3);
 * store, get and transfer handlers as
 *     void handler(vnn_t src, void *addr, int nbytes, void *arg);
 * Every call returns AM_OK, or AM_ERROR with the reason in gam_error(). */
#ifndef NICEMU_AM_H
#define NICEMU_AM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int vnn_t;           /* a virtual node number: the rank */
typedef void (*handler_t)(); /* any handler; C++ callers cast to it */

#define AM_OK 0
#define AM_ERROR (-1)

int gam_enable(void);  /* joins the cluster; call once, first */
int gam_disable(void); /* waits for this node's transfers, then leaves */
vnn_t gam_my_proc(void);
int gam_procs(void);
int gam_max_size(void); /* bytes of one store, get or transfer */

int gam_poll(void); /* runs the handlers of arrived messages */
int gam_wait(void); /* waits for a message, then polls */
int gam_barrier(void);

int gam_request_1(vnn_t dest, handler_t fun, int a0);
int gam_request_2(vnn_t dest, handler_t fun, int a0, int a1);
int gam_request_3(vnn_t dest, handler_t fun, int a0, int a1, int a2);
int gam_request_4(vnn_t dest, handler_t fun, int a0, int a1, int a2, int a3);
int gam_reply_1(vnn_t dest, handler_t fun, int a0);
int gam_reply_2(vnn_t dest, handler_t fun, int a0, int a1);
int gam_reply_3(vnn_t dest, handler_t fun, int a0, int a1, int a2);
int gam_reply_4(vnn_t dest, handler_t fun, int a0, int a1, int a2, int a3);

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
#define am_barrier gam_barrier
#define am_request_1 gam_request_1
#define am_request_2 gam_request_2
#define am_request_3 gam_request_3
#define am_request_4 gam_request_4
#define am_reply_1 gam_reply_1
#define am_reply_2 gam_reply_2
#define am_reply_3 gam_reply_3
#define am_reply_4 gam_reply_4
#define am_store gam_store
#define am_store_async gam_store_async
#define am_get gam_get
#define am_reply_xfer gam_reply_xfer
#endif

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_AM_H */
