/* weft-mpi's tests, run under mpiexec by ctest (tests/mpi/CMakeLists.txt):
 *
 *   test_mpi <case>        with WEFT_MODEL / WEFT_WORKERS choosing the model
 *
 * Each rank runs the case; every rank's failures are printed with its rank,
 * and rank 0 prints "test_mpi <case>: ok ..." only when every rank passed
 * (the ctest regex). Every case installs a counting allocator before the
 * runtime is created and checks that nothing weft allocated is live after
 * it is destroyed.
 *
 *   ring      tasks of every rank send to the next rank and receive from the
 *             one before, each waiting with weft_mpi_waitall, weft_mpi_wait or
 *             weft_mpi_waitany; payloads checked; the calling thread waits too
 *   overlap   2 ranks, fibers with 1 worker: one fiber of rank 0 waits for a
 *             message rank 1 sends 200 ms late, while rank 0's other tasks do
 *             about 100 ms of work: they must all finish before the message
 *             arrives, and the wait must last about 200 ms (at least 150)
 *   busy      2 ranks: 50 fibers of rank 0 wait for messages that come
 *             late and in reverse order, beside 2 tasks that only yield (the
 *             worker is never idle: the busy worker's progress duty must
 *             find them); under fiber models every wait parked, none slept
 *   errors    bad arguments, and an MPI error turned into a weft code */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/mpi.h>
#include <weft/weft.h>

static int rank, size, failures;

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", rank, __FILE__, \
			        __LINE__, #cond);                                             \
			failures++;                                                           \
		}                                                                             \
	} while (0)

/* Tasks record failures here (CHECK is for the main thread). */
static atomic_int task_failures;
#define TCHECK(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "rank %d: %s:%d: task check failed: %s\n", rank, __FILE__, \
			        __LINE__, #cond);                                                  \
			atomic_fetch_add(&task_failures, 1);                                       \
		}                                                                                  \
	} while (0)

/* ------------------------------------------------------------ counting allocator */

static atomic_long live;

static void *count_alloc(size_t n, void *ctx)
{
	(void)ctx;
	void *p = malloc(n);
	if (p)
		atomic_fetch_add(&live, 1);
	return p;
}

static void count_free(void *p, size_t n, void *ctx)
{
	(void)n;
	(void)ctx;
	if (p)
		atomic_fetch_sub(&live, 1);
	free(p);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ ring */

#define RING_TASKS 24
#define RING_LEN   1000

typedef struct ring_job {
	int id;
	int out[RING_LEN], in[RING_LEN];
} ring_job;

static int payload(int from, int id, int i)
{
	return from * 1000003 + id * 1009 + i;
}

static void ring_task(void *arg)
{
	ring_job *j = arg;
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	for (int i = 0; i < RING_LEN; i++)
		j->out[i] = payload(rank, j->id, i);
	MPI_Request reqs[2];
	TCHECK(MPI_Irecv(j->in, RING_LEN, MPI_INT, from, j->id, MPI_COMM_WORLD, &reqs[0]) ==
	       MPI_SUCCESS);
	TCHECK(MPI_Isend(j->out, RING_LEN, MPI_INT, to, j->id, MPI_COMM_WORLD, &reqs[1]) ==
	       MPI_SUCCESS);
	switch (j->id % 3) {
	case 0:
		TCHECK(weft_mpi_waitall(2, reqs, MPI_STATUSES_IGNORE) == 0);
		break;
	case 1: {
		MPI_Status st;
		TCHECK(weft_mpi_wait(&reqs[0], &st) == 0);
		TCHECK(st.MPI_SOURCE == from && st.MPI_TAG == j->id);
		TCHECK(reqs[0] == MPI_REQUEST_NULL);
		TCHECK(weft_mpi_wait(&reqs[1], MPI_STATUS_IGNORE) == 0);
		break;
	}
	default: {
		int seen = 0;
		for (int k = 0; k < 2; k++) {
			int idx = -1;
			TCHECK(weft_mpi_waitany(2, reqs, &idx, MPI_STATUS_IGNORE) == 0);
			TCHECK(idx == 0 || idx == 1);
			if (idx == 0 || idx == 1)
				seen |= 1 << idx;
		}
		TCHECK(seen == 3);
		int idx = 0;
		TCHECK(weft_mpi_waitany(2, reqs, &idx, MPI_STATUS_IGNORE) == 0);
		TCHECK(idx == MPI_UNDEFINED);
	}
	}
	for (int i = 0; i < RING_LEN; i++)
		if (j->in[i] != payload(from, j->id, i)) {
			TCHECK(j->in[i] == payload(from, j->id, i));
			break;
		}
}

static void case_ring(weft_rt *rt)
{
	static ring_job jobs[RING_TASKS];
	weft_task tasks[RING_TASKS];
	weft_group g;
	weft_group_init(&g);
	for (int i = 0; i < RING_TASKS; i++) {
		jobs[i].id = i;
		weft_task_init(&tasks[i], ring_task, &jobs[i]);
		CHECK(weft_post_in(rt, &g, &tasks[i]) == 0);
	}
	CHECK(weft_group_wait(&g) == 0);
	/* The calling thread (outside the runtime) waits the same way. */
	int out = rank, in = -1;
	MPI_Request reqs[2];
	MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 999, MPI_COMM_WORLD, &reqs[0]);
	MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 999, MPI_COMM_WORLD, &reqs[1]);
	CHECK(weft_mpi_waitall(2, reqs, MPI_STATUSES_IGNORE) == 0);
	CHECK(in == (rank + size - 1) % size);
}

