/* The records of a wait on file descriptors (io/fd.c), apart from fd.h so
 * that the fiber record can hold one (fiber/engine.h): a fiber's wait on
 * one fd uses the record in its fiber, whose lines the waker and the
 * resumed fiber touch anyway, not one on its stack, whose lines are cold
 * by the time a report comes (cachegrind, 500 echo connections on one
 * worker: io/fd.c's fiber_wait says what that saves). */
#ifndef WEFT_SRC_IO_IOWAIT_H
#define WEFT_SRC_IO_IOWAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct weft__fd;
struct weft__fiber;

/* What a set of wait records shares: one fiber or thread waits for the
 * first of them. fired: 0 until the first waker (or the waiter itself, on
 * its deadline) claims the wake-up; only the claimer wakes it, once. */
typedef struct weft__iogroup {
	_Atomic int fired;
	int efd; /* a kernel thread's wake-up fd, its write end (cancel only), else -1 */
	struct weft__fiber *fiber; /* the fiber that waits; NULL for a kernel thread */
} weft__iogroup;

typedef struct weft__iowait weft__iowait;

struct weft__iowait {
	weft__iowait *next, *prev; /* on the slot's list, under its lock */
	struct weft__fd *slot;
	weft__iogroup *group;
	int fd;
	uint32_t seq;  /* the slot's life the wait belongs to */
	short events;  /* POLLIN, POLLOUT, ... wanted */
	short revents; /* what ended it, set by the waker under the lock */
	short result;  /* 0, or WEFT_ECANCELED from a cancel or a close */
	bool queued;   /* on the list (under the lock) */
};

/* A fiber's own: its group, and the record of a wait on one fd. One line. */
typedef struct weft__fiber_io {
	weft__iogroup group;
	weft__iowait rec;
} weft__fiber_io;

_Static_assert(sizeof(weft__fiber_io) <= 64, "a fiber's wait record fits a cache line");

#endif
