/* Comet-FM: Fast Messages over IP on the comet card (nicemu host library).
 *
 * The Illinois Fast Messages 1.1 model as Comet-FM offered it: every node
 * has a node number; a sender names the destination node and the handler
 * that receives the message there; the receiver runs the handlers of the
 * messages that have arrived when it calls FM_extract(). Only the handler
 * may touch a received message, which is gone when the handler returns.
 * The FM 2.x streaming calls are here too; nicemu/fm2/fm.h declares the
 * library as FM 2.x programs expect it (FM_register_handler,
 * FM_extract(maxbytes), FM_CONTINUE/FM_QUIT).
 *
 * Underneath, the library drives an FM-over-IP VI of the via firmware
 * (run with --model comet --firmware via.img): each message is one UDP
 * datagram in IPv4 in an Ethernet frame, built by the card from its node
 * table. docs/fm.md has the details.
 *
 * Flow control is the program's: FM_send_nw uses one of the library's send
 * descriptors, and waits for the oldest to finish when all are in use.
 * Messages handed to the card are never dropped: a card with no free receive
 * buffer holds the next frame until FM_extract() frees one. While FM_send,
 * FM_send_nw and FM_wait (and FM_deregister, FM_begin_message, FM_finalize,
 * which wait for sends) wait, they run handlers too, so two nodes sending
 * to each other cannot block each other. A message to the sender's own node
 * never goes on the wire (a switch does not send a frame back where it came
 * from): the library delivers it itself, in order with the rest.
 *
 * Errors: calls return FM_SUCCESS (0) or a negative FM_E* code, and
 * FM_strerror() says what it means (with the details of the last error). */
#ifndef NICEMU_FM_H
#define NICEMU_FM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FM_SUCCESS 0
#define FM_ENOTINIT (-1)    /* FM_initialize has not run (or failed) */
#define FM_EBADNODE (-2)    /* no such node */
#define FM_EBADHANDLER (-3) /* handler id out of range or not set */
#define FM_ENOTREG (-4)     /* send buffer not registered with FM_register */
#define FM_ETOOBIG (-5)     /* longer than FM_MAX_MESSAGE */
#define FM_EINVAL (-6)      /* null pointer, bad length, bad stream */
#define FM_ENIC (-7)        /* the card refused or failed (see FM_strerror) */

/* The longest message: one Ethernet frame's UDP payload less the FM header. */
#define FM_MAX_MESSAGE 1440
/* Handler ids are 0 .. FM_MAX_HANDLERS - 1. */
#define FM_MAX_HANDLERS 256

/* This node's number and the number of nodes, set by FM_initialize. */
extern unsigned FM_nodeid;
extern unsigned FM_numnodes;

/* Opens the card, creates the FM VI and posts the receive buffers. */
int FM_initialize(void);
/* Waits for sends in progress, then closes everything. */
int FM_finalize(void);
unsigned FM_get_nodeid(void);
unsigned FM_get_numnodes(void);

/* ---- FM 1.1 ---- */
typedef void (*FM_handler)(void *buf, int size);
/* Sets the handler that runs for messages naming `id`. */
int FM_set_handler(int id, FM_handler handler);
/* The node that sent the message whose handler is running. */
unsigned FM_sender(void);

/* Registers `len` bytes at `buf` as a send buffer (pins it for the card);
 * FM_send and FM_send_nw take data from registered memory only. */
int FM_register(void *buf, size_t len);
int FM_deregister(void *buf);

/* Sends `len` bytes of `buf` (registered) to handler `handler` on node
 * `dest` (any node, this one too); returns when the card has sent it and
 * the buffer may be reused. */
int FM_send(unsigned dest, int handler, void *buf, int len);
/* The same without waiting: `buf` must stay untouched until FM_wait(). */
int FM_send_nw(unsigned dest, int handler, void *buf, int len);
/* Waits until every FM_send_nw has been sent. */
int FM_wait(void);
/* Runs the handler of every message that has arrived; returns how many
 * (or a negative error). */
int FM_extract(void);
/* Messages received whose handler id had no handler: dropped, counted. */
unsigned FM_dropped(void);

/* ---- FM 2.x streaming ---- */
typedef struct FM_stream FM_stream;
typedef int (*FM_stream_handler)(FM_stream *stream, unsigned sender);
int FM_set_stream_handler(int id, FM_stream_handler handler);
/* Starts a message of `length` bytes in all; pieces follow; returns NULL on
 * error (FM_strerror(FM_last_error()) says why; FM_EINVAL when every send
 * descriptor holds a message begun and not ended). The pieces are copied, so
 * they need not be registered. */
FM_stream *FM_begin_message(unsigned dest, unsigned length, int handler);
int FM_send_piece(FM_stream *stream, const void *buf, unsigned len);
int FM_end_message(FM_stream *stream);
/* Inside a stream handler: copies the next `len` bytes of the message;
 * returns how many were copied. */
unsigned FM_receive(void *buf, FM_stream *stream, unsigned len);

int FM_last_error(void);
const char *FM_strerror(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NICEMU_FM_H */
