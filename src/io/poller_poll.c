/* io/poller.h in POSIX: poll(2) over a table of interests, and a pipe for
 * wake-ups from other threads (the portable build, WEFT_PORTABLE).
 *
 * What it emulates. The I/O layer (io/fd.c) wants edge-triggered watches:
 * an fd is registered once, and a report comes when it becomes ready, not
 * again and again while it stays ready with nobody waiting. poll is
 * level-triggered. So a watched fd is polled only for what a waiter
 * expects: the I/O layer calls weft__poller_expect right before a fiber
 * parks on it (after the fd said EAGAIN, or the cached bit was clear), and
 * a report takes the events it reported off the expectation. An fd nobody
 * waits on is not in the poll set at all. An error or hang-up (which poll
 * reports whatever it is asked) ends every expectation of the fd: the I/O
 * layer keeps those bits for good.
 *
 * Closed fds. epoll forgets an fd when its file is closed and holds no
 * reference to it; a thread asleep in poll holds a reference to every file
 * it polls, so a socket closed while some worker polls its number would
 * stay open (its peer would wait for the end of the stream that never
 * comes) until that poll returns. weft_close therefore calls
 * weft__poller_forget first, which drops the fd from every poller and
 * wakes those in poll. A number closed behind weft's back (close(2)) is
 * dropped at the next POLLNVAL, or told from its new file by device and
 * inode at the next rewatch (weft_wait_fd), which then answers 1 as epoll
 * does for an fd no longer in its set.
 *
 * Costs: every wait builds the pollfd array from the table (O(watched)),
 * and the kernel scans it (O(polled) again), where epoll pays per event;
 * one lock per wait on a watched fd (the expectation); a sub-millisecond
 * timeout waits in select rather than poll (io/wakefd.h).
 * docs/platforms.md measures them.
 *
 * Who touches what: the table under set->lock (watch, rewatch, unwatch and
 * expect come from the owner's fibers, forget from any thread: each wakes
 * the owner when it is in poll so that it polls the new table); the arrays
 * for poll and the reports are the owner's. The registry of pollers
 * (forget) under registry_lock, taken before a set's lock. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/testing.h"
#include "io/poller.h"
#include "io/wakefd.h"

#define WATCHED_EVENTS (POLLIN | POLLOUT | POLLPRI | WEFT__POLLRDHUP)

typedef struct interest {
	int fd;
	bool oneshot;   /* weft__poller_arm: reported once, then dropped */
	short events;   /* asked for */
	short expected; /* a waiter waits for these, not reported yet (watches) */
	uint64_t key;   /* a watch's key, or a one-shot's token */
	dev_t dev;      /* the file watched (rewatch tells a reused number) */
	ino_t ino;
} interest;

typedef struct report {
	uint64_t key;
	short revents;
	bool oneshot;
} report;

struct weft__pollset {
	struct weft__pollset *next_set; /* the registry (forget), under registry_lock */
	pthread_mutex_t lock;
	interest *v; /* under lock */
	int n, cap;
	int *index; /* fd -> position in v, -1: none; under lock */
	int index_len;
	bool polling;           /* the owner is in poll (under lock) */
	_Atomic unsigned wakes; /* weft__poller_wake calls */
	unsigned wakes_seen;    /* owner */
	weft__wakefd wake;
	/* The owner's: the pollfd array (wake-up first) and the reports. */
	struct pollfd *pfd;
	report *reports;
	int pfd_cap;
};

static _Atomic uint32_t last_id;

/* Every poller of the process, for weft__poller_forget. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft__pollset *registry;

void weft__fault_no_pwait2(bool on)
{
	(void)on; /* an epoll matter: this poller has no timerfd to fall back on */
}

int weft__poller_init(weft__poller *p)
{
	p->id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
	p->epfd = p->timerfd = -1;
	p->events = NULL;
	p->timer_armed = false;
	p->woken = false;
	struct weft__pollset *s = calloc(1, sizeof(*s));
	if (!s)
		return WEFT_ENOMEM;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return WEFT_ENOMEM;
	}
	if (weft__wakefd_open(&s->wake) != 0) {
		int err = errno;
		pthread_mutex_destroy(&s->lock);
		free(s);
		return weft__poller_refused("pipe", err, "two descriptors (a pipe)");
	}
	atomic_init(&s->wakes, 0);
	p->wakefd = s->wake.wr;
	p->set = s;
	pthread_mutex_lock(&registry_lock);
	s->next_set = registry;
	registry = s;
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

