/* io/uring.h where there is no io_uring (the portable build): no ring is
 * ever made, so every file call of a fiber that would wait goes to the
 * blocking pool (io/pool.h), exactly as on a Linux kernel or seccomp
 * filter that refuses io_uring_setup. WEFT_IO=uring says so at runtime
 * creation (files.c), as it does there. */
#include <errno.h>

#include "core/testing.h"
#include "io/uring.h"

weft__ring weft__ring_refused;

void weft__fault_uring_setup(int err)
{
	(void)err; /* refused already, whatever the test asks */
}

bool weft__ring_probe(int *err)
{
	if (err)
		*err = ENOSYS;
	return false;
}

weft__ring *weft__ring_of(weft__fworker *w)
{
	(void)w;
	return NULL;
}

int64_t weft__ring_rw(weft__ring *r, weft__ring_op op, int fd, void *buf, size_t len, off_t off,
                      int64_t deadline, int *err)
{
	(void)r, (void)op, (void)fd, (void)buf, (void)len, (void)off, (void)deadline, (void)err;
	return WEFT__RING_FULL; /* not reached: weft__ring_of gave no ring */
}

int weft__ring_cancel_fd(int fd)
{
	(void)fd;
	return 0;
}

void weft__ring_reap(weft__ring *r)
{
	(void)r;
}

void weft__ring_event(weft__ring *r)
{
	(void)r;
}

void weft__ring_destroy(weft__fworker *w)
{
	w->ring = NULL;
}

void weft__ring_fork_prepare(void)
{
}

void weft__ring_fork_parent(void)
{
}

void weft__ring_fork_child(void)
{
}

int weft__ring_count(void)
{
	return 0;
}

void weft__ring_stats(const weft_rt *rt, int *count, uint64_t *requests, uint64_t *parked)
{
	(void)rt;
	*count = 0;
	*requests = *parked = 0;
}
