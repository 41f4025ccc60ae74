/* weft-mpi: MPI requests waited for the way the model waits.
 *
 * The problem. MPI_Wait in Open MPI spins in opal_progress until the request
 * completes: under `threads` it burns a worker's core for as long as the
 * message takes, and under the fiber models it blocks the whole worker, so
 * every other fiber on it stops: the opposite of overlapping communication
 * with computation. MPI has no completion file descriptor to hand to weft's
 * poller (weft_wait_fd), so completion can only be learnt by asking:
 * MPI_Test*, which also drives MPI's progress engine.
 *
 * The design: progress from the scheduler (weft/progress.h). One request
 * registry per process (a rank): a waiter that is not done at its first
 * test puts its requests in the registry and
 *
 *   - on a fiber (fibers, mn: weft_progress_served), parks on a weft_sem,
 *     with no timer of its own. The progress function below, called by a
 *     worker that has nothing to run (after a short adaptive spin it sleeps
 *     in its poller for at most the poll interval, with a nanosecond
 *     timeout) and by busy workers every few dozen tasks, makes one
 *     MPI_Testsome over the whole registry and posts the semaphores of the
 *     waits that completed. So a thousand parked waiters cost one test per
 *     interval, not a thousand, and an idle rank costs one wake-up per
 *     interval (weft_mpi_set_poll_max_ns; docs/mpi.md measures it);
 *   - on a kernel thread (threads, spawn, outside a runtime), polls the
 *     same registry itself (weft_progress_poll, serving every waiter at
 *     once) and sleeps between polls with a backoff from 1 us up to the
 *     interval.
 *
 * MPI_Waitany's waiters are kept on a list of their own and tested with
 * MPI_Testany: in one MPI_Testsome two of their requests could complete,
 * and MPI_Waitany must complete one.
 *
 * The limit. Open MPI 4.1 has no completion callbacks (MPIX_Continue) and no
 * blocking wait that does not spin, so a message that lands while the rank
 * sleeps is noticed at the end of the interval: the latency of MPI_Wait is
 * not reachable without a spinning core. CMake detects MPIX_Continue and
 * MPIX_Async_start (WEFT_MPI_HAVE_CONTINUE, WEFT_MPI_HAVE_ASYNC); no MPI at
 * hand has them, so no path uses them yet (docs/mpi.md).
 *
 * Rejected: per-waiter polling with weft_yield and weft_sleep_ns (the first
 * design: every parked fiber had a timer and tested its own request, and a
 * worker that slept on a millisecond tick noticed a message 589 us late at
 * the median); MPI_Wait on a helper thread through weft_blocking (parks the
 * fiber, but the helper spins a core); a progress task (must itself be
 * scheduled, and cannot run while every worker sleeps).
 *
 * Threading levels: weft_mpi_init asks for what the runtime needs
 * (weft_mpi_required_level). Every MPI call made here is under `lock` (a
 * plain pthread mutex, never held across a park or a sleep), so below
 * MPI_THREAD_MULTIPLE they are serialised. Below MPI_THREAD_SERIALIZED only
 * the thread that initialised MPI may call: no progress function is
 * registered then, and that thread polls alone. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

#include <weft/blocking.h>
#include <weft/error.h>
#include <weft/mpi.h>
#include <weft/progress.h>
#include <weft/sync.h>
#include <weft/task.h>

#define POLL_MIN_NS      1000  /* first sleep of a thread's backoff */
#define POLL_MAX_DEFAULT 40000 /* default poll interval */

/* Set once by weft_mpi_init, before any wait (read-only afterwards). */
static int provided_level = MPI_THREAD_MULTIPLE;
static pthread_t init_thread;
static bool init_done;

/* Every MPI call made here, and the registry. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static bool progress_added; /* under lock */
static int64_t progress(void *arg);

/* Any thread; relaxed. */
static _Atomic int64_t poll_max_ns = POLL_MAX_DEFAULT;
static _Atomic uint64_t n_waits, n_tests, n_parks, n_sleeps;

