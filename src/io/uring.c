/* io_uring through raw system calls (uring.h). Linux only; a kernel
 * without io_uring, or a process not allowed it (EPERM from
 * kernel.io_uring_disabled or a seccomp filter, ENOSYS), fails the probe
 * and files.c uses the blocking pool instead.
 *
 * Setup: no SQPOLL (a kernel thread per ring polling the queue would keep
 * a CPU busy for each worker; here the worker enters the kernel once per
 * call, which is what a plain pread costs anyway), no COOP_TASKRUN or
 * DEFER_TASKRUN (both post completions only when the submitting thread
 * enters the kernel, and a worker asleep in epoll_wait would not), no
 * SINGLE_ISSUER (weft__ring_cancel_fd submits from any thread). 256
 * submission entries and the kernel's default 512 completions; a request
 * takes at most two of each, so at most 256 are in flight per ring, and a
 * call that finds the ring full goes to the pool. */
#include <errno.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/testing.h"
#include "io/uring.h"
#include "sync/waiter.h"

#define RING_ENTRIES 256

weft__ring weft__ring_refused;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__ring *rings;
static int nrings;

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned submit, unsigned min, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, min, flags, NULL, 0);
}

static int sys_register(int fd, unsigned op, void *arg, unsigned n)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, n);
}

/* ------------------------------------------------------------ probe */

static _Atomic int fault_setup; /* tests: 0 off, else the errno setup fails with */
static _Atomic int probed = -1; /* -1 not yet; 0 works; else the errno */

void weft__fault_uring_setup(int err)
{
	atomic_store(&fault_setup, err);
	atomic_store(&probed, -1);
}

/* The features weft relies on: completions never dropped (5.5),
 * IORING_OP_READ/WRITE and linked timeouts (5.6, implied by FAST_POLL,
 * 5.7). */
#define NEEDED_FEATURES (IORING_FEAT_NODROP | IORING_FEAT_FAST_POLL)

static int setup(unsigned entries, struct io_uring_params *p)
{
	int err = atomic_load(&fault_setup);
	if (err) {
		errno = err;
		return -1;
	}
	memset(p, 0, sizeof(*p));
	p->flags = IORING_SETUP_CLAMP;
	int fd = sys_setup(entries, p);
	if (fd >= 0 && (p->features & NEEDED_FEATURES) != NEEDED_FEATURES) {
		close(fd);
		errno = ENOSYS; /* too old a kernel */
		return -1;
	}
	return fd;
}

bool weft__ring_probe(int *err)
{
	int was = atomic_load(&probed);
	if (was < 0) {
		struct io_uring_params p;
		int fd = setup(2, &p);
		was = fd >= 0 ? 0 : errno;
		if (fd >= 0)
			close(fd);
		atomic_store(&probed, was);
	}
	if (err)
		*err = was;
	return was == 0;
}

/* ------------------------------------------------------------ ring */

static void unmap(weft__ring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != MAP_FAILED && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_len);
	if (r->efd >= 0)
		close(r->efd);
	if (r->fd >= 0)
		close(r->fd);
}

static weft__ring *ring_new(weft__fworker *w)
{
	weft__ring *r = weft__alloc(sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->w = w;
	r->efd = -1;
	struct io_uring_params p;
	r->fd = setup(RING_ENTRIES, &p);
	if (r->fd < 0)
		goto fail;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	bool single = p.features & IORING_FEAT_SINGLE_MMAP;
	if (single && r->cq_len > r->sq_len)
		r->sq_len = r->cq_len;
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
	                 IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED)
		goto fail;
	r->cq_map = single ? r->sq_map
	                   : mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
	                          MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	if (r->cq_map == MAP_FAILED)
		goto fail;
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
	               IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		goto fail;
	char *sq = r->sq_map, *cq = r->cq_map;
	r->sq_head = (_Atomic unsigned *)(void *)(sq + p.sq_off.head);
	r->sq_ktail = (_Atomic unsigned *)(void *)(sq + p.sq_off.tail);
	r->sq_flags = (_Atomic unsigned *)(void *)(sq + p.sq_off.flags);
	r->sq_mask = *(unsigned *)(void *)(sq + p.sq_off.ring_mask);
	r->sq_entries = p.sq_entries;
	r->sq_array = (unsigned *)(void *)(sq + p.sq_off.array);
	atomic_store_explicit(&r->sq_tail, atomic_load(r->sq_ktail), memory_order_relaxed);
	r->cq_head = (_Atomic unsigned *)(void *)(cq + p.cq_off.head);
	r->cq_tail = (_Atomic unsigned *)(void *)(cq + p.cq_off.tail);
	r->cq_mask = *(unsigned *)(void *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
	/* Entries leave the submission queue at once (every call enters the
	 * kernel): completions are what bound the requests in flight. */
	r->max_inflight = p.cq_entries / 2;
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->efd < 0 || sys_register(r->fd, IORING_REGISTER_EVENTFD, &r->efd, 1) != 0)
		goto fail;
	pthread_mutex_lock(&registry_lock);
	r->next = rings;
	rings = r;
	nrings++;
	pthread_mutex_unlock(&registry_lock);
	return r;
fail:
	unmap(r);
	weft__free(r, sizeof(*r));
	return NULL;
}

