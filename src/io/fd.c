/* The I/O layer's fd table and its waits (io/fd.h).
 *
 * Lost wake-ups. A report changes a slot's bits and takes its waiters
 * under the slot's lock; a fiber looks at the bits and queues itself under
 * the same lock, so either it sees the report or the report sees it. A fd
 * is watched (epoll_ctl ADD) under that lock too, before the fiber parks:
 * the kernel reports an fd that is ready when it is added, so data that
 * came between the call's EAGAIN and the watch is not missed.
 *
 * One wake-up per wait. Several records (weft_wait_fds) share a group,
 * and whoever first claims the group's fired flag - a report, a cancel,
 * the waiter itself when its deadline passes - is the only one to unpark
 * it: an unpark never lands on a later wait of the same fiber. The claimer
 * takes the record off the list under the lock and unparks after the
 * lock, touching nothing of the record after (it lives on the waiter's
 * stack and ends when the waiter returns).
 *
 * Kernel threads wait in ppoll(2) on the fds and on a wake-up descriptor
 * of their own (io/wakefd.h: an eventfd, or a pipe in the portable build;
 * created on first need, closed when the thread ends); a cancel writes it
 * under the slot's lock, and the thread takes the lock of every slot it
 * waited on before it returns, so the write is over before the thread can
 * end and its descriptor's number be reused. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/standin.h"
#include "fiber/engine.h"
#include "io/fd.h"
#include "io/wakefd.h"
#include <weft/blocking.h>
#include <weft/io.h>

#define CHUNK_BITS 10
#define CHUNK      (1 << CHUNK_BITS)
#define NCHUNKS    (1 << 14) /* fds up to 16M, beyond any RLIMIT_NOFILE Linux allows */

/* Allocated with calloc, never freed: a slot must outlive every waker
 * that may find it (and weft's counting allocator is per runtime). */
static weft__fd *_Atomic chunks[NCHUNKS];

weft__fd *weft__fd_find(int fd)
{
	if (fd < 0 || fd >= NCHUNKS * CHUNK)
		return NULL;
	weft__fd *c = atomic_load_explicit(&chunks[fd >> CHUNK_BITS], memory_order_acquire);
	return c ? &c[fd & (CHUNK - 1)] : NULL;
}

weft__fd *weft__fd_get(int fd)
{
	weft__fd *s = weft__fd_find(fd);
	if (s || fd < 0 || fd >= NCHUNKS * CHUNK)
		return s;
	weft__fd *c = calloc(CHUNK, sizeof(weft__fd));
	if (!c)
		return NULL;
	for (int i = 0; i < CHUNK; i++)
		atomic_store_explicit(&c[i].ready, WEFT__RD | WEFT__WR, memory_order_relaxed);
	weft__fd *none = NULL;
	if (!atomic_compare_exchange_strong_explicit(&chunks[fd >> CHUNK_BITS], &none, c,
	                                             memory_order_acq_rel, memory_order_acquire)) {
		free(c); /* another thread's chunk won */
		c = none;
	}
	return &c[fd & (CHUNK - 1)];
}

int weft__fd_prepare(weft__fd *s, int fd)
{
	/* What is learnt belongs to the life it was learnt in: a close
	 * meanwhile (weft_close from another thread) must not leave it to the
	 * next file with that number. */
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return WEFT_ESYSTEM;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
		return WEFT_ESYSTEM;
	/* A datagram (or record) socket's short read is one message, not an
	 * emptied buffer; anything that is not a socket is a byte stream. */
	int type = SOCK_STREAM;
	socklen_t len = sizeof(type);
	uint32_t add = WEFT__FD_KNOWN | WEFT__FD_SOCKET;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
		if (errno != ENOTSOCK)
			return WEFT_ESYSTEM;
		type = SOCK_STREAM;
		add = WEFT__FD_KNOWN;
	}
	add |= type == SOCK_STREAM ? WEFT__FD_STREAM : 0;
	weft__fd_learn(s, seq, add);
	return 0;
}

void weft__fd_learn(weft__fd *s, uint32_t seq, uint32_t flags)
{
	weft__lock_acquire(&s->lock);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) == seq)
		atomic_fetch_or_explicit(&s->flags, flags, memory_order_release);
	weft__lock_release(&s->lock);
}