static const char *level_name(int level)
{
	switch (level) {
	case MPI_THREAD_SINGLE:
		return "MPI_THREAD_SINGLE";
	case MPI_THREAD_FUNNELED:
		return "MPI_THREAD_FUNNELED";
	case MPI_THREAD_SERIALIZED:
		return "MPI_THREAD_SERIALIZED";
	case MPI_THREAD_MULTIPLE:
		return "MPI_THREAD_MULTIPLE";
	default:
		return "an unknown level";
	}
}

int weft_mpi_error(int mpi_rc, const char *what)
{
	if (mpi_rc == MPI_SUCCESS)
		return 0;
	char msg[MPI_MAX_ERROR_STRING + 1];
	int len = 0, cls = MPI_ERR_OTHER;
	if (MPI_Error_string(mpi_rc, msg, &len) != MPI_SUCCESS)
		len = snprintf(msg, sizeof(msg), "MPI error %d", mpi_rc);
	msg[len < 0 ? 0 : len > MPI_MAX_ERROR_STRING ? MPI_MAX_ERROR_STRING : len] = '\0';
	MPI_Error_class(mpi_rc, &cls);
	fprintf(stderr, "weft-mpi: %s%s%s\n", what ? what : "", what ? ": " : "", msg);
	switch (cls) {
	case MPI_ERR_NO_MEM:
		return WEFT_ENOMEM;
	case MPI_ERR_BUFFER:
	case MPI_ERR_COUNT:
	case MPI_ERR_TYPE:
	case MPI_ERR_TAG:
	case MPI_ERR_COMM:
	case MPI_ERR_RANK:
	case MPI_ERR_REQUEST:
	case MPI_ERR_ROOT:
	case MPI_ERR_GROUP:
	case MPI_ERR_OP:
	case MPI_ERR_TOPOLOGY:
	case MPI_ERR_DIMS:
	case MPI_ERR_ARG:
	case MPI_ERR_TRUNCATE:
	case MPI_ERR_INFO:
	case MPI_ERR_WIN:
		return WEFT_EINVAL;
	default:
		return WEFT_ENOTSUP;
	}
}

int weft_mpi_required_level(const weft_config *cfg)
{
	if (!cfg)
		return MPI_THREAD_MULTIPLE;
	switch (cfg->model) {
	case WEFT_MODEL_FIBERS:
		return MPI_THREAD_SERIALIZED;
	case WEFT_MODEL_THREADS:
	case WEFT_MODEL_MN:
		return cfg->workers == 1 ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
	default:
		return MPI_THREAD_MULTIPLE;
	}
}

int weft_mpi_init(int *argc, char ***argv, weft_rt *rt, int *provided)
{
	int flag = 0;
	MPI_Initialized(&flag);
	if (flag) {
		fprintf(stderr, "weft-mpi: weft_mpi_init: MPI is already initialised\n");
		return WEFT_EINVAL;
	}
	MPI_Finalized(&flag);
	if (flag) {
		fprintf(stderr, "weft-mpi: weft_mpi_init: MPI was finalised\n");
		return WEFT_EINVAL;
	}
	weft_config cfg;
	int required = MPI_THREAD_MULTIPLE;
	if (rt && weft_rt_config(rt, &cfg) == 0)
		required = weft_mpi_required_level(&cfg);
	int got = MPI_THREAD_SINGLE;
	int err = weft_mpi_error(MPI_Init_thread(argc, argv, required, &got), "MPI_Init_thread");
	if (err)
		return err;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	provided_level = got;
	init_thread = pthread_self();
	init_done = true;
	if (provided)
		*provided = got;
	if (got < required) {
		fprintf(stderr,
		        "weft-mpi: asked MPI for %s, it provides %s: ", level_name(required),
		        level_name(got));
		if (got == MPI_THREAD_SERIALIZED)
			fprintf(stderr,
			        "weft_mpi_wait* serialise their own MPI calls, but tasks must not "
			        "make other MPI calls at the same time (run one worker: "
			        "WEFT_WORKERS=1, or WEFT_MODEL=fibers)\n");
		else
			fprintf(stderr, "only the thread that called weft_mpi_init may call MPI; "
			                "weft_mpi_wait* from tasks return WEFT_ENOTSUP\n");
	}
	return 0;
}