weft__ring *weft__ring_of(weft__fworker *w)
{
	weft__ring *r = w->ring;
	if (r)
		return r == &weft__ring_refused ? NULL : r;
	r = ring_new(w);
	w->ring = r ? r : &weft__ring_refused;
	return r;
}

void weft__ring_destroy(weft__fworker *w)
{
	weft__ring *r = w->ring;
	w->ring = NULL;
	if (!r || r == &weft__ring_refused)
		return;
	pthread_mutex_lock(&registry_lock);
	for (weft__ring **q = &rings; *q; q = &(*q)->next)
		if (*q == r) {
			*q = r->next;
			nrings--;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	unmap(r);
	weft__free(r, sizeof(*r));
}

void weft__ring_stats(const weft_rt *rt, int *count, uint64_t *requests, uint64_t *parked)
{
	*count = 0;
	*requests = *parked = 0;
	pthread_mutex_lock(&registry_lock);
	for (weft__ring *r = rings; r; r = r->next) {
		if (r->w->rt != rt)
			continue;
		++*count;
		*requests += atomic_load_explicit(&r->requests, memory_order_relaxed);
		*parked += atomic_load_explicit(&r->parked, memory_order_relaxed);
	}
	pthread_mutex_unlock(&registry_lock);
}

int weft__ring_count(void)
{
	pthread_mutex_lock(&registry_lock);
	int n = nrings;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

/* ------------------------------------------------------------ submit */

/* A request in flight, on the calling fiber's stack. refs: one for the
 * fiber, one for the completions; whoever drops the last one decides
 * (the reaper unparks, or the fiber does not park). */
typedef struct ring_req {
	weft__waiter waiter;
	int res, tres; /* the operation's and the linked timeout's results */
	int cqes;      /* completions to come (the owner's thread only) */
	_Atomic int refs;
	struct __kernel_timespec ts;
} ring_req;

/* A submission entry, zeroed; the lock is held. NULL when the queue is
 * full (submissions the kernel refused earlier are still in it). */
static struct io_uring_sqe *sqe_get(weft__ring *r)
{
	unsigned head = atomic_load_explicit(r->sq_head, memory_order_acquire);
	unsigned tail = atomic_load_explicit(&r->sq_tail, memory_order_relaxed);
	if (tail - head >= r->sq_entries)
		return NULL;
	unsigned i = tail & r->sq_mask;
	struct io_uring_sqe *s = &r->sqes[i];
	memset(s, 0, sizeof(*s));
	r->sq_array[i] = i;
	atomic_store_explicit(&r->sq_tail, tail + 1, memory_order_relaxed);
	return s;
}

/* Publishes the new entries and enters the kernel (lock held). On a
 * refusal (EAGAIN, EBUSY: out of memory for requests, or completions
 * backed up) the entries stay queued and the next reap submits them. */
static void submit(weft__ring *r)
{
	unsigned tail = atomic_load_explicit(&r->sq_tail, memory_order_relaxed);
	atomic_store_explicit(r->sq_ktail, tail, memory_order_release);
	for (;;) {
		unsigned n = tail - atomic_load_explicit(r->sq_head, memory_order_acquire);
		if (n == 0 || sys_enter(r->fd, n, 0, 0) >= 0 || errno != EINTR)
			return;
	}
}

static void prep(struct io_uring_sqe *s, uint8_t opcode, int fd, uint64_t addr, uint32_t len,
                 uint64_t off, uint64_t user_data)
{
	s->opcode = opcode;
	s->fd = fd;
	s->addr = addr;
	s->len = len;
	s->off = off;
	s->user_data = user_data;
}

int64_t weft__ring_rw(weft__ring *r, weft__ring_op op, int fd, void *buf, size_t len, off_t off,
                      int64_t deadline, int *err)
{
	weft__fworker *w = r->w;
	if (r->inflight >= r->max_inflight)
		return WEFT__RING_FULL;
	/* Not preempted until it parks: a preempted fiber could resume on
	 * another worker (mn), and the arming below is the owner's to do. */
	weft__tls.nopreempt++;
	ring_req q;
	weft__waiter_init(&q.waiter, NULL);
	q.res = q.tres = 0;
	bool timed = deadline != INT64_MAX;
	q.cqes = timed ? 2 : 1;
	atomic_store_explicit(&q.refs, 2, memory_order_relaxed);
	if (timed) {
		q.ts.tv_sec = deadline / 1000000000;
		q.ts.tv_nsec = deadline % 1000000000;
	}
	if (len > UINT32_MAX)
		len = UINT32_MAX & ~(size_t)4095; /* a short transfer, as read(2) may do */
	weft__lock_acquire(&r->lock);
	struct io_uring_sqe *s = sqe_get(r), *t = s && timed ? sqe_get(r) : NULL;
	if (!s || (timed && !t)) {
		if (s) /* not published yet: take it back */
			atomic_store_explicit(
			        &r->sq_tail,
			        atomic_load_explicit(&r->sq_tail, memory_order_relaxed) - 1,
			        memory_order_relaxed);
		weft__lock_release(&r->lock);
		weft__tls.nopreempt--;
		return WEFT__RING_FULL;
	}
	switch (op) {
	case WEFT__RING_READ:
	case WEFT__RING_WRITE:
		prep(s, op == WEFT__RING_READ ? IORING_OP_READ : IORING_OP_WRITE, fd,
		     (uintptr_t)buf, (uint32_t)len, (uint64_t)off, (uintptr_t)&q);
		break;
	case WEFT__RING_FSYNC:
		prep(s, IORING_OP_FSYNC, fd, 0, 0, 0, (uintptr_t)&q);
		s->fsync_flags = len ? IORING_FSYNC_DATASYNC : 0;
		break;
	case WEFT__RING_OPENAT:
		prep(s, IORING_OP_OPENAT, fd, (uintptr_t)buf, (uint32_t)len, 0, (uintptr_t)&q);
		s->open_flags = (uint32_t)off;
		break;
	}
	if (timed) {
		s->flags |= IOSQE_IO_LINK;
		prep(t, IORING_OP_LINK_TIMEOUT, -1, (uintptr_t)&q.ts, 1, 0, (uintptr_t)&q | 1);
		t->timeout_flags = IORING_TIMEOUT_ABS;
	}
	r->inflight++;
	atomic_store_explicit(&r->requests, r->requests + 1, memory_order_relaxed);
	submit(r);
	weft__lock_release(&r->lock);
	weft__ring_reap(r); /* the page cache answers inside the enter */
	if (q.cqes > 0 && !r->armed) {
		if (weft__poller_arm(&w->poller, r->efd, POLLIN, r) == 0) {
			r->armed = true;
			weft__fworker_fd_waits_add(w, 1);
		} else {
			/* Cannot happen for an eventfd; never sleep without a way
			 * to be woken: reap while yielding. */
			while (q.cqes > 0) {
				weft__fiber_yield();
				weft__ring_reap(r);
			}
		}
	}
	if (atomic_fetch_sub(&q.refs, 1) != 1) {
		atomic_store_explicit(&r->parked, r->parked + 1, memory_order_relaxed);
		weft__waiter_park_for(&q.waiter, WEFT__WAIT_FD);
	}
	weft__tls.nopreempt--;
	if (timed && q.tres == -ETIME && (q.res == -ECANCELED || q.res == -EINTR))
		return WEFT_ETIMEDOUT;
	if (q.res == -ECANCELED)
		return WEFT_ECANCELED;
	if (q.res < 0) {
		*err = -q.res;
		return WEFT_ESYSTEM;
	}
	return q.res;
}

/* ------------------------------------------------------------ reap */

void weft__ring_reap(weft__ring *r)
{
	for (;;) {
		unsigned head = atomic_load_explicit(r->cq_head, memory_order_relaxed);
		unsigned tail = atomic_load_explicit(r->cq_tail, memory_order_acquire);
		while (head != tail) {
			const struct io_uring_cqe *c = &r->cqes[head & r->cq_mask];
			uint64_t ud = c->user_data;
			int res = c->res;
			head++;
			if (!ud)
				continue; /* a cancel request's own completion */
			ring_req *q = (ring_req *)(uintptr_t)(ud & ~(uint64_t)1);
			if (ud & 1)
				q->tres = res;
			else
				q->res = res;
			if (--q->cqes > 0)
				continue;
			r->inflight--;
			/* Last touch of q unless this drops the last reference. */
			if (atomic_fetch_sub(&q->refs, 1) == 1)
				weft__waiter_unpark(&q->waiter);
		}
		atomic_store_explicit(r->cq_head, head, memory_order_release);
		unsigned flags = atomic_load_explicit(r->sq_flags, memory_order_relaxed);
		bool unsent = atomic_load_explicit(&r->sq_tail, memory_order_relaxed) !=
		              atomic_load_explicit(r->sq_head, memory_order_acquire);
		if (!(flags & IORING_SQ_CQ_OVERFLOW) && !unsent)
			break;
		/* Completions the kernel kept aside, or submissions it refused:
		 * enter again (flushes the one, submits the other). */
		weft__lock_acquire(&r->lock);
		unsigned n = atomic_load_explicit(&r->sq_tail, memory_order_relaxed) -
		             atomic_load_explicit(r->sq_head, memory_order_acquire);
		int rc = sys_enter(r->fd, n, 0, IORING_ENTER_GETEVENTS);
		weft__lock_release(&r->lock);
		if (rc < 0 && errno != EINTR)
			break;
		if (atomic_load_explicit(r->cq_tail, memory_order_acquire) == head)
			break;
	}
	if (r->inflight == 0 && r->armed) {
		weft__poller_disarm(&r->w->poller, r->efd);
		r->armed = false;
		weft__fworker_fd_waits_add(r->w, -1);
	}
}

void weft__ring_event(weft__ring *r)
{
	uint64_t drain;
	while (read(r->efd, &drain, sizeof(drain)) > 0)
		;
	/* The interest was one-shot: it is no longer armed. */
	if (r->armed) {
		r->armed = false;
		weft__fworker_fd_waits_add(r->w, -1);
	}
	weft__ring_reap(r);
	if (r->inflight > 0 && weft__poller_arm(&r->w->poller, r->efd, POLLIN, r) == 0) {
		r->armed = true;
		weft__fworker_fd_waits_add(r->w, 1);
	}
}

/* ------------------------------------------------------------ cancel */

int weft__ring_cancel_fd(int fd)
{
#ifndef IORING_ASYNC_CANCEL_FD /* kernel headers older than 5.19: no cancel by fd */
	(void)fd;
	return 0;
#else
	int n = 0;
	pthread_mutex_lock(&registry_lock);
	for (weft__ring *r = rings; r; r = r->next) {
		weft__lock_acquire(&r->lock);
		struct io_uring_sqe *s = sqe_get(r);
		if (s) {
			prep(s, IORING_OP_ASYNC_CANCEL, fd, 0, 0, 0, 0);
			s->cancel_flags = IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL;
			submit(r);
			n++;
		}
		weft__lock_release(&r->lock);
	}
	pthread_mutex_unlock(&registry_lock);
	return n;
#endif
}

/* ------------------------------------------------------------ fork */

void weft__ring_fork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
}

void weft__ring_fork_parent(void)
{
	pthread_mutex_unlock(&registry_lock);
}

void weft__ring_fork_child(void)
{
	/* The parent's rings are shared mappings of the parent's kernel
	 * rings: the child's copies of their runtimes are dead, and the child
	 * must not write to them. Unmapped and closed; a runtime made in the
	 * child makes rings of its own. The records stay (the dead runtimes'
	 * workers point at them). */
	for (weft__ring *r = rings; r; r = r->next) {
		unmap(r);
		r->fd = r->efd = -1;
		r->sq_map = r->cq_map = NULL;
		r->sqes = NULL;
	}
	rings = NULL;
	nrings = 0;
	pthread_mutex_unlock(&registry_lock);
}
