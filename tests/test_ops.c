/* Operability (issue 13 item 5), under every model and worker count
 * (MATRIX): `test_ops <case> <model> <workers>`.
 *
 *   names        each task's thread is named weft-<model>-<index>, read back
 *                with pthread_getname_np and in /proc/self/task/<tid>/comm;
 *                weft_blocking's helper (fiber models) is weft-blocking,
 *                the thread holding weft_post_at's tasks weft-timer
 *   name_cut     threads with 101 workers: weft-thread-100 (15 bytes)
 *   pin          WEFT_PIN=cores / weft_config.pin: a task's thread may run
 *                only on the CPU of its index (sched_getaffinity,
 *                sched_getcpu); off leaves the process's mask
 *   pin_invalid  bad WEFT_PIN values and fields are refused at create
 *   hooks        the worker hook runs once at start and once at exit per
 *                worker (per task thread under spawn), on that thread,
 *                before its first task and after its last
 *   log_hook     weft_set_log receives a message (no "weft: ", no newline)
 *                and nothing reaches stderr; NULL restores stderr
 *   log_hook_races  the hook switched while threads log: each message
 *                reaches one hook with its own context */
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static weft_rt *create_with(weft_config *cfg)
{
	return wt_create(cfg);
}

static weft_rt *create(void)
{
	weft_config cfg;
	wt_config(&cfg);
	return create_with(&cfg);
}

/* The name weft gives the index-th worker of a model (thread.c's rule). */
static void expected_name(char out[16], weft_model model, int index)
{
	const char *kind = weft_model_name(model);
	char digits[12];
	int nd = snprintf(digits, sizeof(digits), "%d", index);
	int room = 15 - 6 - nd, kl = (int)strlen(kind);
	char full[40];
	snprintf(full, sizeof(full), "weft-%.*s-%s", kl < room ? kl : room, kind, digits);
	memcpy(out, full, 15);
	out[15] = '\0';
}

/* ------------------------------------------------------------ names */

enum { NAME_TASKS = 64 };

typedef struct name_probe {
	weft_task task;
	weft_model model;
	int index;
	char name[16], comm[16], helper[16];
} name_probe;

static void read_name(void *arg)
{
	pthread_getname_np(pthread_self(), (char *)arg, 16);
}

static void name_fn(void *arg)
{
	name_probe *p = arg;
	p->index = weft_worker_index();
	WT_CHECK(pthread_getname_np(pthread_self(), p->name, sizeof(p->name)) == 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", (long)gettid());
	FILE *f = fopen(path, "r");
	if (f) {
		if (fgets(p->comm, sizeof(p->comm), f))
			p->comm[strcspn(p->comm, "\n")] = '\0';
		fclose(f);
	}
	WT_CHECK_RC(0, weft_blocking(read_name, p->helper));
}

/* How many threads of this process are named with the prefix. */
static int threads_named(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, prefix, strlen(prefix)) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static bool timer_named(void *arg)
{
	(void)arg;
	return threads_named("weft-timer") == 1;
}

static void names(void)
{
	weft_rt *rt = create();
	int workers = wt_workers(rt);
	static name_probe p[NAME_TASKS];
	for (int i = 0; i < NAME_TASKS; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		weft_task_init(&p[i].task, name_fn, &p[i]);
		assert_rc(0, weft_post(rt, &p[i].task));
	}
	assert_rc(0, weft_wait_all(rt));
	for (int i = 0; i < NAME_TASKS; i++) {
		char want[16];
		assert_true(p[i].index >= 0 && p[i].index < workers);
		expected_name(want, wt.model, p[i].index);
		assert_string_equal(p[i].name, want);
		assert_string_equal(p[i].comm, want);
		/* A kernel-thread model runs the call in place; a fiber model on
		 * a helper thread of its own name. */
		assert_string_equal(p[i].helper, wt_fiber_model() ? "weft-blocking" : want);
	}

	/* Every worker, seen from outside while gates hold them all. */
	wt_gate g;
	wt_gate_init(&g);
	weft_task gates[WT_GATE_MAX];
	int hold = workers < WT_GATE_MAX ? workers : WT_GATE_MAX;
	wt_gate_hold(rt, &g, gates, hold);
	char prefix[16];
	snprintf(prefix, sizeof(prefix), "weft-%s-", weft_model_name(wt.model));
	int named = threads_named(prefix);
	wt_gate_release(&g, hold);
	assert_rc(0, weft_wait_all(rt));
	wt_gate_destroy(&g);
	/* The thread that holds delayed tasks is named for what it is. */
	assert_int_equal(threads_named("weft-timer"), 0);
	weft_task later;
	assert_rc(0, weft_task_init(&later, name_fn, NULL));
	assert_rc(0, weft_post_at(rt, NULL, &later, weft_clock_ns() + 3600000000000LL));
	assert_true(wt_poll(timer_named, NULL)); /* it names itself when it starts */
	assert_rc(0, weft_cancel(&later));
	assert_rc(WEFT_ECANCELED, weft_wait(&later));
	weft_rt_destroy(rt);
	/* Every worker is named; a thread being created bears its creator's
	 * name until it names itself (a pool thread a worker starts is
	 * weft-<model>-<i> for a moment), so more may be seen. */
	assert_true(named >= workers);
	assert_int_equal(threads_named(prefix), 0); /* all joined */
	/* weft_blocking's pool threads live until idle or the destroy. */
	assert_int_equal(threads_named("weft-blocking"), 0);
	assert_int_equal(threads_named("weft-timer"), 0);
}

static bool all_named(void *arg)
{
	(void)arg;
	return threads_named("weft-thread") == 101;
}

static void name_cut(void)
{
	if (wt.model != WEFT_MODEL_THREADS)
		WT_SKIP("only the threads model has names past 15 bytes within 1024 workers");
	char want[16];
	expected_name(want, WEFT_MODEL_THREADS, 100);
	assert_string_equal(want, "weft-thread-100");
	expected_name(want, WEFT_MODEL_THREADS, 99);
	assert_string_equal(want, "weft-threads-99");

	weft_config cfg;
	wt_config(&cfg);
	cfg.workers = 101;
	weft_rt *rt = create_with(&cfg);
	/* The workers live, idle, until destroy; each names itself as it
	 * starts, before its first task, maybe after weft_rt_create returned. */
	bool named = wt_poll(all_named, NULL);
	int cut = threads_named("weft-thread-100"), whole = threads_named("weft-threads-99");
	int all = threads_named("weft-thread");
	weft_rt_destroy(rt);
	assert_true(named);
	assert_int_equal(cut, 1);
	assert_int_equal(whole, 1);
	assert_int_equal(all, 101);
}

/* ------------------------------------------------------------ pinning */

static cpu_set_t process_mask;
static int process_cpus;

/* The n-th CPU of the process's mask, round robin. */
static int nth_cpu(int n)
{
	int want = n % process_cpus;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &process_mask) && want-- == 0)
			return cpu;
	return -1;
}

