/* Timers for fiber models: a min-heap of deadlines linked through timer
 * records that live in whatever waits (a parked fiber), so arming a timer
 * never allocates. A pairing heap with a back link per node, so that a
 * timer can be removed before it fires (a wait_fd whose fd got ready
 * first) in O(log n) amortised. Equal deadlines fire in arming order.
 * Single-threaded: each worker owns its heap. */
#ifndef WEFT_SRC_IO_TIMERS_H
#define WEFT_SRC_IO_TIMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct weft__timer {
	int64_t deadline; /* CLOCK_MONOTONIC (or virtual) nanoseconds */
	uint64_t seq;
	struct weft__timer *child, *next;
	struct weft__timer *prev; /* left sibling, or parent for a first child; NULL at root */
	bool armed;
} weft__timer;

typedef struct weft__timers {
	weft__timer *root;
	size_t len;
	uint64_t next_seq;
} weft__timers;

void weft__timers_init(weft__timers *h);
void weft__timers_add(weft__timers *h, weft__timer *t, int64_t deadline);
/* Removes an armed timer; does nothing if it is not armed. */
void weft__timers_remove(weft__timers *h, weft__timer *t);
/* The earliest deadline, or INT64_MAX when there is no timer. */
int64_t weft__timers_next(const weft__timers *h);
/* Pops the earliest timer if its deadline is <= now, else NULL. */
weft__timer *weft__timers_pop_expired(weft__timers *h, int64_t now);

#endif
