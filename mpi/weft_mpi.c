/* weft-mpi: MPI requests waited for the way the model waits.
 *
 * The problem. MPI_Wait in Open MPI spins in opal_progress until the request
 * completes: under `threads` it burns a worker's core for as long as the
 * message takes, and under the fiber models it blocks the whole worker, so
 * every other fiber on it stops: the opposite of overlapping communication
 * with computation. MPI has no completion file descriptor to hand to weft's
 * poller (weft_wait_fd), so completion can only be learnt by asking:
 * MPI_Test, which also drives MPI's progress engine.
 *
 * The design: each waiter polls its own request(s) with MPI_Test* and, in
 * between, gives its execution away with the public blocking calls, which
 * already do the right thing per model:
 *
 *   - on a fiber (fibers, mn), first weft_yield: if other tasks are ready
 *     they run, and the yield comes back only after a scheduling round, so
 *     while the worker is busy the request is tested once per round at no
 *     cost but a test (about 0.1-1 us). When a yield comes back at once
 *     (nothing else is ready: the worker would only spin), the fiber parks
 *     with weft_sleep_ns for a backoff that starts at 1 us and doubles up to
 *     the poll limit (default 200 us); the worker sleeps in its poller until
 *     the timer or other work wakes it.
 *   - on a kernel thread (threads, spawn, outside a runtime), weft_sleep_ns
 *     with the same backoff: nanosleep, so a waiting worker costs a wake-up
 *     per interval instead of a core.
 *
 * The cost is latency: a message that lands while the waiter sleeps is
 * noticed at the end of the sleep, up to the limit later (under fibers the
 * poller's timers have millisecond resolution, so a fiber that parks waits
 * at least 1 ms: docs/mpi.md measures it). weft_mpi_set_poll_max_ns trades
 * that against CPU.
 *
 * Rejected: polling from the scheduler when it would otherwise sleep (the
 * right place for it, but a hook in src/model that every model would carry
 * for one optional component; a later step if the latency matters);
 * a progress fiber or thread that tests every outstanding request with
 * MPI_Testsome and wakes the waiters through a weft_sem (fewer tests when
 * thousands of fibers wait at once, but one more task per rank that must be
 * scheduled, and a registry of requests shared between threads; per-waiter
 * polling keeps each wait self-contained and lock-free); MPI_Wait on a
 * helper thread through weft_blocking (parks the fiber, but the helper
 * spins a core, which on a rank that already runs a worker per core is the
 * very cost we avoid); and MPI_Wait itself (spins).
 *
 * Threading levels: weft_mpi_init asks for what the runtime needs
 * (weft_mpi_required_level). Below MPI_THREAD_MULTIPLE the tests made here
 * are serialised by `lock` (a plain pthread mutex, never held across a
 * yield or a sleep, so a fiber holding it never parks). Below
 * MPI_THREAD_SERIALIZED only the thread that initialised MPI may call. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include <weft/blocking.h>
#include <weft/error.h>
#include <weft/mpi.h>
#include <weft/task.h>

#define POLL_MIN_NS      1000   /* first sleep of the backoff */
#define POLL_MAX_DEFAULT 200000 /* default limit of the backoff */
#define BUSY_YIELD_NS    20000  /* a yield this long: other tasks ran */
#define IDLE_YIELDS      4      /* quick yields before the first sleep */

/* Set once by weft_mpi_init, before any wait (read-only afterwards). */
static int provided_level = MPI_THREAD_MULTIPLE;
static pthread_t init_thread;
static bool init_done;

/* Serialises the tests below MPI_THREAD_MULTIPLE. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Any thread; relaxed. */
static _Atomic int64_t poll_max_ns = POLL_MAX_DEFAULT;
static _Atomic uint64_t n_waits, n_tests, n_yields, n_sleeps;

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
	        .yields = atomic_load_explicit(&n_yields, memory_order_relaxed),
	        .sleeps = atomic_load_explicit(&n_sleeps, memory_order_relaxed),
	};
	return 0;
}

/* ------------------------------------------------------------ the poll loop */

typedef enum test_kind { TEST_ONE, TEST_ALL, TEST_ANY } test_kind;

typedef struct waiting {
	test_kind kind;
	int count;
	MPI_Request *reqs;
	MPI_Status *statuses; /* TEST_ALL; else the one status */
	int *index;           /* TEST_ANY */
} waiting;

/* One MPI_Test* under the lock the threading level asks for. */
static int test_once(const waiting *w, int *done)
{
	bool serialise = provided_level < MPI_THREAD_MULTIPLE;
	if (serialise)
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
	if (serialise)
		pthread_mutex_unlock(&lock);
	if (rc == MPI_SUCCESS)
		return 0;
	return weft_mpi_error(rc, w->kind == TEST_ONE   ? "MPI_Test"
	                          : w->kind == TEST_ALL ? "MPI_Testall"
	                                                : "MPI_Testany");
}

static bool on_fiber(void)
{
	weft_rt *rt = weft_rt_current();
	weft_config cfg;
	if (!rt || weft_rt_config(rt, &cfg) != 0)
		return false;
	return cfg.model == WEFT_MODEL_FIBERS || cfg.model == WEFT_MODEL_MN;
}

static int poll_until_done(const waiting *w)
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
	bool fiber = on_fiber();
	int64_t backoff = 0;
	int idle_yields = 0;
	uint64_t tests = 0, yields = 0, sleeps = 0;
	while (!done && !err) {
		if (fiber && idle_yields < IDLE_YIELDS) {
			int64_t t0 = weft_clock_ns();
			weft_yield();
			yields++;
			if (weft_clock_ns() - t0 >= BUSY_YIELD_NS) {
				/* Other tasks ran: the worker is busy, polling is free. */
				idle_yields = 0;
				backoff = 0;
			} else {
				idle_yields++;
			}
		} else {
			int64_t max = atomic_load_explicit(&poll_max_ns, memory_order_relaxed);
			backoff = backoff ? 2 * backoff : POLL_MIN_NS;
			if (backoff > max)
				backoff = max;
			weft_sleep_ns(backoff);
			sleeps++;
			idle_yields = 0; /* after a park, see again whether others run */
		}
		err = test_once(w, &done);
		tests++;
	}
	atomic_fetch_add_explicit(&n_tests, tests, memory_order_relaxed);
	atomic_fetch_add_explicit(&n_yields, yields, memory_order_relaxed);
	atomic_fetch_add_explicit(&n_sleeps, sleeps, memory_order_relaxed);
	return err;
}

int weft_mpi_wait(MPI_Request *req, MPI_Status *status)
{
	if (!req)
		return WEFT_EINVAL;
	waiting w = {.kind = TEST_ONE, .count = 1, .reqs = req, .statuses = status};
	return poll_until_done(&w);
}

int weft_mpi_waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
	if (count < 0 || (count > 0 && !reqs))
		return WEFT_EINVAL;
	if (count == 0)
		return 0;
	waiting w = {.kind = TEST_ALL, .count = count, .reqs = reqs, .statuses = statuses};
	return poll_until_done(&w);
}

int weft_mpi_waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
	if (count < 0 || (count > 0 && !reqs) || !index)
		return WEFT_EINVAL;
	waiting w = {
	        .kind = TEST_ANY, .count = count, .reqs = reqs, .statuses = status, .index = index};
	return poll_until_done(&w);
}