/* Takes every record off s's list for a cancel or a close (lock held):
 * fibers go on *wake, threads are told through their eventfd now. */
static void take_all(weft__fd *s, weft__iowait **wake)
{
	for (weft__iowait *r = s->waiters, *next; r; r = next) {
		next = r->next;
		r->queued = false;
		r->result = WEFT_ECANCELED;
		int zero = 0;
		if (!atomic_compare_exchange_strong(&r->group->fired, &zero, 1))
			continue;
		if (r->group->efd >= 0) {
			weft__wakefd_signal(r->group->efd);
		} else {
			r->next = *wake;
			*wake = r;
		}
	}
	__atomic_store_n(&s->waiters, NULL, __ATOMIC_RELAXED); /* weft__io_prefetch */
}

static void wake_list(weft__iowait *r)
{
	while (r) {
		weft__iowait *next = r->next;
		weft__fiber_unpark(r->group->fiber); /* r may end now */
		r = next;
	}
}

uint32_t weft__fd_renew(weft__fd *s, uint32_t flags, uint32_t ready)
{
	weft__iowait *wake = NULL;
	weft__lock_acquire(&s->lock);
	take_all(s, &wake);
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed) + 1;
	atomic_store_explicit(&s->seq, seq, memory_order_relaxed);
	atomic_store_explicit(&s->ready, ready, memory_order_relaxed);
	atomic_store_explicit(&s->flags, flags, memory_order_release);
	atomic_store_explicit(&s->poller_id, 0, memory_order_relaxed);
	weft__lock_release(&s->lock);
	wake_list(wake);
	return seq;
}

static uint32_t bits_of(short revents)
{
	uint32_t b = 0;
	if (revents & POLLIN)
		b |= WEFT__RD;
	if (revents & POLLOUT)
		b |= WEFT__WR;
	if (revents & WEFT__POLLRDHUP)
		b |= WEFT__RDCLOSED;
	if (revents & (POLLERR | POLLHUP))
		b |= WEFT__ERRHUP | WEFT__RDCLOSED;
	if (revents & POLLPRI)
		b |= WEFT__PRI;
	return b;
}

static short events_of(uint32_t b, short wanted)
{
	short e = 0;
	if (b & (WEFT__RD | WEFT__RDCLOSED))
		e |= POLLIN;
	if (b & WEFT__WR)
		e |= POLLOUT;
	if (b & WEFT__PRI)
		e |= POLLPRI;
	if (b & WEFT__RDCLOSED)
		e |= WEFT__POLLRDHUP;
	e &= wanted;
	if (b & WEFT__ERRHUP)
		e |= POLLHUP;
	return e;
}

static void unlink_rec(weft__fd *s, weft__iowait *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		__atomic_store_n(&s->waiters, r->next, __ATOMIC_RELAXED);
	if (r->next)
		r->next->prev = r->prev;
	r->queued = false;
}

static void push_rec(weft__fd *s, weft__iowait *r)
{
	r->prev = NULL;
	r->next = s->waiters;
	if (s->waiters)
		s->waiters->prev = r;
	__atomic_store_n(&s->waiters, r, __ATOMIC_RELAXED);
	r->queued = true;
}

/* A report's handling walks from fd's slot to its first waiter's record,
 * a line of a parked fiber (io/iowait.h), cold among thousands, whose
 * address is known only once the slot's line is in: the poller starts
 * those loads reports ahead (the slot's line first, the record's a few
 * reports later), so that they overlap one another and the reports
 * before them instead of stalling each report in turn. The list head is
 * read outside the slot's lock, as a relaxed atomic (and written, under
 * it, as one): a stale record only wastes a prefetch, which cannot fault.
 * Nothing is loaded through it: its memory may be gone. */
void weft__io_prefetch_slot(int fd)
{
	const weft__fd *s = weft__fd_find(fd);
	if (s)
		__builtin_prefetch(s, 1, 3);
}

void weft__io_prefetch_waiter(int fd)
{
	const weft__fd *s = weft__fd_find(fd);
	const weft__iowait *r = s ? __atomic_load_n(&s->waiters, __ATOMIC_RELAXED) : NULL;
	if (r)
		__builtin_prefetch(r, 1, 3);
}