/* ------------------------------------------------------------ overlap */

#define LATE_MS      200
#define WORK_TASKS   20
#define WORK_TASK_MS 5 /* 100 ms of work in all, half the delay */

static double t_start, t_msg, t_work_done[WORK_TASKS];
static atomic_int work_done;

static void late_wait_task(void *arg)
{
	(void)arg;
	int v = 0;
	MPI_Request req;
	TCHECK(MPI_Irecv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
	TCHECK(weft_mpi_wait(&req, MPI_STATUS_IGNORE) == 0);
	t_msg = now_ms() - t_start;
	TCHECK(v == 42);
}

static void work_task(void *arg)
{
	int i = (int)(intptr_t)arg;
	/* Computes (does not sleep): the worker is busy for WORK_TASK_MS. */
	double t0 = now_ms();
	volatile uint64_t x = 1;
	while (now_ms() - t0 < WORK_TASK_MS)
		for (int k = 0; k < 1000; k++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	t_work_done[i] = now_ms() - t_start;
	atomic_fetch_add(&work_done, 1);
}

static void case_overlap(weft_rt *rt)
{
	weft_config cfg;
	weft_rt_config(rt, &cfg);
	if (size != 2 || cfg.model != WEFT_MODEL_FIBERS) {
		fprintf(stderr, "rank %d: overlap needs 2 ranks and WEFT_MODEL=fibers\n", rank);
		failures++;
		return;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	t_start = now_ms();
	if (rank == 1) {
		struct timespec ts = {0, LATE_MS * 1000000L};
		nanosleep(&ts, NULL);
		int v = 42;
		MPI_Send(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
		return;
	}
	weft_task waiter, work[WORK_TASKS];
	weft_group g;
	weft_group_init(&g);
	weft_task_init(&waiter, late_wait_task, NULL);
	CHECK(weft_post_in(rt, &g, &waiter) == 0); /* first: it waits while the rest run */
	for (int i = 0; i < WORK_TASKS; i++) {
		weft_task_init(&work[i], work_task, (void *)(intptr_t)i);
		CHECK(weft_post_in(rt, &g, &work[i]) == 0);
	}
	CHECK(weft_group_wait(&g) == 0);
	double last = 0;
	for (int i = 0; i < WORK_TASKS; i++)
		last = t_work_done[i] > last ? t_work_done[i] : last;
	weft_mpi_stats st;
	weft_mpi_stats_get(&st);
	printf("overlap: the message arrived at %.1f ms; the %d work tasks (%d ms of work) "
	       "finished by %.1f ms, on 1 worker; %llu tests, %llu parks, %llu sleeps\n",
	       t_msg, WORK_TASKS, WORK_TASKS * WORK_TASK_MS, last, (unsigned long long)st.tests,
	       (unsigned long long)st.parks, (unsigned long long)st.sleeps);
	/* The bar: all the work was done while the fiber waited. The start
	 * times of the two ranks differ by the barrier's skew, a few ms when a
	 * sanitizer or the load delays one rank, hence the margin on t_msg. */
	CHECK(atomic_load(&work_done) == WORK_TASKS);
	CHECK(t_msg >= LATE_MS - 50);
	CHECK(last < t_msg);
	/* It parked (no sleep of its own: the worker's progress duty found
	 * the message), and the busy worker polled between the work tasks. */
	CHECK(st.parks == 1);
	CHECK(st.sleeps == 0);
	CHECK(st.tests > 0);
}

/* ------------------------------------------------------------ busy */

#define BUSY_WAITERS 50
#define BUSY_ROUNDS  5

static atomic_int waits_left;

/* Rank 0: one fiber per message; each parks until the progress duty,
 * taken by the worker between the yields of the spinners, finds it. */
static void busy_wait_task(void *arg)
{
	int i = (int)(intptr_t)arg, v = -1;
	MPI_Request req;
	TCHECK(MPI_Irecv(&v, 1, MPI_INT, 1, i, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
	TCHECK(weft_mpi_wait(&req, MPI_STATUS_IGNORE) == 0);
	TCHECK(req == MPI_REQUEST_NULL);
	TCHECK(v == i * 3);
	atomic_fetch_sub(&waits_left, 1);
}

/* Never idle: yields until every wait is done. */
static void spinner_task(void *arg)
{
	(void)arg;
	while (atomic_load(&waits_left) > 0)
		weft_yield();
}

static void case_busy(weft_rt *rt)
{
	if (size != 2) {
		fprintf(stderr, "rank %d: busy needs 2 ranks\n", rank);
		failures++;
		return;
	}
	for (int round = 0; round < BUSY_ROUNDS; round++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 1) {
			/* Late, in reverse order: the registry completes out of
			 * order, several per poll. */
			nanosleep(&(struct timespec){0, 5000000}, NULL);
			for (int i = BUSY_WAITERS - 1; i >= 0; i--) {
				int v = i * 3;
				MPI_Send(&v, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
			}
			continue;
		}
		atomic_store(&waits_left, BUSY_WAITERS);
		weft_task w[BUSY_WAITERS], spin[2];
		weft_group g;
		weft_group_init(&g);
		for (int i = 0; i < BUSY_WAITERS; i++) {
			weft_task_init(&w[i], busy_wait_task, (void *)(intptr_t)i);
			CHECK(weft_post_in(rt, &g, &w[i]) == 0);
		}
		for (int i = 0; i < 2; i++) {
			weft_task_init(&spin[i], spinner_task, NULL);
			CHECK(weft_post_in(rt, &g, &spin[i]) == 0);
		}
		CHECK(weft_group_wait(&g) == 0);
	}
	if (rank == 0) {
		weft_mpi_stats st;
		weft_mpi_stats_get(&st);
		printf("busy: %d rounds of %d waiters beside 2 tasks that only yield: %llu waits, "
		       "%llu parks, %llu tests\n",
		       BUSY_ROUNDS, BUSY_WAITERS, (unsigned long long)st.waits,
		       (unsigned long long)st.parks, (unsigned long long)st.tests);
		/* A fiber never polls on its own: every wait that waited parked. */
		weft_config cfg;
		weft_rt_config(rt, &cfg);
		if (cfg.model == WEFT_MODEL_FIBERS || cfg.model == WEFT_MODEL_MN)
			CHECK(st.parks == st.waits && st.sleeps == 0);
	}
}

/* ------------------------------------------------------------ errors */

static void case_errors(weft_rt *rt)
{
	(void)rt;
	CHECK(weft_mpi_wait(NULL, MPI_STATUS_IGNORE) == WEFT_EINVAL);
	CHECK(weft_mpi_waitall(-1, NULL, MPI_STATUSES_IGNORE) == WEFT_EINVAL);
	CHECK(weft_mpi_waitall(0, NULL, MPI_STATUSES_IGNORE) == 0);
	CHECK(weft_mpi_waitany(1, NULL, NULL, MPI_STATUS_IGNORE) == WEFT_EINVAL);
	MPI_Request null_req = MPI_REQUEST_NULL;
	CHECK(weft_mpi_wait(&null_req, MPI_STATUS_IGNORE) == 0);
	CHECK(weft_mpi_set_poll_max_ns(10) == WEFT_EINVAL);
	int64_t old = weft_mpi_set_poll_max_ns(30000);
	CHECK(old == 40000);
	CHECK(weft_mpi_set_poll_max_ns(old) == 30000);
	CHECK(weft_mpi_stats_get(NULL) == WEFT_EINVAL);
	CHECK(weft_mpi_error(MPI_SUCCESS, "nothing") == 0);
	/* weft_mpi_init made COMM_WORLD return errors: a bad rank comes back. */
	int v = 0;
	MPI_Request req;
	int rc = MPI_Isend(&v, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD, &req);
	CHECK(rc != MPI_SUCCESS);
	CHECK(weft_mpi_error(rc, "MPI_Isend to a rank that does not exist") == WEFT_EINVAL);
	CHECK(weft_mpi_error(MPI_ERR_NO_MEM, "no memory") == WEFT_ENOMEM);
	CHECK(weft_mpi_error(MPI_ERR_OTHER, "other") == WEFT_ENOTSUP);
	int argc = 0;
	char **argv = NULL;
	CHECK(weft_mpi_init(&argc, &argv, NULL, NULL) == WEFT_EINVAL); /* twice */
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	CHECK(weft_mpi_required_level(&cfg) == MPI_THREAD_SERIALIZED);
	cfg.model = WEFT_MODEL_MN;
	cfg.workers = 1;
	CHECK(weft_mpi_required_level(&cfg) == MPI_THREAD_SERIALIZED);
	cfg.workers = 4;
	CHECK(weft_mpi_required_level(&cfg) == MPI_THREAD_MULTIPLE);
	cfg.model = WEFT_MODEL_SPAWN;
	cfg.workers = 1;
	CHECK(weft_mpi_required_level(&cfg) == MPI_THREAD_MULTIPLE);
	CHECK(weft_mpi_required_level(NULL) == MPI_THREAD_MULTIPLE);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(weft_rt *);
	} cases[] = {{"ring", case_ring},
	             {"overlap", case_overlap},
	             {"busy", case_busy},
	             {"errors", case_errors}};
	const char *name = argc > 1 ? argv[1] : "";
	void (*fn)(weft_rt *) = NULL;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(name, cases[i].name))
			fn = cases[i].fn;
	if (!fn) {
		fprintf(stderr, "usage: test_mpi ring|overlap|busy|errors (under mpiexec)\n");
		return 2;
	}
	weft_allocator alloc = {count_alloc, count_free, NULL};
	weft_set_allocator(&alloc);
	weft_rt *rt;
	int err = weft_rt_create(&rt, NULL);
	if (err) {
		fprintf(stderr, "test_mpi: weft_rt_create: %s\n", weft_strerror(err));
		return 2;
	}
	int provided;
	if (weft_mpi_init(&argc, &argv, rt, &provided) != 0)
		return 2;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	weft_config cfg;
	weft_rt_config(rt, &cfg);
	fn(rt);
	CHECK(weft_rt_destroy(rt) == 0);
	CHECK(atomic_load(&live) == 0);
	failures += atomic_load(&task_failures);
	int total = 0;
	MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0 && total == 0)
		printf("test_mpi %s: ok (%d ranks, model %s, %d workers, provided %d)\n", name,
		       size, weft_model_name(cfg.model), cfg.workers, provided);
	weft_mpi_finalize();
	return total ? 1 : 0;
}
