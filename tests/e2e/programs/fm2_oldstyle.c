/* An FM 2.x program as they were written for HPVM/FM 2.x: ANSI C that
 * includes "fm.h" (the include path picks FM 2.x's), registers stream
 * handlers with FM_register_handler(FM_ANY_ID, ...), sends with
 * FM_begin_message/FM_send_piece/FM_end_message, receives in pieces with
 * FM_receive, and extracts with FM_extract(maxbytes); handlers return
 * FM_CONTINUE, or FM_QUIT to end the extraction. Run on 2 or more nodes
 * (comet, via.img): node 0 serves every other node in turn. Each prints
 * "node N: ok, M messages" (M messages handled: 10 pongs per other node on
 * node 0, 10 pings, 7 data messages and a stop on the others) or what
 * failed. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fm.h"

static ULONG ping_id, data_id, stop_id;
static volatile int pings, pongs, data_messages, stops;
static unsigned int peer; /* the node node 0 serves now */
static int failures;

static void check(const char *what, int ok) {
  if (!ok) {
    printf("node %u: FAILED %s\n", FM_nodeid, what);
    failures++;
  }
}

/* A ping carries a counter; the other nodes send it back to node 0. */
int ping_handler(FM_stream *s, unsigned int sender) {
  int value = 0;
  FM_receive(&value, s, sizeof value);
  if (FM_nodeid != 0) {
    FM_stream *out = FM_begin_message(sender, sizeof value, ping_id);
    FM_send_piece(out, &value, sizeof value);
    FM_end_message(out);
    pings++;
  } else {
    check("the pong's sender", sender == peer);
    check("the pong's value", value == pongs % 10);
    pongs++;
  }
  return FM_CONTINUE;
}

/* 100 bytes, read in two pieces. */
int data_handler(FM_stream *s, unsigned int sender) {
  char buf[100];
  int i, ok = 1;
  ULONG got = FM_receive(buf, s, 30);
  got += FM_receive(buf + 30, s, 70);
  for (i = 0; i < 100; i++)
    ok = ok && buf[i] == (char)(i + data_messages);
  check("the data message's bytes", got == 100 && ok);
  data_messages++;
  (void)sender;
  return FM_CONTINUE;
}

int stop_handler(FM_stream *s, unsigned int sender) {
  (void)s;
  (void)sender;
  stops++;
  return FM_QUIT; /* ends the FM_extract that runs it */
}

static void send_data(unsigned int to, int k) {
  char buf[100];
  int i;
  FM_stream *s = FM_begin_message(to, sizeof buf, data_id);
  for (i = 0; i < 100; i++)
    buf[i] = (char)(i + k);
  FM_send_piece(s, buf, 40);
  FM_send_piece(s, buf + 40, 60);
  FM_end_message(s);
}

int main(void) {
  int i, round;
  ULONG got;

  FM_set_parameter(FM_QUIET);
  FM_initialize();
  ping_id = FM_register_handler(FM_ANY_ID, ping_handler);
  data_id = FM_register_handler(FM_ANY_ID, data_handler);
  stop_id = FM_register_handler(FM_ANY_ID, stop_handler);
  check("handler ids in order from 1",
        ping_id == 1 && data_id == 2 && stop_id == 3);

  if (FM_nodeid == 0) {
    for (peer = 1; peer < FM_numnodes; peer++) {
      for (round = 0; round < 10; round++) {
        FM_stream *s = FM_begin_message(peer, sizeof round, ping_id);
        FM_send_piece(s, &round, sizeof round);
        FM_end_message(s);
        while (pongs == (int)(peer - 1) * 10 + round)
          FM_extract(~0u);
      }
      /* Five data messages, a stop, then two more data messages. */
      for (i = 0; i < 5; i++)
        send_data(peer, i);
      {
        FM_stream *s = FM_begin_message(peer, 0, stop_id);
        FM_end_message(s);
      }
      for (i = 5; i < 7; i++)
        send_data(peer, i);
    }
  } else {
    while (data_messages == 0 && stops == 0)
      FM_extract(1); /* one message at a time: pings, then the first data */
    usleep(2000);    /* the rest arrive meanwhile */
    got = FM_extract(150); /* a soft bound: the message that crosses it */
    check("FM_extract(150) handles two 100-byte messages",
          data_messages == 3 && got == 200);
    got = FM_extract(~0u); /* up to the stop, which quits */
    check("FM_QUIT ends FM_extract", data_messages == 5 && stops == 1);
    got = FM_extract(~0u);
    check("the messages after the stop", data_messages == 7);
  }
  check("ten round trips with every other node",
        FM_nodeid != 0 || pongs == 10 * ((int)FM_numnodes - 1));
  check("ten pings", FM_nodeid == 0 || pings == 10);
  if (!failures)
    printf("node %u: ok, %d messages\n", FM_nodeid,
           FM_nodeid == 0 ? pongs : pings + data_messages + stops);
  fflush(stdout);
  FM_finalize();
  return failures != 0;
}