int weft_mpi_finalize(void)
{
	pthread_mutex_lock(&lock);
	bool added = progress_added;
	progress_added = false;
	pthread_mutex_unlock(&lock);
	if (added) /* no worker may test after MPI_Finalize */
		weft_progress_remove(progress, NULL);
	return weft_mpi_error(MPI_Finalize(), "MPI_Finalize");
}

int64_t weft_mpi_set_poll_max_ns(int64_t ns)
{
	if (ns < POLL_MIN_NS || ns > 1000000000)
		return WEFT_EINVAL;
	return atomic_exchange_explicit(&poll_max_ns, ns, memory_order_relaxed);
}

int weft_mpi_stats_get(weft_mpi_stats *out)
{
	if (!out)
		return WEFT_EINVAL;
	*out = (weft_mpi_stats){
	        .waits = atomic_load_explicit(&n_waits, memory_order_relaxed),
	        .tests = atomic_load_explicit(&n_tests, memory_order_relaxed),
	        .parks = atomic_load_explicit(&n_parks, memory_order_relaxed),
	        .sleeps = atomic_load_explicit(&n_sleeps, memory_order_relaxed),
	};
	return 0;
}

/* ------------------------------------------------------------ weft_mpi_check */

typedef struct rank_info {
	int model, policy, workers, level;
	char host[64];
} rank_info;

static void describe(const rank_info *r, char *out, size_t n)
{
	snprintf(out, n, "model %s, policy %s, %d worker%s, %s", weft_model_name(r->model),
	         weft_policy_name(r->policy), r->workers, r->workers == 1 ? "" : "s",
	         level_name(r->level));
}

int weft_mpi_check(weft_rt *rt, MPI_Comm comm, int *differ)
{
	weft_config cfg;
	if (!rt || weft_rt_config(rt, &cfg) != 0 || comm == MPI_COMM_NULL)
		return WEFT_EINVAL;
	rank_info me = {.model = (int)cfg.model, .policy = (int)cfg.policy, .workers = cfg.workers};
	if (MPI_Query_thread(&me.level) != MPI_SUCCESS)
		me.level = provided_level;
	int len = 0;
	char name[MPI_MAX_PROCESSOR_NAME];
	if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS)
		len = 0;
	snprintf(me.host, sizeof(me.host), "%.*s", len, name);
	int rank = 0, size = 1;
	int err = weft_mpi_error(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
	if (!err)
		err = weft_mpi_error(MPI_Comm_size(comm, &size), "MPI_Comm_size");
	if (err)
		return err;
	rank_info *all = malloc(sizeof(*all) * (size_t)size);
	int have = all != NULL, everyone = 0;
	err = weft_mpi_error(MPI_Allreduce(&have, &everyone, 1, MPI_INT, MPI_MIN, comm),
	                     "MPI_Allreduce");
	if (!err && !everyone)
		err = WEFT_ENOMEM;
	if (!err)
		err = weft_mpi_error(MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, all,
		                                   (int)sizeof(me), MPI_BYTE, comm),
		                     "MPI_Allgather");
	if (err) {
		free(all);
		return err;
	}
	int n = 0;
	for (int i = 1; i < size; i++)
		n += all[i].model != all[0].model || all[i].policy != all[0].policy ||
		     all[i].workers != all[0].workers || all[i].level != all[0].level;
	static atomic_flag warned = ATOMIC_FLAG_INIT;
	if (n && rank == 0 && !atomic_flag_test_and_set(&warned)) {
		char a[160], b[160];
		describe(&all[0], a, sizeof(a));
		fprintf(stderr, "weft-mpi: warning: %d of %d ranks do not run as rank 0:\n", n,
		        size);
		fprintf(stderr, "weft-mpi:   rank 0%s%s: %s\n", all[0].host[0] ? " on " : "",
		        all[0].host, a);
		for (int i = 1; i < size; i++) {
			describe(&all[i], b, sizeof(b));
			if (strcmp(a, b) != 0)
				fprintf(stderr, "weft-mpi:   rank %d%s%s: %s\n", i,
				        all[i].host[0] ? " on " : "", all[i].host, b);
		}
		fprintf(stderr,
		        "weft-mpi:   give every rank the same settings: mpirun -x WEFT_MODEL -x "
		        "WEFT_WORKERS ... (Open MPI), -genvlist (MPICH); differing worker counts "
		        "are expected only where hosts have different CPUs\n");
	}
	free(all);
	if (differ)
		*differ = n;
	return 0;
}

