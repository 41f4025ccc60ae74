/* The I/O layer's table of file descriptors: what weft knows of each fd
 * its I/O calls (weft/io.h) have used, and the waits on it.
 *
 * A slot per fd number, in chunks allocated on first use and kept for the
 * process's life (as Go's pollcache keeps its pollDescs): a slot is never
 * freed, so a waker that finds one can always lock it. A slot's life for
 * one open file is one value of its sequence number: weft_close, and
 * weft_accept or weft_connect starting a socket's life, move it on, and
 * every report the poller delivers carries the sequence it was watched
 * with (WEFT__POLL_KEY_FD), so a report for a closed fd whose number came
 * back is dropped, and a wait that began before the close ends with
 * WEFT_ECANCELED instead of waiting on the new file.
 *
 * Readiness is cached, edge-triggered: the poller of the worker that
 * first waited on the fd watches it once, and every report sets the bits
 * and moves a tick. A call tries the system call while the bit says ready,
 * and clears the bit when the call says EAGAIN or, on a stream, moves less
 * than asked (the buffer was emptied or filled: the next call would only
 * learn EAGAIN, as Tokio reasons) - but only if the tick has not moved
 * since it read the bits, so a report that came in between is kept. The
 * hang-up bits are never cleared (an fd at EOF stays readable).
 *
 * Fibers wait on the slot's list and are woken by the report (or a
 * cancel); kernel threads (threads and spawn workers, plain threads) wait
 * in ppoll(2) on the fd and on an eventfd of their own, and are on the
 * list only so that weft_fd_cancel can reach them.
 *
 * Edge-triggered readiness is the poller's to provide (io/poller.h): epoll
 * has it; the portable poll(2) backend emulates it, and needs to hear,
 * through weft__poller_expect, when a fiber waits for a bit it cleared. */
#ifndef WEFT_SRC_IO_FD_H
#define WEFT_SRC_IO_FD_H

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/lock.h"
#include "io/iowait.h"

/* Readiness bits (low byte of weft__fd.ready; the tick is above). */
enum {
	WEFT__RD = 1,       /* readable */
	WEFT__WR = 2,       /* writable */
	WEFT__RDCLOSED = 4, /* peer shut its side (RDHUP where reported, HUP): sticky */
	WEFT__ERRHUP = 8,   /* error or hang-up: sticky, every wait ends */
	WEFT__PRI = 16,     /* urgent data */
	WEFT__TICK = 256,
};

/* weft__fd.flags */
enum {
	WEFT__FD_KNOWN = 1,     /* O_NONBLOCK is set and the kind below is known */
	WEFT__FD_STREAM = 2,    /* a short transfer empties or fills the buffer */
	WEFT__FD_CANCELLED = 4, /* weft_fd_cancel: every wait fails until weft_close */
	WEFT__FD_NOPOLL = 8,    /* epoll refused it (a regular file): always ready */
	WEFT__FD_SOCKET = 16,   /* a socket: send with MSG_NOSIGNAL */
	WEFT__FD_FILE = 32,     /* a file call knows whether O_DIRECT is set (files.c) */
	WEFT__FD_DIRECT = 64,   /* ... and it is */
};

typedef struct weft__fd {
	weft__lock lock;
	_Atomic uint32_t seq;       /* the open file's life; moved on under lock */
	_Atomic uint32_t ready;     /* readiness bits | tick * WEFT__TICK */
	_Atomic uint32_t flags;     /* WEFT__FD_*, changed under lock */
	_Atomic uint32_t poller_id; /* the poller watching it (0: none), under lock */
	uint32_t pad_;
	weft__iowait *waiters; /* under lock: a doubly linked list (head: fd.c's prefetch) */
} weft__fd;

/* The slot of fd, allocated if need be; NULL for fd < 0, fd beyond the
 * table (16M) or no memory. */
weft__fd *weft__fd_get(int fd);
/* The slot of fd if it exists (never allocates). */
weft__fd *weft__fd_find(int fd);

/* Makes sure fd is non-blocking and its kind known (once per life):
 * 0, or WEFT_ESYSTEM with errno (EBADF). */
int weft__fd_prepare(weft__fd *s, int fd);
/* Adds flags to s if its life is still seq (what was learnt about a file
 * belongs to the life it was learnt in). */
void weft__fd_learn(weft__fd *s, uint32_t seq, uint32_t flags);
/* Starts a new life for fd's slot (a new socket from accept or connect):
 * waits on the old life end with WEFT_ECANCELED. flags: WEFT__FD_* known;
 * ready: the readiness to assume until the poller says (WEFT__RD | WEFT__WR:
 * try the calls first). Returns the new life's sequence number. */
uint32_t weft__fd_renew(weft__fd *s, uint32_t flags, uint32_t ready);

/* Clears bits of s->ready if its tick is still the one in seen. */
static inline void weft__fd_clear(weft__fd *s, uint32_t seen, uint32_t bits)
{
	uint32_t cur = atomic_load_explicit(&s->ready, memory_order_relaxed);
	while ((cur & ~(uint32_t)(WEFT__TICK - 1)) == (seen & ~(uint32_t)(WEFT__TICK - 1)) &&
	       (cur & bits)) {
		if (atomic_compare_exchange_weak_explicit(&s->ready, &cur, cur & ~bits,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed))
			return;
	}
}

/* The readiness bits that satisfy a wait for events. */
static inline uint32_t weft__fd_mask(short events)
{
	uint32_t m = WEFT__ERRHUP;
	if (events & POLLIN)
		m |= WEFT__RD | WEFT__RDCLOSED;
	if (events & POLLOUT)
		m |= WEFT__WR;
	if (events & POLLPRI)
		m |= WEFT__PRI;
	return m;
}

/* Waits until s (fd's slot in life seq) may be ready for events (one of
 * POLLIN, POLLOUT), deadline passes or the fd is cancelled: 0 (try the call
 * again), WEFT_ETIMEDOUT, WEFT_ECANCELED, or WEFT_ENOMEM / WEFT_ESYSTEM. On
 * a fiber it parks on the cached readiness; elsewhere it ppolls. */
int weft__fd_wait(weft__fd *s, int fd, uint32_t seq, short events, int64_t deadline);

#endif