void weft__io_ready(weft__poller *p, int fd, uint32_t seq, short revents)
{
	weft__fd *s = weft__fd_find(fd);
	if (!s)
		return;
	uint32_t bits = bits_of(revents);
	weft__iowait *wake = NULL;
	weft__lock_acquire(&s->lock);
	if ((atomic_load_explicit(&s->seq, memory_order_relaxed) & 0x7fffffffu) != seq) {
		weft__lock_release(&s->lock); /* a report for an earlier life of fd */
		return;
	}
	uint32_t cur = atomic_load_explicit(&s->ready, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&s->ready, &cur, (cur | bits) + WEFT__TICK,
	                                              memory_order_release, memory_order_relaxed))
		;
	for (weft__iowait *r = s->waiters, *next; r; r = next) {
		next = r->next;
		if (r->group->efd >= 0 || !(weft__fd_mask(r->events) & bits))
			continue; /* a thread polls for itself; or not what it waits for */
		unlink_rec(s, r);
		r->revents = events_of(bits, r->events);
		int zero = 0;
		if (atomic_compare_exchange_strong(&r->group->fired, &zero, 1)) {
			r->next = wake;
			wake = r;
		}
	}
	/* Watched from another worker's poller now (its fiber moved): this
	 * one's watch goes, or it would report (and wake this worker) for
	 * every change of an fd nobody here waits for. Once per move. Under
	 * the lock: weft_close renews the slot under it before close(2), so
	 * fd is still the file reported (a number closed and reused since
	 * would lose its new watch). */
	if (atomic_load_explicit(&s->poller_id, memory_order_relaxed) != p->id)
		weft__poller_unwatch(p, fd);
	weft__lock_release(&s->lock);
	wake_list(wake);
}

/* ------------------------------------------------------------ waiting */

/* Makes p watch s (lock held) for a wait for events. level: have the
 * kernel report fd again if it is ready now (a weft_wait_fd, which cannot
 * trust the cached bits). 0, or WEFT__FD_NOPOLL when epoll refuses fd (it
 * is always ready), or a WEFT_E* code. */
static int watch(weft__fd *s, int fd, weft__poller *p, bool level, short events)
{
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
	if (atomic_load_explicit(&s->poller_id, memory_order_relaxed) == p->id) {
		int rc = level ? weft__poller_rewatch(p, fd, WEFT__POLL_KEY_FD(fd, seq)) : 0;
		if (rc == 0)
			weft__poller_expect(p, fd, events); /* what the fiber parks for */
		if (rc <= 0)
			return rc;
		/* Not in the set any more: closed with close(2) behind weft's
		 * back and the number reused. A new life for the slot. */
		seq++;
		atomic_store_explicit(&s->seq, seq, memory_order_relaxed);
		atomic_store_explicit(&s->ready, WEFT__RD | WEFT__WR, memory_order_relaxed);
		atomic_fetch_and_explicit(&s->flags, WEFT__FD_CANCELLED, memory_order_relaxed);
	}
	int rc = weft__poller_watch(p, fd, WEFT__POLL_KEY_FD(fd, seq));
	if (rc == WEFT_EINVAL && fcntl(fd, F_GETFD) >= 0) {
		atomic_fetch_or_explicit(&s->flags, WEFT__FD_NOPOLL, memory_order_relaxed);
		return WEFT__FD_NOPOLL;
	}
	if (rc == WEFT_EINVAL) {
		errno = EBADF;
		return WEFT_ESYSTEM;
	}
	if (rc == 0) {
		atomic_store_explicit(&s->poller_id, p->id, memory_order_relaxed);
		weft__poller_expect(p, fd, events);
	}
	return rc;
}

/* Takes the records of a finished wait off their lists. */
static void unqueue(weft__iowait *recs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		weft__fd *s = recs[i].slot;
		if (!s)
			continue;
		weft__lock_acquire(&s->lock);
		if (recs[i].queued)
			unlink_rec(s, &recs[i]);
		weft__lock_release(&s->lock);
	}
}

/* Claims the group's wake-up for the waiter itself: true when nobody else
 * will unpark it. */
static bool claim(weft__iogroup *g)
{
	int zero = 0;
	return atomic_compare_exchange_strong(&g->fired, &zero, 1);
}

/* Starts f's group for a new wait (io/iowait.h: it lives in f). */
static weft__iogroup *group_begin(weft__fiber *f)
{
	weft__iogroup *g = &f->io.group;
	atomic_store_explicit(&g->fired, 0, memory_order_relaxed);
	g->efd = -1;
	g->fiber = f;
	return g;
}