typedef struct pin_probe {
	weft_task task;
	int index, cpu, ncpus, first;
	bool on_expected;
} pin_probe;

static void pin_fn(void *arg)
{
	pin_probe *p = arg;
	p->index = weft_worker_index();
	cpu_set_t set;
	WT_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	p->ncpus = CPU_COUNT(&set);
	p->first = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE && p->first < 0; cpu++)
		if (CPU_ISSET(cpu, &set))
			p->first = cpu;
	p->cpu = sched_getcpu();
}

enum { PIN_TASKS = 32 };

/* Runs PIN_TASKS probes on a runtime made from cfg; pinned: each must be
 * confined to the CPU of its index, else to the whole process mask. */
static void check_pinning(weft_config *cfg, bool pinned)
{
	weft_rt *rt = create_with(cfg);
	static pin_probe p[PIN_TASKS];
	for (int i = 0; i < PIN_TASKS; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		weft_task_init(&p[i].task, pin_fn, &p[i]);
		assert_rc(0, weft_post(rt, &p[i].task));
	}
	assert_rc(0, weft_wait_all(rt));
	weft_rt_destroy(rt);
	for (int i = 0; i < PIN_TASKS; i++) {
		if (pinned) {
			int want = nth_cpu(p[i].index);
			assert_int_equal(p[i].ncpus, 1);
			assert_int_equal(p[i].first, want);
			assert_int_equal(p[i].cpu, want);
		} else {
			assert_int_equal(p[i].ncpus, process_cpus);
		}
	}
}

static void pin(void)
{
	assert_int_equal(sched_getaffinity(getpid(), sizeof(process_mask), &process_mask), 0);
	process_cpus = CPU_COUNT(&process_mask);
	if (process_cpus < 2)
		WT_SKIP("the process may use 1 CPU: pinned and unpinned look the same");
	weft_config cfg;
	wt_config(&cfg);
	check_pinning(&cfg, false); /* the default: off */
	cfg.pin = WEFT_PIN_CORES;
	check_pinning(&cfg, true);

	static const char *const on[] = {"1", "cores"}, *const off[] = {"0", "off", ""};
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		wt_config(&cfg);
		assert_int_equal(setenv("WEFT_PIN", on[i], 1), 0);
		check_pinning(&cfg, true);
	}
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		wt_config(&cfg);
		cfg.pin = WEFT_PIN_CORES;
		assert_int_equal(setenv("WEFT_PIN", off[i], 1), 0);
		/* "" is unset: the field set in code stands. */
		check_pinning(&cfg, off[i][0] == '\0');
	}
	unsetenv("WEFT_PIN");
}

