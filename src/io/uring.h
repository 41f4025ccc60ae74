/* io_uring for the fiber models' file calls: one ring per fiber worker,
 * made the first time a task on that worker reads or writes a file through
 * weft, used through raw system calls (docs/io.md says why not liburing).
 *
 * A call fills one submission (two with a deadline: the operation linked
 * to an IORING_OP_LINK_TIMEOUT at the absolute deadline), enters the
 * kernel once, and looks at the completion queue right away: a read the
 * page cache answers has completed inside that same system call, and the
 * fiber goes on without parking. Otherwise the fiber parks on a waiter in
 * the request (on its stack) and the worker reaps: between tasks (the
 * engine's pick) and when it sleeps, through the ring's eventfd armed in
 * its poller while requests are in flight. The reaper counts a request's
 * completions (one, or two when linked) and unparks its waiter after the
 * last, so a request that timed out or was cancelled is not returned from
 * while the kernel may still write its buffer. The waiter seam wakes the
 * fiber wherever it runs by then.
 *
 * Who touches what: the submission queue under ring->lock (fibers on the
 * owner worker submit, weft__ring_cancel_fd submits from any thread); the
 * completion queue, inflight and armed by the owner worker's thread only
 * (a fiber always submits on the worker it runs on, which is the ring's
 * owner, and the reaper is that worker's loop).
 *
 * The portable build (WEFT_PORTABLE) has uring_none.c instead: no ring is
 * ever made, so files go to the blocking pool (io/pool.h), as they do on a
 * kernel that refuses io_uring. */
#ifndef WEFT_SRC_IO_URING_H
#define WEFT_SRC_IO_URING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/lock.h"
#include "fiber/engine.h"

struct io_uring_sqe; /* <linux/io_uring.h>, which only uring.c includes */
struct io_uring_cqe;

typedef struct weft__ring {
	unsigned inflight; /* requests with completions still to come (owner) */
	bool armed;        /* efd armed in the owner's poller (owner) */
	int fd, efd;       /* the ring; the eventfd it signals per completion */
	weft__fworker *w;  /* the owner */
	weft__lock lock;   /* the submission queue */
	unsigned sq_entries, sq_mask, cq_mask, max_inflight;
	/* Entries filled (under lock; reap peeks at it without). */
	_Atomic unsigned sq_tail;
	_Atomic unsigned *sq_head, *sq_ktail, *sq_flags, *cq_head, *cq_tail;
	unsigned *sq_array;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
	struct weft__ring *next; /* the registry (cancel, fork) */
	/* Statistics (the owner writes, weft__ring_stats reads): requests
	 * submitted, and those the fiber parked for. */
	_Atomic uint64_t requests, parked;
} weft__ring;

/* A worker whose ring could not be made points here (inflight 0). */
extern weft__ring weft__ring_refused;

/* The operations a ring runs for files.c. */
typedef enum weft__ring_op {
	WEFT__RING_READ,
	WEFT__RING_WRITE,
	WEFT__RING_FSYNC,  /* len != 0: fdatasync */
	WEFT__RING_OPENAT, /* fd: dirfd, buf: the path, len: the mode, off: the flags */
} weft__ring_op;

/* Whether io_uring_setup works in this process (probed once, again after
 * weft__fault_uring_setup); on false *err is the errno it failed with. */
bool weft__ring_probe(int *err);

/* The calling fiber's worker's ring, made if need be; NULL when the worker
 * could not get one (its file calls then go to the pool). Fiber only. */
weft__ring *weft__ring_of(weft__fworker *w);

/* weft__ring_rw's answer when r has no room: use the pool. */
#define WEFT__RING_FULL INT64_MIN

/* Runs one operation through r on the calling fiber: the result (>= 0),
 * WEFT_ETIMEDOUT, WEFT_ECANCELED, or WEFT_ESYSTEM with the kernel's errno
 * in *err (offset off, len bytes at buf; deadline absolute, INT64_MAX
 * none). Returns after every completion for it arrived. */
int64_t weft__ring_rw(weft__ring *r, weft__ring_op op, int fd, void *buf, size_t len, off_t off,
                      int64_t deadline, int *err);

/* Requests of every ring on fd are cancelled (they return WEFT_ECANCELED,
 * unless they completed first). Any thread; returns how many rings were
 * asked. Needs Linux 5.19 (IORING_ASYNC_CANCEL_FD); older kernels ignore
 * it and the requests run to their end. */
int weft__ring_cancel_fd(int fd);

/* The engine's hooks (fiber/engine.c): reap between tasks, when the
 * ring's eventfd fired in the poller, and free the ring with its worker. */
void weft__ring_reap(weft__ring *r);
void weft__ring_event(weft__ring *r);
void weft__ring_destroy(weft__fworker *w);

/* Inline part of the pick hook: one load when nothing is in flight. */
static inline void weft__ring_poll(weft__ring *r)
{
	if (r && r->inflight)
		weft__ring_reap(r);
}

/* fork(2): the child unmaps and closes the parent's rings (its runtimes'
 * workers are not there); prepare and parent hold the registry's lock. */
void weft__ring_fork_prepare(void);
void weft__ring_fork_parent(void);
void weft__ring_fork_child(void);

/* How many rings exist now (statistics). */
int weft__ring_count(void);

/* rt's rings: how many, requests submitted, requests a fiber parked for. */
void weft__ring_stats(const weft_rt *rt, int *count, uint64_t *requests, uint64_t *parked);

#endif