/* Queues r (slot, seq, events filled in) on its slot for a fiber of
 * poller p, under the slot's lock: 0 queued; 1 the fd may be ready now
 * (r->revents says what), so the caller does not park; or a WEFT_E* code.
 * cached: the cached bits may say ready (the I/O calls); otherwise the
 * kernel is asked (weft_wait_fd). */
static int arm(weft__iowait *r, weft__poller *p, bool cached)
{
	weft__fd *s = r->slot;
	int rc = 0;
	weft__lock_acquire(&s->lock);
	uint32_t fl = atomic_load_explicit(&s->flags, memory_order_relaxed);
	uint32_t rd = atomic_load_explicit(&s->ready, memory_order_relaxed);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != r->seq ||
	    (fl & WEFT__FD_CANCELLED)) {
		rc = WEFT_ECANCELED; /* cancelled, or closed by weft_close */
	} else if (fl & WEFT__FD_NOPOLL) {
		r->revents = (short)(r->events & (POLLIN | POLLOUT));
		rc = 1;
	} else if (cached && (rd & weft__fd_mask(r->events))) {
		r->revents = events_of(rd, r->events);
		rc = 1;
	} else {
		int w = watch(s, r->fd, p, !cached, r->events);
		if (w == WEFT__FD_NOPOLL) {
			r->revents = (short)(r->events & (POLLIN | POLLOUT));
			rc = 1;
		} else if (w < 0) {
			rc = w;
		} else {
			push_rec(s, r);
		}
	}
	weft__lock_release(&s->lock);
	return rc;
}

/* The fiber side of a wait on recs[0..n) (slots, seqs and events filled
 * in by the caller, seq in result): cached says the cached bits may end
 * the wait (the I/O calls); level waits (weft_wait_fd) ask the kernel.
 * Returns how many records have revents, 0 when the caller is to try
 * again, or a WEFT_E* code. Inlined into its two callers: a parked
 * fiber's frames lie on stack lines that are cold when it resumes (its
 * connection's turn comes a round of connections later), and one frame
 * less on this path is fewer of them (cachegrind, 500 echo connections,
 * with engine.c's switch_away inlined alike: 24 first-level misses and
 * 1,254 instructions an echo before, 20 and 1,158 after). */
static inline __attribute__((always_inline)) int fiber_wait(weft__iowait *recs, size_t n,
                                                            bool cached, int64_t deadline)
{
	weft__fiber *f = weft__fiber_current();
	weft__iogroup *g = group_begin(f);
	weft__poller *p = &f->home->poller;
	int rc = 0, now_ready = 0;
	for (size_t i = 0; i < n; i++) {
		recs[i].result = 0;
		recs[i].group = g;
		recs[i].revents = 0;
		recs[i].queued = false;
	}
	for (size_t i = 0; i < n && rc == 0 && now_ready == 0; i++) {
		int armed = arm(&recs[i], p, cached);
		if (armed > 0)
			now_ready++;
		else
			rc = armed;
	}
	bool timed_out = false, claimed = false;
	if (rc == 0 && now_ready == 0) {
		if (cached && weft__passed(deadline)) {
			timed_out = true;
		} else {
			/* The fd's report comes from this worker's poller, and
			 * fd_waits tells the worker to sleep in its poller, not on
			 * its futex word (and under a virtual clock not to jump the
			 * clock while real events may come). Once woken, the fiber
			 * may resume on another worker (mn moves woken fibers off a
			 * busy one; its next wait watches the fd from there, and
			 * this poller drops it at its next report: weft__io_ready),
			 * as after any weft wait: errno's value comes along, its
			 * address is the new thread's (docs/fibers.md). A deadline's
			 * timer is this worker's: that pins it for the wait. */
			weft__fworker *w = f->home;
			bool timed = deadline != INT64_MAX;
			if (timed)
				weft__fiber_pins_add(f, 1);
			weft__fworker_fd_waits_add(w, 1);
			if (!timed)
				weft__fiber_park(f, WEFT__WAIT_FD);
			else
				timed_out = !weft__fiber_park_until(f, WEFT__WAIT_FD, deadline);
			weft__fworker_fd_waits_add(w, -1);
			if (timed)
				weft__fiber_pins_add(f, -1);
		}
	}
	if (rc != 0 || now_ready > 0 || timed_out) {
		claimed = claim(g);
		if (!claimed) {
			/* A report or cancel claimed the wake-up first: receive it. */
			weft__fiber_park(f, WEFT__WAIT_FD);
			timed_out = false;
		}
	}
	/* A claimer took its record off the list before it claimed: a lone
	 * record woken by one needs no second look under the lock. */
	if (claimed || n > 1)
		unqueue(recs, n);
	if (rc != 0)
		return rc;
	int ready = 0;
	for (size_t i = 0; i < n; i++) {
		if (recs[i].result == WEFT_ECANCELED)
			return WEFT_ECANCELED;
		ready += recs[i].revents != 0;
	}
	if (ready == 0 && timed_out)
		return WEFT_ETIMEDOUT;
	return ready;
}