static void pin_invalid(void)
{
	static const char *const bad[] = {"2", "-1", "all", "yes", "cores,0", " 1"};
	weft_config cfg;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wt_config(&cfg);
		weft_rt *rt = NULL;
		assert_int_equal(setenv("WEFT_PIN", bad[i], 1), 0);
		wt_capture_begin();
		int rc = weft_rt_create(&rt, &cfg);
		const char *err = wt_capture_end();
		unsetenv("WEFT_PIN");
		assert_rc(WEFT_EINVAL, rc);
		assert_null(rt);
		char want[64];
		snprintf(want, sizeof(want), "weft: invalid WEFT_PIN=\"%s\"", bad[i]);
		assert_non_null(strstr(err, want));
		assert_non_null(strstr(err, "0 or off, 1 or cores"));
	}
	wt_config(&cfg);
	cfg.pin = (weft_pin)7;
	weft_rt *rt = NULL;
	assert_rc(WEFT_EINVAL, weft_rt_create(&rt, &cfg));
}

/* ------------------------------------------------------------ hooks */

enum { HOOK_SLOTS = 1024, HOOK_TASKS = 200 };

static _Atomic int starts[HOOK_SLOTS], exits[HOOK_SLOTS];
static _Atomic int total_starts, total_exits, bad_events;
static _Thread_local int hooked_index = -1; /* set by the start hook */
static _Thread_local int hooked_exited, tasks_here;
static int hook_ctx_value;

static void hook(int event, int index, void *ctx)
{
	WT_CHECK(ctx == &hook_ctx_value);
	WT_CHECK(index >= 0 && index < HOOK_SLOTS);
	if (index < 0 || index >= HOOK_SLOTS)
		return;
	if (event == WEFT_WORKER_START) {
		WT_CHECK(hooked_index == -1); /* once per thread */
		hooked_index = index;
		atomic_fetch_add(&starts[index], 1);
		atomic_fetch_add(&total_starts, 1);
	} else if (event == WEFT_WORKER_EXIT) {
		WT_CHECK(hooked_index == index); /* the same thread */
		WT_CHECK(!hooked_exited);
		hooked_exited = 1;
		atomic_fetch_add(&exits[index], 1);
		atomic_fetch_add(&total_exits, 1);
	} else {
		atomic_fetch_add(&bad_events, 1);
	}
}

static void hook_task(void *arg)
{
	(void)arg;
	/* This thread's start hook ran, and its exit hook has not yet. */
	WT_CHECK(hooked_index == weft_worker_index());
	WT_CHECK(!hooked_exited);
	tasks_here++;
	weft_sleep_ns(100 * 1000);
}

