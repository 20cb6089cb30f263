/* Comet-FM with the Illinois Fast Messages 2.x interface (nicemu host
 * library): the same library and card as nicemu/fm.h, declared as FM 2.x
 * programs expect it. FM 1.x and 2.x programs both `#include "fm.h"`, as
 * with the original distributions the include path picks the version:
 *     cc prog.c $(pkg-config --cflags --libs nicemu-fm2)
 * puts this directory first (or include <nicemu/fm2/fm.h>). docs/fm.md.
 *
 * FM 2.x in brief: a message is a stream. The sender opens it with
 * FM_begin_message, sends it in pieces with FM_send_piece and closes it
 * with FM_end_message; the receiver's handler, registered under an id with
 * FM_register_handler, runs inside FM_extract and takes the message in
 * pieces with FM_receive. A handler returns FM_CONTINUE, or FM_QUIT to end
 * the FM_extract that runs it. FM_extract(maxbytes) extracts until about
 * maxbytes of messages have been handled (a message runs whole, so it may
 * go a little over) or none is left.
 *
 * Errors: the void calls report a refusal on stderr (and in
 * FM_strerror(FM_last_error()) of nicemu/fm.h); FM_begin_message returns
 * NULL. */
#ifndef NICEMU_FM2_FM_H
#define NICEMU_FM2_FM_H

#ifdef __cplusplus
extern "C" {
#endif

/* 32 bits, as on the hosts FM 2.x ran on. */
typedef unsigned int ULONG;

typedef struct FM_stream FM_stream;
typedef int (*FM_handler)(FM_stream *stream, unsigned int sender);

#define FM_CONTINUE 0
#define FM_QUIT 1
/* FM_register_handler: the next free id. */
#define FM_ANY_ID 0xFFFFFFFFu
/* FM_set_parameter names (accepted; nicemu needs none of them). */
#define FM_QUIET 1
#define FM_MAX_HANDLERS_PARAM 2
#define FM_GRM_NAME 3
#define FM_GRM_PORT 4
#define FM_CM_PORT 5
#define FM_KEY_NAME 6

/* Largest message, as Comet-FM sends one message per datagram. */
#define FM_MAX_MSG_LENGTH 1440

extern ULONG FM_nodeid;   /* this process's node number */
extern ULONG FM_numnodes; /* nodes in the program */

/* The implementation's names (the calls below are macros onto them). */
void nicemu_fm2_set_parameter(int parameter, ...);
void nicemu_fm2_initialize(void);
void nicemu_fm2_finalize(void);
ULONG nicemu_fm2_register_handler(ULONG id, FM_handler handler);
FM_stream *nicemu_fm2_begin_message(ULONG recipient, ULONG length,
                                    ULONG handler);
void nicemu_fm2_send_piece(FM_stream *stream, void *buffer, ULONG length);
void nicemu_fm2_end_message(FM_stream *stream);
ULONG nicemu_fm2_receive(void *buffer, FM_stream *stream, ULONG length);
ULONG nicemu_fm2_extract(ULONG maxbytes);

#define FM_set_parameter nicemu_fm2_set_parameter
#define FM_initialize nicemu_fm2_initialize
#define FM_finalize nicemu_fm2_finalize
#define FM_register_handler nicemu_fm2_register_handler
#define FM_begin_message nicemu_fm2_begin_message
#define FM_send_piece nicemu_fm2_send_piece
#define FM_end_message nicemu_fm2_end_message
#define FM_receive nicemu_fm2_receive
#define FM_extract nicemu_fm2_extract

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_FM2_FM_H */