/* ---------------------------------------------------- kernel threads */

static pthread_key_t efd_key;
static pthread_once_t efd_once = PTHREAD_ONCE_INIT;
/* Only kernel threads wait here (a fiber parks), so the thread a fiber
 * runs on cannot change under this. */
static _Thread_local weft__wakefd my_wake = {-1, -1};

static void efd_close(void *p)
{
	weft__wakefd_close(p);
}

static void efd_key_init(void)
{
	if (pthread_key_create(&efd_key, efd_close) != 0)
		abort(); /* only with PTHREAD_KEYS_MAX keys taken */
}

/* The calling thread's wake-up descriptor, made on first use: NULL with
 * errno. */
static const weft__wakefd *thread_wakefd(void)
{
	if (my_wake.rd >= 0)
		return &my_wake;
	pthread_once(&efd_once, efd_key_init);
	weft__wakefd w;
	if (weft__wakefd_open(&w) != 0)
		return NULL;
	my_wake = w;
	if (pthread_setspecific(efd_key, &my_wake) != 0) {
		weft__wakefd_close(&my_wake);
		errno = ENOMEM;
		return NULL;
	}
	return &my_wake;
}

enum { THREAD_STACK_FDS = 16 };

/* The kernel thread side: ppoll on the fds and the thread's wake-up fd. */
static int thread_wait(weft__iowait *recs, struct pollfd *pfd, size_t n, int64_t deadline)
{
	weft__iogroup g = {.fiber = NULL};
	atomic_init(&g.fired, 0);
	const weft__wakefd *wake = thread_wakefd();
	if (!wake)
		return WEFT_ESYSTEM;
	g.efd = wake->wr;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		weft__iowait *r = &recs[i];
		weft__fd *s = r->slot;
		uint32_t seq = r->seq;
		r->result = 0;
		r->group = &g;
		r->queued = false;
		if (!s || rc != 0)
			continue;
		weft__lock_acquire(&s->lock);
		if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq ||
		    (atomic_load_explicit(&s->flags, memory_order_relaxed) & WEFT__FD_CANCELLED))
			rc = WEFT_ECANCELED;
		else
			push_rec(s, r);
		weft__lock_release(&s->lock);
	}
	pfd[n] = (struct pollfd){.fd = wake->rd, .events = POLLIN};
	int got = 0;
	/* A worker of threads or spawn that waits long gets a stand-in
	 * (core/standin.h): the sleep is cut in ticks for it. */
	weft__block b;
	int64_t now = weft__now_ns();
	weft__sleep_ticks ticks = weft__sleep_ticks_begin(&b, now);
	while (rc == 0) {
		int64_t d = weft__sleep_ticks_next(&ticks, &b, now, weft__ns_left(deadline, now));
		got = weft__poll_ns(pfd, (nfds_t)n + 1, d == INT64_MAX ? -1 : d);
		now = weft__now_ns();
		if (got > 0 || (got < 0 && errno != EINTR))
			break;
		if (got == 0 && now >= deadline)
			break; /* the deadline, not a tick */
	}
	weft__block_end(&b);
	if (rc == 0 && got < 0)
		rc = WEFT_ESYSTEM;
	bool told = !claim(&g);
	unqueue(recs, n); /* after this, no cancel writes g.efd */
	if (told)
		weft__wakefd_drain(wake->rd);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (recs[i].result == WEFT_ECANCELED)
			return WEFT_ECANCELED;
	}
	if (got == 0)
		return WEFT_ETIMEDOUT;
	int ready = 0;
	for (size_t i = 0; i < n; i++)
		ready += pfd[i].revents != 0;
	return ready;
}