/* ------------------------------------------------------------ the registry */

typedef enum test_kind { TEST_ONE, TEST_ALL, TEST_ANY } test_kind;

typedef struct waiter {
	test_kind kind;
	int count;
	MPI_Request *reqs;    /* the caller's */
	MPI_Status *statuses; /* TEST_ALL: one per request; else the one status */
	int *index;           /* TEST_ANY */
	int remaining;        /* TEST_ONE, TEST_ALL: requests still registered */
	int err;
	bool parked;   /* on sem (a fiber); else its thread polls done */
	int64_t since; /* when it entered the registry */
	_Atomic int done;
	weft_sem sem;
	struct waiter *next_any;
} waiter;

/* Under lock. The MPI_Testsome array and, per entry, its waiter and the
 * position of the request in the waiter's array; scratch for the results. */
static struct {
	MPI_Request *reqs;
	waiter **who;
	int *slot;
	int *indices;
	MPI_Status *statuses;
	int n, cap;
	waiter *anys; /* TEST_ANY waiters */
} reg;

static int reserve(int more)
{
	if (reg.n + more <= reg.cap)
		return 0;
	int cap = reg.cap ? reg.cap : 64;
	while (cap < reg.n + more)
		cap *= 2;
	MPI_Request *r = realloc(reg.reqs, sizeof(*r) * (size_t)cap);
	if (r)
		reg.reqs = r;
	waiter **w = realloc(reg.who, sizeof(*w) * (size_t)cap);
	if (w)
		reg.who = w;
	int *sl = realloc(reg.slot, sizeof(*sl) * (size_t)cap);
	if (sl)
		reg.slot = sl;
	int *ix = realloc(reg.indices, sizeof(*ix) * (size_t)cap);
	if (ix)
		reg.indices = ix;
	MPI_Status *st = realloc(reg.statuses, sizeof(*st) * (size_t)cap);
	if (st)
		reg.statuses = st;
	if (!r || !w || !sl || !ix || !st)
		return WEFT_ENOMEM;
	reg.cap = cap;
	return 0;
}

/* ------------------------------------------------------------ the arrival window
 *
 * Polling every P costs a wake-up per P and notices a message P/2 late on
 * average, where MPI_Wait spinning notices it within microseconds. But the
 * waits of a program are often alike (a halo exchange each step, a reply
 * that takes as long each time): when the last waits took about the same
 * time, from entering the registry to completion, the next one probably
 * will too. Then the duty polls without sleeping through that window
 * (learnt: the 10th to the 90th percentile of the last 16 waits, widened
 * by a quarter on either side and 50 us) and only every 4 P before it.
 * Waits whose 10th and 90th percentiles differ by more than a fifth of
 * their median (or 1 ms) get plain polling: spinning through a wide window
 * would cost more than it saves (at most 3/10 of the wait here). The window of the waits
 * registered at once spans theirs. Under lock. */

#define HISTORY       16
#define WINDOW_MIN    8       /* waits seen before a window is trusted */
#define WINDOW_MARGIN 50000   /* ns on either side, beyond a quarter of the width */
#define WINDOW_MAX    1000000 /* widest window spun through, ns */