void weft__poller_destroy(weft__poller *p)
{
	struct weft__pollset *s = p->set;
	pthread_mutex_lock(&registry_lock);
	for (struct weft__pollset **q = &registry; *q; q = &(*q)->next_set)
		if (*q == s) {
			*q = s->next_set;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	weft__wakefd_close(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->v);
	free(s->index);
	free(s->pfd);
	free(s->reports);
	free(s);
	p->set = NULL;
}

/* ------------------------------------------------------------ the table */

static interest *find(struct weft__pollset *s, int fd)
{
	if (fd < 0 || fd >= s->index_len || s->index[fd] < 0)
		return NULL;
	return &s->v[s->index[fd]];
}

/* A new interest for fd (lock held): NULL without memory. */
static interest *add(struct weft__pollset *s, int fd)
{
	if (fd >= s->index_len) {
		int len = s->index_len ? s->index_len : 64;
		while (len <= fd)
			len *= 2;
		int *ix = realloc(s->index, (size_t)len * sizeof(*ix));
		if (!ix)
			return NULL;
		for (int i = s->index_len; i < len; i++)
			ix[i] = -1;
		s->index = ix;
		s->index_len = len;
	}
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		interest *v = realloc(s->v, (size_t)cap * sizeof(*v));
		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	s->index[fd] = s->n;
	interest *it = &s->v[s->n++];
	memset(it, 0, sizeof(*it));
	it->fd = fd;
	return it;
}

static void drop(struct weft__pollset *s, interest *it)
{
	int pos = (int)(it - s->v);
	s->index[it->fd] = -1;
	if (pos != s->n - 1) {
		s->v[pos] = s->v[s->n - 1];
		s->index[s->v[pos].fd] = pos;
	}
	s->n--;
}

/* After a change to the table from another thread: the owner, if it is in
 * poll, polls again with the new table (lock held). */
static void changed(struct weft__pollset *s)
{
	if (s->polling)
		weft__wakefd_signal(s->wake.wr);
}

/* What epoll would refuse: a closed fd (EBADF), or a regular file or a
 * directory, which are always ready (EPERM). 0, or WEFT_EINVAL. */
static int pollable(int fd, struct stat *st)
{
	if (fstat(fd, st) != 0 || S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
		return WEFT_EINVAL;
	return 0;
}

/* ------------------------------------------------------------ interests */

int weft__poller_arm(weft__poller *p, int fd, short events, void *token)
{
	struct stat st;
	if (fd < 0 || fd == p->set->wake.rd || fd == p->set->wake.wr || !token)
		return WEFT_EINVAL;
	if (pollable(fd, &st) != 0)
		return WEFT_EINVAL;
	struct weft__pollset *s = p->set;
	pthread_mutex_lock(&s->lock);
	interest *it = find(s, fd);
	if (!it)
		it = add(s, fd);
	if (it) {
		/* Replaces a watch of fd, as EPOLL_CTL_MOD would. */
		it->oneshot = true;
		it->events = (short)(events & (POLLIN | POLLOUT | POLLPRI));
		it->expected = it->events;
		it->key = (uint64_t)(uintptr_t)token;
		changed(s);
	}
	pthread_mutex_unlock(&s->lock);
	return it ? 0 : WEFT_ENOMEM;
}

void weft__poller_disarm(weft__poller *p, int fd)
{
	weft__poller_unwatch(p, fd);
}

int weft__poller_watch(weft__poller *p, int fd, uint64_t key)
{
	struct stat st;
	if (fd < 0 || fd == p->set->wake.rd || fd == p->set->wake.wr)
		return WEFT_EINVAL;
	if (pollable(fd, &st) != 0)
		return WEFT_EINVAL;
	struct weft__pollset *s = p->set;
	pthread_mutex_lock(&s->lock);
	interest *it = find(s, fd);
	if (!it)
		it = add(s, fd);
	if (it) {
		if (it->oneshot)
			it->expected = 0;
		it->oneshot = false;
		it->events = WATCHED_EVENTS;
		/* Polled once a waiter expects something (expect): a waiter
		 * already parked on it keeps its expectation. */
		it->key = key;
		it->dev = st.st_dev;
		it->ino = st.st_ino;
		changed(s);
	}
	pthread_mutex_unlock(&s->lock);
	return it ? 0 : WEFT_ENOMEM;
}

int weft__poller_rewatch(weft__poller *p, int fd, uint64_t key)
{
	struct stat st;
	if (fd < 0 || fd == p->set->wake.rd || fd == p->set->wake.wr)
		return WEFT_EINVAL;
	bool open_now = fstat(fd, &st) == 0;
	struct weft__pollset *s = p->set;
	pthread_mutex_lock(&s->lock);
	interest *it = find(s, fd);
	int rc = 1;
	if (it && (!open_now || it->oneshot || it->dev != st.st_dev || it->ino != st.st_ino)) {
		drop(s, it); /* closed since, or another file under the number */
	} else if (it) {
		it->key = key; /* the caller's expect polls the level again */
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void weft__poller_unwatch(weft__poller *p, int fd)
{
	struct weft__pollset *s = p->set;
	pthread_mutex_lock(&s->lock);
	interest *it = find(s, fd);
	if (it) {
		drop(s, it);
		changed(s);
	}
	pthread_mutex_unlock(&s->lock);
}

void weft__poller_expect(weft__poller *p, int fd, short events)
{
	struct weft__pollset *s = p->set;
	pthread_mutex_lock(&s->lock);
	interest *it = find(s, fd);
	short want = (short)(events & (POLLIN | POLLOUT | POLLPRI));
	if (events & POLLIN)
		want |= (short)WEFT__POLLRDHUP;
	if (it && !it->oneshot && (it->expected | want) != it->expected) {
		it->expected |= want;
		changed(s);
	}
	pthread_mutex_unlock(&s->lock);
}

void weft__poller_forget(int fd)
{
	pthread_mutex_lock(&registry_lock);
	for (struct weft__pollset *s = registry; s; s = s->next_set) {
		pthread_mutex_lock(&s->lock);
		interest *it = find(s, fd);
		if (it) {
			drop(s, it);
			changed(s); /* its poll lets go of the file */
		}
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&registry_lock);
}

/* ------------------------------------------------------------ waiting */

/* Fills the owner's pollfd array from the table (lock held): the wake-up
 * first. Returns how many entries, or -1 without memory. */
static int collect(struct weft__pollset *s)
{
	if (s->pfd_cap < s->n + 1) {
		int cap = s->n + 1 < 64 ? 64 : (s->n + 1) * 2;
		struct pollfd *pfd = realloc(s->pfd, (size_t)cap * sizeof(*pfd));
		if (!pfd)
			return -1;
		s->pfd = pfd;
		report *r = realloc(s->reports, (size_t)cap * sizeof(*r));
		if (!r)
			return -1;
		s->reports = r;
		s->pfd_cap = cap;
	}
	int m = 0;
	s->pfd[m++] = (struct pollfd){.fd = s->wake.rd, .events = POLLIN};
	for (int i = 0; i < s->n; i++) {
		short want = (short)(s->v[i].events & s->v[i].expected);
		if (want)
			s->pfd[m++] = (struct pollfd){.fd = s->v[i].fd, .events = want};
	}
	return m;
}

/* Takes the results of poll into reports (lock held): masks what a watch
 * reported, drops one-shots and closed fds. Returns how many reports. */
static int harvest(struct weft__pollset *s, int m)
{
	int nrep = 0;
	for (int i = 1; i < m; i++) {
		short rev = s->pfd[i].revents;
		if (!rev)
			continue;
		interest *it = find(s, s->pfd[i].fd);
		if (!it)
			continue; /* unwatched while we polled */
		if (rev & POLLNVAL) {
			drop(s, it); /* closed: epoll would have forgotten it */
			continue;
		}
		rev &= (short)(it->events | POLLERR | POLLHUP);
		if (!rev)
			continue; /* asked for less since */
		s->reports[nrep++] =
		        (report){.key = it->key, .revents = rev, .oneshot = it->oneshot};
		if (it->oneshot)
			drop(s, it);
		else if (rev & (POLLERR | POLLHUP))
			it->expected = 0;
		else
			it->expected &= (short)~rev;
	}
	return nrep;
}

int weft__poller_wait(weft__poller *p, int64_t timeout_ns, weft__poller_ready_fn ready, void *ctx)
{
	struct weft__pollset *s = p->set;
	p->woken = false;
	int64_t deadline = timeout_ns > 0 ? weft__sat_add(weft__now_ns(), timeout_ns) : 0;
	int nrep = 0;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		int m = collect(s);
		s->polling = m > 0;
		pthread_mutex_unlock(&s->lock);
		if (m < 0)
			return 0; /* no memory for the array: the caller comes back */
		int64_t t = timeout_ns <= 0 ? timeout_ns : weft__ns_left(deadline, weft__now_ns());
		int got = weft__poll_ns(s->pfd, (nfds_t)m, t);
		pthread_mutex_lock(&s->lock);
		s->polling = false;
		if (got > 0)
			nrep = harvest(s, m);
		pthread_mutex_unlock(&s->lock);
		bool piped = got > 0 && s->pfd[0].revents;
		if (piped)
			weft__wakefd_drain(s->wake.rd);
		unsigned wakes = atomic_load(&s->wakes);
		if (wakes != s->wakes_seen) {
			s->wakes_seen = wakes;
			p->woken = true;
		}
		/* Only the table changed: poll the new one for what is left. */
		if (piped && nrep == 0 && !p->woken && timeout_ns != 0 &&
		    (timeout_ns < 0 || weft__now_ns() < deadline))
			continue;
		break;
	}
	int reported = 0;
	for (int i = 0; i < nrep; i++) {
		report *r = &s->reports[i];
		if (r->oneshot) {
			ready((void *)(uintptr_t)r->key, r->revents, ctx);
		} else if (r->key >> 63) {
			weft__io_ready(p, (int)(uint32_t)r->key,
			               (uint32_t)(r->key >> 32) & 0x7fffffffu, r->revents);
		} else if (r->key & 1) {
			weft__poll_source *src =
			        (weft__poll_source *)(uintptr_t)(r->key & ~(uint64_t)1);
			src->ready(src, r->revents);
		} else {
			continue;
		}
		reported++;
	}
	return reported;
}

void weft__poller_wake(weft__poller *p)
{
	atomic_fetch_add(&p->set->wakes, 1);
	weft__wakefd_signal(p->wakefd);
}