/* Out of line: its record and poll set would widen weft__fd_wait's frame,
 * which a parked fiber's stack holds (fiber_wait says why that costs). */
__attribute__((noinline)) static int thread_wait_one(weft__fd *s, int fd, uint32_t seq,
                                                     short events, int64_t deadline)
{
	weft__iowait r = {.slot = s, .events = events, .seq = seq, .fd = fd};
	if (deadline <= weft__now_ns())
		return WEFT_ETIMEDOUT; /* the call just said EAGAIN */
	struct pollfd pfd[2] = {{.fd = fd, .events = events}};
	return thread_wait(&r, pfd, 1, deadline);
}

/* A fiber's wait on one fd uses the record in its fiber. Without a
 * deadline (the calls' common case) it is this, by hand: only f and its
 * worker live across the park, so the frame the parked fiber's stack
 * holds is three words. A report or a cancel that wakes it has taken the
 * record off the list. */
__attribute__((noinline)) static int fiber_wait_untimed(weft__fiber *f, weft__fd *s, int fd,
                                                        uint32_t seq, short events)
{
	weft__iowait *r = &f->io.rec;
	*r = (weft__iowait){
	        .slot = s, .group = group_begin(f), .fd = fd, .seq = seq, .events = events};
	int rc = arm(r, &f->home->poller, true);
	if (rc != 0)
		return rc < 0 ? rc : 0; /* may be ready: try the call */
	weft__fworker *w = f->home;
	weft__fworker_fd_waits_add(w, 1); /* fiber_wait says why */
	weft__fiber_park(f, WEFT__WAIT_FD);
	weft__fworker_fd_waits_add(w, -1);
	return r->result == WEFT_ECANCELED ? WEFT_ECANCELED : 0;
}

__attribute__((noinline)) static int fiber_wait_timed(weft__fiber *f, weft__fd *s, int fd,
                                                      uint32_t seq, short events, int64_t deadline)
{
	weft__iowait *r = &f->io.rec;
	*r = (weft__iowait){.slot = s, .fd = fd, .seq = seq, .events = events};
	int rc = fiber_wait(r, 1, true, deadline);
	return rc < 0 ? rc : 0;
}