static struct {
	int64_t took[HISTORY];
	int n, next;
	bool ok;            /* lo, hi are worth spinning for */
	int64_t lo, hi;     /* the window, after entering the registry */
	int64_t start, end; /* the window of the waits registered now (end 0: none) */
} learnt;

static void learn(int64_t took)
{
	learnt.took[learnt.next] = took;
	learnt.next = (learnt.next + 1) % HISTORY;
	if (learnt.n < HISTORY)
		learnt.n++;
	learnt.ok = false;
	if (learnt.n < WINDOW_MIN)
		return;
	int64_t v[HISTORY];
	int n = learnt.n;
	for (int i = 0; i < n; i++) { /* insertion sort: 16 at most */
		int64_t x = learnt.took[i];
		int j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	int64_t lo = v[n / 10], hi = v[n - 1 - n / 10], median = v[n / 2];
	int64_t margin = (hi - lo) / 4 + WINDOW_MARGIN;
	learnt.ok = hi - lo <= median / 5 && hi - lo <= WINDOW_MAX;
	learnt.lo = lo - margin;
	learnt.hi = hi + margin;
}

static bool pending(void);

/* w enters the registry now. */
static void expect(waiter *w)
{
	w->since = weft_clock_ns();
	if (!learnt.ok)
		return;
	int64_t start = w->since + learnt.lo, end = w->since + learnt.hi;
	/* Alone: its own window (that of a wait just finished is not its). */
	if (!pending() || learnt.end < w->since) {
		learnt.start = start;
		learnt.end = end;
	} else {
		learnt.start = start < learnt.start ? start : learnt.start;
		learnt.end = end > learnt.end ? end : learnt.end;
	}
}

/* Wait w done. It must not be touched after: its stack may be gone. The
 * waiter takes `lock` once after waking, so it cannot return while the
 * poll that finished it still holds the lock. */
static void finish(waiter *w)
{
	learn(weft_clock_ns() - w->since);
	bool parked = w->parked;
	atomic_store_explicit(&w->done, 1, memory_order_release);
	if (parked)
		weft_sem_post(&w->sem);
}

static void fail_all(int err)
{
	for (int i = 0; i < reg.n; i++) {
		waiter *w = reg.who[i];
		if (!w->err)
			w->err = err;
		if (--w->remaining == 0)
			finish(w);
	}
	reg.n = 0;
}

/* One MPI_Testsome over the registry and one MPI_Testany per waitany;
 * under lock. Returns how many waits it finished. */
static int poll_locked(void)
{
	int finished = 0;
	if (reg.n > 0) {
		/* Open MPI's MPI_Testsome looks at the requests, and only when
		 * none is complete drives progress, which may complete them, and
		 * returns without looking again: a message that arrived during
		 * a sleep would be seen one poll interval late (the median went
		 * from 97 to 18 us with a 50 us interval). So when the first
		 * finds nothing, a second looks after the progress it made. */
		int out = 0, rc = MPI_SUCCESS;
		for (int pass = 0;
		     pass < 2 && rc == MPI_SUCCESS && (out == 0 || out == MPI_UNDEFINED); pass++) {
			rc = MPI_Testsome(reg.n, reg.reqs, &out, reg.indices, reg.statuses);
			atomic_fetch_add_explicit(&n_tests, 1, memory_order_relaxed);
		}
		if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
			int before = reg.n;
			fail_all(weft_mpi_error(rc, "MPI_Testsome"));
			finished += before;
		} else if (out != MPI_UNDEFINED && out > 0) {
			for (int k = 0; k < out; k++) {
				int i = reg.indices[k];
				waiter *w = reg.who[i];
				int s = reg.slot[i];
				w->reqs[s] =
				        reg.reqs[i]; /* MPI_REQUEST_NULL, or an inactive persistent one */
				MPI_Status *st = &reg.statuses[k];
				if (rc == MPI_ERR_IN_STATUS && st->MPI_ERROR != MPI_SUCCESS &&
				    !w->err)
					w->err = weft_mpi_error(st->MPI_ERROR,
					                        "a request waited for");
				if (w->kind == TEST_ALL && w->statuses != MPI_STATUSES_IGNORE)
					w->statuses[s] = *st;
				else if (w->kind == TEST_ONE && w->statuses != MPI_STATUS_IGNORE)
					*w->statuses = *st;
				reg.who[i] = NULL;
				if (--w->remaining == 0) {
					finish(w);
					finished++;
				}
			}
			int j = 0; /* drop the completed entries, keeping the order */
			for (int i = 0; i < reg.n; i++) {
				if (!reg.who[i])
					continue;
				reg.reqs[j] = reg.reqs[i];
				reg.who[j] = reg.who[i];
				reg.slot[j] = reg.slot[i];
				j++;
			}
			reg.n = j;
		}
	}
	for (waiter **p = &reg.anys; *p;) {
		waiter *w = *p;
		int flag = 0;
		int rc = MPI_Testany(w->count, w->reqs, w->index, &flag, w->statuses);
		atomic_fetch_add_explicit(&n_tests, 1, memory_order_relaxed);
		if (rc != MPI_SUCCESS)
			w->err = weft_mpi_error(rc, "MPI_Testany");
		if (rc != MPI_SUCCESS || flag) {
			*p = w->next_any;
			finish(w);
			finished++;
		} else {
			p = &w->next_any;
		}
	}
	return finished;
}

