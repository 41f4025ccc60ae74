/* What weft_chan_select (select.c) uses of the channel (chan.c): one
 * operation attempted under the channel's lock, and its queue. */
#ifndef WEFT_SRC_SYNC_CHAN_H
#define WEFT_SRC_SYNC_CHAN_H

#include <stdbool.h>

#include "sync/waiter.h"

#define WEFT__CHAN_WOULD_WAIT 1

/* With ch's lock held: moves one element if that needs no wait. Returns 0
 * (moved; *wake: a waiter to unpark once the lock is released, or left
 * unchanged), WEFT_ECLOSED, or WEFT__CHAN_WOULD_WAIT (nothing changed). */
int weft__chan_try_send(weft_chan *ch, const void *elem, weft__waiter **wake);
int weft__chan_try_recv(weft_chan *ch, void *out, weft__waiter **wake);

/* With ch's lock held: queues w as a sender or a receiver (the caller
 * tried first: nobody of the other kind waits), or takes it off again. */
void weft__chan_enqueue(weft_chan *ch, bool send, weft__waiter *w);
void weft__chan_dequeue(weft_chan *ch, weft__waiter *w);

/* Called by a channel holding its lock, on a select's case waiter w it
 * popped: true when w's select is now won by w (go on as with any
 * waiter), false when another case won it first (skip w). */
bool weft__select_claim(weft__waiter *w);

#endif