int weft__fd_wait(weft__fd *s, int fd, uint32_t seq, short events, int64_t deadline)
{
	weft__fiber *f = weft__fiber_current();
	if (f && deadline == INT64_MAX)
		return fiber_wait_untimed(f, s, fd, seq, events);
	if (f)
		return fiber_wait_timed(f, s, fd, seq, events, deadline);
	int rc = thread_wait_one(s, fd, seq, events, deadline);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ public */

/* A poll(2) that returns at once, for a deadline already passed. */
static int poll_now(struct pollfd *fds, size_t nfds)
{
	int n;
	while ((n = poll(fds, (nfds_t)nfds, 0)) < 0 && WEFT__ERRNO == EINTR)
		;
	return n < 0 ? WEFT_ESYSTEM : n;
}

int weft_wait_fds(struct pollfd *fds, size_t nfds, int64_t deadline)
{
	if ((!fds && nfds) || nfds > 1024)
		return WEFT_EINVAL;
	for (size_t i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		if (fds[i].fd >= 0 && fds[i].events == 0)
			return WEFT_EINVAL;
	}
	if (deadline <= weft__now_ns()) {
		int n = poll_now(fds, nfds);
		return n == 0 ? WEFT_ETIMEDOUT : n;
	}
	weft__iowait stack_recs[THREAD_STACK_FDS];
	struct pollfd stack_pfd[THREAD_STACK_FDS + 1];
	weft__iowait *recs = stack_recs;
	struct pollfd *pfd = stack_pfd;
	if (nfds > THREAD_STACK_FDS) {
		recs = calloc(nfds, sizeof(*recs));
		pfd = calloc(nfds + 1, sizeof(*pfd));
		if (!recs || !pfd) {
			free(recs);
			free(pfd);
			return WEFT_ENOMEM;
		}
	}
	size_t m = 0;
	int rc = 0;
	for (size_t i = 0; i < nfds && rc == 0; i++) {
		if (fds[i].fd < 0)
			continue; /* ignored, as poll does */
		weft__fd *s = weft__fd_get(fds[i].fd);
		if (!s) {
			rc = fds[i].fd >= NCHUNKS * CHUNK ? WEFT_EINVAL : WEFT_ENOMEM;
			break;
		}
		recs[m] = (weft__iowait){.slot = s,
		                         .events = fds[i].events,
		                         .fd = fds[i].fd,
		                         .seq = atomic_load(&s->seq)};
		pfd[m] = (struct pollfd){.fd = fds[i].fd, .events = fds[i].events};
		m++;
	}
	if (rc == 0 && m == 0) {
		rc = deadline == INT64_MAX ? WEFT_EINVAL : 0; /* nothing to wait for */
		if (rc == 0)
			weft_sleep_ns(weft__ns_left(deadline, weft__now_ns()));
		rc = rc ? rc : WEFT_ETIMEDOUT;
	} else if (rc == 0) {
		rc = weft__tls.fiber ? fiber_wait(recs, m, false, deadline)
		                     : thread_wait(recs, pfd, m, deadline);
	}
	/* A fiber wakes at the first report; the others may still be on
	 * their way (another worker's poller, a later batch). poll(2) says
	 * every fd that is ready now, as poll would have. */
	bool polled = false;
	if (rc > 0 && weft__tls.fiber && m > 1)
		polled = poll_now(pfd, m) > 0;
	if (rc > 0) {
		rc = 0;
		for (size_t i = 0, j = 0; i < nfds; i++) {
			if (fds[i].fd < 0)
				continue;
			fds[i].revents =
			        weft__tls.fiber && !polled ? recs[j].revents : pfd[j].revents;
			rc += fds[i].revents != 0;
			j++;
		}
	}
	if (recs != stack_recs) {
		free(recs);
		free(pfd);
	}
	return rc;
}

int weft_wait_fd_until(int fd, short events, int64_t deadline)
{
	if (fd < 0 || events == 0)
		return WEFT_EINVAL;
	struct pollfd p = {.fd = fd, .events = events};
	int rc = weft_wait_fds(&p, 1, deadline);
	if (rc < 0)
		return rc;
	if (p.revents & POLLNVAL)
		return WEFT_EINVAL;
	return p.revents;
}

int weft_wait_fd(int fd, short events, int64_t timeout_ns)
{
	int64_t deadline = timeout_ns < 0 ? INT64_MAX : weft__sat_add(weft__now_ns(), timeout_ns);
	int rc = weft_wait_fd_until(fd, events, deadline);
	return rc == WEFT_ESYSTEM ? WEFT_EINVAL : rc;
}

int weft_fd_cancel(int fd)
{
	if (fd < 0)
		return WEFT_EINVAL;
	weft__fd *s = weft__fd_get(fd);
	if (!s)
		return fd >= NCHUNKS * CHUNK ? WEFT_EINVAL : WEFT_ENOMEM;
	weft__iowait *wake = NULL;
	weft__lock_acquire(&s->lock);
	atomic_fetch_or_explicit(&s->flags, WEFT__FD_CANCELLED, memory_order_relaxed);
	take_all(s, &wake);
	weft__lock_release(&s->lock);
	wake_list(wake);
	return 0;
}

int weft_close(int fd)
{
	if (fd < 0)
		return WEFT_EINVAL;
	weft__fd *s = weft__fd_find(fd);
	/* Before the number can be reused: waits end, and until close(2) has
	 * returned the slot stays cancelled, so that a call that began on the
	 * old file cannot start a wait in the new life on it (and park for
	 * ever on a closed fd). Then the number is free for a new file. */
	uint32_t seq = s ? weft__fd_renew(s, WEFT__FD_CANCELLED, WEFT__RD | WEFT__WR) : 0;
	weft__poller_forget(fd); /* no poll may keep the file open past this close */
	int rc = 0;
	if (close(fd) != 0 && errno != EINTR)
		rc = WEFT_ESYSTEM; /* EINTR: Linux has closed it anyway */
	if (s) {
		int err = errno;
		weft__lock_acquire(&s->lock);
		if (atomic_load_explicit(&s->seq, memory_order_relaxed) == seq)
			atomic_store_explicit(&s->flags, 0, memory_order_relaxed);
		weft__lock_release(&s->lock);
		errno = err;
	}
	return rc;
}