static bool pending(void)
{
	return reg.n > 0 || reg.anys;
}

/* When to poll next: the interval P, drawn from [P/2, 3P/2) so that the
 * polls of a rank that posts a receive and then polls are not in step with
 * a sender that answers after a fixed delay (in step, every message would
 * land at the same point of the interval: always just after a poll, a
 * whole P late, for some delays; measured: 35 us instead of 18 at the
 * median for P = 40 us and 2.5 ms); 0 inside the arrival window, up to
 * 4 P before it. Under lock. */
static int64_t next_poll(void)
{
	static uint64_t x = 0x9e3779b97f4a7c15ull;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	int64_t p = atomic_load_explicit(&poll_max_ns, memory_order_relaxed);
	p = p / 2 + (int64_t)(x % (uint64_t)p);
	if (!learnt.end)
		return p;
	int64_t now = weft_clock_ns();
	if (now >= learnt.end) {
		learnt.end = 0;
		return p;
	}
	if (now >= learnt.start)
		return 0;
	p *= 4;
	return learnt.start - now < p ? learnt.start - now : p;
}

/* The progress function (weft/progress.h). */
static int64_t progress(void *arg)
{
	(void)arg;
	if (pthread_mutex_trylock(&lock) != 0) /* a waiter is testing: soon again */
		return atomic_load_explicit(&poll_max_ns, memory_order_relaxed) / 2;
	int64_t next = -1;
	if (pending()) {
		int finished = poll_locked();
		next = finished ? 0 : pending() ? next_poll() : -1;
	}
	pthread_mutex_unlock(&lock);
	return next;
}

/* Puts w's requests in the registry (under lock). */
static int enter_locked(waiter *w)
{
	expect(w);
	if (w->kind == TEST_ANY) {
		w->next_any = reg.anys;
		reg.anys = w;
		return 0;
	}
	int err = reserve(w->count);
	if (err)
		return err;
	w->remaining = 0;
	for (int i = 0; i < w->count; i++) {
		if (w->reqs[i] == MPI_REQUEST_NULL)
			continue;
		reg.reqs[reg.n] = w->reqs[i];
		reg.who[reg.n] = w;
		reg.slot[reg.n] = i;
		reg.n++;
		w->remaining++;
	}
	return 0;
}

/* ------------------------------------------------------------ waiting */