static void hooks(void)
{
	for (int i = 0; i < HOOK_SLOTS; i++) {
		atomic_store(&starts[i], 0);
		atomic_store(&exits[i], 0);
	}
	atomic_store(&total_starts, 0);
	atomic_store(&total_exits, 0);
	atomic_store(&bad_events, 0);
	weft_config cfg;
	wt_config(&cfg);
	cfg.worker_hook = hook;
	cfg.worker_hook_ctx = &hook_ctx_value;
	weft_rt *rt = create_with(&cfg);
	int workers = wt_workers(rt);
	static weft_task t[HOOK_TASKS];
	for (int i = 0; i < HOOK_TASKS; i++) {
		weft_task_init(&t[i], hook_task, NULL);
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	/* Tasks that sleep with others queued may get stand-ins (threads,
	 * spawn: core/standin.c), whose threads run the hooks too with the
	 * index of a worker they stand in for: at most one thread each. */
	weft_stats stats;
	assert_rc(0, weft_stats_get(rt, &stats));
	int standins = (int)stats.standins;
	weft_rt_destroy(rt);
	wt_check_async();
	/* Every exit hook has returned once destroy has. */
	assert_int_equal(atomic_load(&bad_events), 0);
	assert_int_equal(atomic_load(&total_starts), atomic_load(&total_exits));
	for (int i = 0; i < HOOK_SLOTS; i++) {
		assert_int_equal(atomic_load(&starts[i]), atomic_load(&exits[i]));
		if (i >= workers)
			assert_int_equal(atomic_load(&starts[i]), 0);
	}
	if (wt.model == WEFT_MODEL_SPAWN) {
		/* A thread per task (none failed to be created here), but for
		 * tasks a stand-in ran. */
		assert_true(atomic_load(&total_starts) <= HOOK_TASKS + standins);
		if (standins == 0)
			assert_int_equal(atomic_load(&total_starts), HOOK_TASKS);
	} else {
		assert_true(atomic_load(&total_starts) >= workers);
		assert_true(atomic_load(&total_starts) <= workers + standins);
		for (int i = 0; i < workers; i++)
			assert_true(atomic_load(&starts[i]) >= 1);
	}
}

/* ------------------------------------------------------------ log hook */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[4096];
static int log_count, log_level = -1;
static int log_ctx_value;
static bool log_ctx_ok;

static void log_fn(int level, const char *msg, void *ctx)
{
	pthread_mutex_lock(&log_mu);
	if (log_count++ == 0) {
		log_level = level;
		log_ctx_ok = ctx == &log_ctx_value;
		snprintf(log_text, sizeof(log_text), "%s", msg);
	}
	pthread_mutex_unlock(&log_mu);
}

static void log_hook(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = NULL;
	log_count = 0;
	log_text[0] = '\0';
	assert_rc(0, weft_set_log(log_fn, &log_ctx_value));
	assert_int_equal(setenv("WEFT_WORKERS", "abc", 1), 0);
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	assert_rc(0, weft_set_log(NULL, NULL));
	assert_rc(WEFT_EINVAL, rc);
	assert_string_equal(err, "");
	assert_int_equal(log_count, 1);
	assert_int_equal(log_level, WEFT_LOG_ERROR);
	assert_true(log_ctx_ok);
	assert_string_equal(log_text, "invalid WEFT_WORKERS=\"abc\": accepted values are "
	                              "integers from 1 to 1024");

	/* Restored: stderr again, one line with the prefix. */
	wt_capture_begin();
	rc = weft_rt_create(&rt, &cfg);
	err = wt_capture_end();
	unsetenv("WEFT_WORKERS");
	assert_rc(WEFT_EINVAL, rc);
	assert_int_equal(log_count, 1);
	assert_string_equal(err, "weft: invalid WEFT_WORKERS=\"abc\": accepted values are "
	                         "integers from 1 to 1024\n");
}

/* weft_set_log switching between two hooks while other threads log: each
 * message reaches a hook with that hook's own context, none reaches
 * stderr. */
static int ctx_a, ctx_b;
static _Atomic long heard, mismatched;
static _Atomic int loggers_done;
static _Atomic bool loggers_go;

static void hook_a(int level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	atomic_fetch_add(&heard, 1);
	if (ctx != &ctx_a)
		atomic_fetch_add(&mismatched, 1);
}

static void hook_b(int level, const char *msg, void *ctx)
{
	(void)level;
	(void)msg;
	atomic_fetch_add(&heard, 1);
	if (ctx != &ctx_b)
		atomic_fetch_add(&mismatched, 1);
}

enum { LOGGERS = 3 };

static void *logger(void *arg)
{
	(void)arg;
	int n = WT_SANITIZER ? 200 : 2000;
	while (!atomic_load(&loggers_go)) /* the hook is being switched */
		sched_yield();
	for (int i = 0; i < n; i++) {
		weft_rt *rt = NULL;
		WT_CHECK_RC(WEFT_EINVAL, weft_rt_create(&rt, NULL)); /* WEFT_WORKERS=abc */
	}
	atomic_fetch_add(&loggers_done, 1);
	return NULL;
}

static void log_hook_races(void)
{
	atomic_store(&heard, 0);
	atomic_store(&mismatched, 0);
	atomic_store(&loggers_done, 0);
	atomic_store(&loggers_go, false);
	assert_rc(0, weft_set_log(hook_a, &ctx_a));
	assert_int_equal(setenv("WEFT_WORKERS", "abc", 1), 0);
	wt_capture_begin();
	pthread_t t[LOGGERS];
	for (int i = 0; i < LOGGERS; i++)
		wt_thread_start(&t[i], logger, NULL);
	long switches = 0;
	while (atomic_load(&loggers_done) < LOGGERS) {
		assert_rc(0, weft_set_log(switches & 1 ? hook_b : hook_a,
		                          switches & 1 ? (void *)&ctx_b : (void *)&ctx_a));
		switches++;
		atomic_store(&loggers_go, true);
		sched_yield();
	}
	for (int i = 0; i < LOGGERS; i++)
		wt_thread_join(t[i]);
	const char *err = wt_capture_end();
	unsetenv("WEFT_WORKERS");
	assert_rc(0, weft_set_log(NULL, NULL));
	wt_check_async();
	assert_string_equal(err, "");
	assert_int_equal(atomic_load(&mismatched), 0);
	assert_int_equal(atomic_load(&heard), LOGGERS * (WT_SANITIZER ? 200 : 2000));
}

WT_CASES(WT_CASE(names), WT_CASE(name_cut), WT_CASE(pin), WT_CASE(pin_invalid), WT_CASE(hooks),
         WT_CASE(log_hook), WT_CASE(log_hook_races));