/* One MPI_Test* of w's own requests, under lock. */
static int test_once(const waiter *w, int *done)
{
	pthread_mutex_lock(&lock);
	int rc;
	switch (w->kind) {
	case TEST_ONE:
		rc = MPI_Test(w->reqs, done, w->statuses);
		break;
	case TEST_ALL:
		rc = MPI_Testall(w->count, w->reqs, done, w->statuses);
		break;
	default:
		rc = MPI_Testany(w->count, w->reqs, w->index, done, w->statuses);
		break;
	}
	pthread_mutex_unlock(&lock);
	if (rc == MPI_SUCCESS)
		return 0;
	return weft_mpi_error(rc, w->kind == TEST_ONE   ? "MPI_Test"
	                          : w->kind == TEST_ALL ? "MPI_Testall"
	                                                : "MPI_Testany");
}

/* Registers the progress function once MPI allows other threads to call
 * it (also when the application called MPI_Init_thread itself). */
static bool served_by_workers(void)
{
	if (!weft_progress_served())
		return false;
	int level = provided_level;
	if (!init_done && MPI_Query_thread(&level) != MPI_SUCCESS)
		return false;
	if (level < MPI_THREAD_SERIALIZED)
		return false;
	pthread_mutex_lock(&lock);
	if (!progress_added)
		progress_added = weft_progress_add(progress, NULL) == 0;
	bool ok = progress_added;
	pthread_mutex_unlock(&lock);
	return ok;
}

static int wait_for(waiter *w)
{
	if (init_done && provided_level < MPI_THREAD_SERIALIZED &&
	    !pthread_equal(pthread_self(), init_thread)) {
		fprintf(stderr,
		        "weft-mpi: MPI provides %s: only the thread that called "
		        "weft_mpi_init may wait for a request\n",
		        level_name(provided_level));
		return WEFT_ENOTSUP;
	}
	int done = 0;
	int err = test_once(w, &done);
	if (err || done)
		return err;
	atomic_fetch_add_explicit(&n_waits, 1, memory_order_relaxed);
	w->parked = served_by_workers();
	if (w->parked && weft_sem_init(&w->sem, 0) != 0)
		w->parked = false;
	pthread_mutex_lock(&lock);
	err = enter_locked(w);
	pthread_mutex_unlock(&lock);
	if (err)
		return err;
	if (w->parked) {
		atomic_fetch_add_explicit(&n_parks, 1, memory_order_relaxed);
		while (weft_sem_wait(&w->sem) != 0)
			;
	} else {
		int64_t backoff = 0;
		uint64_t sleeps = 0;
		for (;;) {
			/* The progress function, also when it is not registered (a
			 * level below MPI_THREAD_SERIALIZED: this is the only
			 * thread that may call MPI). */
			int64_t next = progress(NULL);
			if (atomic_load_explicit(&w->done, memory_order_acquire))
				break;
			int64_t max = atomic_load_explicit(&poll_max_ns, memory_order_relaxed);
			backoff = backoff ? 2 * backoff : POLL_MIN_NS;
			if (backoff > max)
				backoff = max;
			weft_sleep_ns(next >= 0 && next < backoff ? next : backoff);
			sleeps++;
		}
		atomic_fetch_add_explicit(&n_sleeps, sleeps, memory_order_relaxed);
	}
	/* The poll that finished w may still hold the lock (finish). */
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	return w->err;
}

int weft_mpi_wait(MPI_Request *req, MPI_Status *status)
{
	if (!req)
		return WEFT_EINVAL;
	waiter w = {.kind = TEST_ONE, .count = 1, .reqs = req, .statuses = status};
	return wait_for(&w);
}

int weft_mpi_waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
	if (count < 0 || (count > 0 && !reqs))
		return WEFT_EINVAL;
	if (count == 0)
		return 0;
	waiter w = {.kind = TEST_ALL, .count = count, .reqs = reqs, .statuses = statuses};
	return wait_for(&w);
}

int weft_mpi_waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
	if (count < 0 || (count > 0 && !reqs) || !index)
		return WEFT_EINVAL;
	waiter w = {
	        .kind = TEST_ANY, .count = count, .reqs = reqs, .statuses = status, .index = index};
	return wait_for(&w);
}
