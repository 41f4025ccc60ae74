/* API misuse, configuration and the environment, names and error strings.
 * Each case is its own ctest entry (api.<case>); these do not depend on the
 * model or the worker count, so they run once. Misuse must return an error,
 * never crash, and leave nothing allocated. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/testing.h"
#include "harness.h"

static void noop(void *arg)
{
	(void)arg;
}

/* Asserts that weft_rt_create(&rt, cfg) fails with expected, leaves rt NULL
 * and allocates nothing. */
static void expect_create_fails(const weft_config *cfg, int expected)
{
	weft_rt *rt = (weft_rt *)&rt; /* not NULL: create must clear it */
	assert_rc(expected, weft_rt_create(&rt, cfg));
	assert_null(rt);
	wt_assert_no_live_allocations();
}

/* ------------------------------------------------------------ NULL */

static void null_create(void)
{
	weft_config cfg;
	wt_config(&cfg);
	assert_rc(WEFT_EINVAL, weft_rt_create(NULL, &cfg));
	assert_rc(WEFT_EINVAL, weft_rt_create(NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_config_init(NULL));
	wt_assert_no_live_allocations();

	/* cfg NULL means the defaults. */
	weft_rt *rt = NULL;
	assert_rc(0, weft_rt_create(&rt, NULL));
	assert_non_null(rt);
	weft_config eff;
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_int_equal(eff.model, WEFT_MODEL_THREADS);
	assert_int_equal(eff.policy, WEFT_POLICY_PRIORITY);
	assert_true(eff.workers >= 1);
	assert_int_equal(eff.queue_capacity, 0);
	assert_rc(0, weft_rt_destroy(rt));

	assert_rc(WEFT_EINVAL, weft_rt_destroy(NULL));
	assert_rc(WEFT_EINVAL, weft_rt_destroy_ex(NULL, WEFT_DESTROY_DRAIN, NULL));
	assert_rc(WEFT_EINVAL, weft_rt_destroy_ex(NULL, WEFT_DESTROY_CANCEL, NULL));
}

static void null_post(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	weft_task t;
	assert_rc(0, weft_task_init(&t, noop, NULL));

	assert_rc(WEFT_EINVAL, weft_post(NULL, &t));
	assert_rc(WEFT_EINVAL, weft_post(rt, NULL));
	assert_rc(WEFT_EINVAL, weft_post(NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_post_wait(NULL, &t));
	assert_rc(WEFT_EINVAL, weft_post_wait(rt, NULL));
	assert_int_equal(weft_task_state_of(&t), WEFT_TASK_IDLE);

	/* A task whose function was never set: zeroed, or init refused. */
	weft_task bare;
	memset(&bare, 0, sizeof(bare));
	assert_rc(WEFT_EINVAL, weft_post(rt, &bare));
	assert_rc(WEFT_EINVAL, weft_post_wait(rt, &bare));
	assert_int_equal(weft_task_state_of(&bare), WEFT_TASK_IDLE);
	weft_task nofn;
	assert_rc(WEFT_EINVAL, weft_task_init(&nofn, NULL, NULL));
	assert_rc(WEFT_EINVAL, weft_task_init(NULL, noop, NULL));

	/* Nothing of the refused posts reached the runtime. */
	assert_rc(0, weft_wait_all(rt));
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.posted, 0);
	assert_int_equal(s.run, 0);

	/* The good task still posts and runs. */
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_rc(0, weft_rt_destroy(rt));
}

static void null_wait(void)
{
	assert_rc(WEFT_EINVAL, weft_wait(NULL));
	assert_rc(WEFT_EINVAL, weft_wait_all(NULL));
	/* A task that was never posted. */
	weft_task t;
	assert_rc(0, weft_task_init(&t, noop, NULL));
	assert_rc(WEFT_EINVAL, weft_wait(&t));
	weft_task zero;
	memset(&zero, 0, sizeof(zero));
	assert_rc(WEFT_EINVAL, weft_wait(&zero));
}

static void null_group(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	weft_group g;
	weft_task t;
	assert_rc(0, weft_group_init(&g));
	assert_rc(0, weft_task_init(&t, noop, NULL));

	assert_rc(WEFT_EINVAL, weft_group_init(NULL));
	assert_rc(WEFT_EINVAL, weft_group_wait(NULL));
	assert_int_equal(weft_group_pending(NULL), 0);
	assert_rc(WEFT_EINVAL, weft_post_in(rt, NULL, &t));
	assert_rc(WEFT_EINVAL, weft_post_in(NULL, &g, &t));
	assert_rc(WEFT_EINVAL, weft_post_in(rt, &g, NULL));
	weft_task bare;
	memset(&bare, 0, sizeof(bare));
	assert_rc(WEFT_EINVAL, weft_post_in(rt, &g, &bare));
	/* No refused post left a count in the group. */
	assert_int_equal(weft_group_pending(&g), 0);
	assert_rc(0, weft_group_wait(&g)); /* empty: returns at once */
	assert_int_equal(weft_task_state_of(&t), WEFT_TASK_IDLE);

	assert_rc(0, weft_post_in(rt, &g, &t));
	assert_rc(0, weft_group_wait(&g));
	assert_int_equal(weft_group_pending(&g), 0);
	assert_int_equal(weft_task_state_of(&t), WEFT_TASK_DONE);
	assert_rc(0, weft_rt_destroy(rt));
}

static void null_stats_config(void)
{
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	weft_stats s;
	weft_config out;
	assert_rc(WEFT_EINVAL, weft_stats_get(NULL, &s));
	assert_rc(WEFT_EINVAL, weft_stats_get(rt, NULL));
	assert_rc(WEFT_EINVAL, weft_stats_print(NULL, stdout));
	assert_rc(WEFT_EINVAL, weft_stats_print(rt, NULL));
	assert_rc(WEFT_EINVAL, weft_rt_config(NULL, &out));
	assert_rc(WEFT_EINVAL, weft_rt_config(rt, NULL));
	/* A bad destroy mode is refused and the runtime stays usable. */
	assert_rc(WEFT_EINVAL, weft_rt_destroy_ex(rt, (weft_destroy_mode)2, NULL));
	assert_rc(WEFT_EINVAL, weft_rt_destroy_ex(rt, (weft_destroy_mode)-1, NULL));
	weft_task t;
	assert_rc(0, weft_task_init(&t, noop, NULL));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ config fields */

static void bad_config(void)
{
	weft_config cfg;

	wt_config(&cfg);
	cfg.workers = -1;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.workers = -1000000;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.workers = 1025;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.workers = 1 << 30;
	expect_create_fails(&cfg, WEFT_EINVAL);

	wt_config(&cfg);
	cfg.queue_capacity = -1;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.queue_capacity = -1000;
	expect_create_fails(&cfg, WEFT_EINVAL);

	wt_config(&cfg);
	cfg.model = WEFT_MODEL_COUNT_;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.model = (weft_model)-1;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.model = (weft_model)12345;
	expect_create_fails(&cfg, WEFT_EINVAL);

	wt_config(&cfg);
	cfg.policy = WEFT_POLICY_COUNT_;
	expect_create_fails(&cfg, WEFT_EINVAL);
	cfg.policy = (weft_policy)-1;
	expect_create_fails(&cfg, WEFT_EINVAL);
}

/* The bounds themselves are accepted: 1024 workers (under spawn, which
 * creates no thread until a task is posted) and a huge capacity. */
static void config_limits(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_SPAWN;
	cfg.workers = 1024;
	cfg.queue_capacity = 1L << 40;
	weft_rt *rt = wt_create(&cfg);
	weft_config eff;
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_int_equal(eff.workers, 1024);
	assert_int_equal(eff.queue_capacity, 1L << 40);
	weft_task t;
	assert_rc(0, weft_task_init(&t, noop, NULL));
	assert_rc(0, weft_post(rt, &t));
	assert_rc(0, weft_wait(&t));
	assert_rc(0, weft_rt_destroy(rt));

	wt_config(&cfg);
	cfg.workers = 1;
	rt = wt_create(&cfg);
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_int_equal(eff.workers, 1);
	assert_rc(0, weft_rt_destroy(rt));
}

/* ------------------------------------------------------------ environment */

/* Sets var=value, expects weft_rt_create to fail with WEFT_EINVAL, and checks
 * that stderr names the variable, the value and every accepted value. */
static void expect_env_rejected(const char *var, const char *value, const char *const *accepted)
{
	assert_int_equal(setenv(var, value, 1), 0);
	weft_config cfg;
	wt_config(&cfg);
	wt_capture_begin();
	weft_rt *rt = (weft_rt *)&rt;
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	unsetenv(var);
	assert_rc(WEFT_EINVAL, rc);
	assert_null(rt);
	wt_assert_no_live_allocations();
	if (!strstr(err, var))
		fail_msg("stderr does not name %s: \"%s\"", var, err);
	char quoted[128];
	snprintf(quoted, sizeof(quoted), "\"%s\"", value);
	if (!strstr(err, quoted))
		fail_msg("stderr does not show the value %s: \"%s\"", quoted, err);
	for (const char *const *a = accepted; *a; a++)
		if (!strstr(err, *a))
			fail_msg("stderr does not list the accepted value \"%s\": \"%s\"", *a, err);
}

static void env_model(void)
{
	static const char *const accepted[] = {"threads", "spawn", NULL};
	expect_env_rejected("WEFT_MODEL", "bogus", accepted);
	expect_env_rejected("WEFT_MODEL", "THREADS", accepted);
}

/* mn takes priority and fifo only. A policy set in code for another model
 * gives way to fifo, with a notice, when WEFT_MODEL=mn comes from the
 * environment (the model was changed without editing the program); set in
 * code with the model, or through WEFT_POLICY, it is refused. */
static void mn_policies(void)
{
	static const weft_policy refused[] = {WEFT_POLICY_RANDOM, WEFT_POLICY_PSJF,
	                                      WEFT_POLICY_MLFQ};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		weft_config cfg;
		weft_config_init(&cfg);
		cfg.model = WEFT_MODEL_MN;
		cfg.policy = refused[i];
		weft_rt *rt = NULL;
		wt_capture_begin();
		int rc = weft_rt_create(&rt, &cfg);
		const char *err = wt_capture_end();
		assert_rc(WEFT_EINVAL, rc);
		assert_null(rt);
		assert_non_null(strstr(err, weft_policy_name(refused[i])));
		assert_non_null(strstr(err, "priority, fifo"));
		wt_assert_no_live_allocations();

		cfg.model = WEFT_MODEL_FIBERS;
		assert_int_equal(setenv("WEFT_MODEL", "mn", 1), 0);
		wt_capture_begin();
		rc = weft_rt_create(&rt, &cfg);
		err = wt_capture_end();
		assert_rc(0, rc);
		weft_config eff;
		assert_rc(0, weft_rt_config(rt, &eff));
		assert_int_equal(eff.model, WEFT_MODEL_MN);
		assert_int_equal(eff.policy, WEFT_POLICY_FIFO);
		assert_non_null(strstr(err, "using fifo"));
		assert_rc(0, weft_rt_destroy(rt));

		assert_int_equal(setenv("WEFT_POLICY", weft_policy_name(refused[i]), 1), 0);
		wt_capture_begin();
		rc = weft_rt_create(&rt, &cfg);
		wt_capture_end();
		unsetenv("WEFT_POLICY");
		unsetenv("WEFT_MODEL");
		assert_rc(WEFT_EINVAL, rc);
		wt_assert_no_live_allocations();
	}
}

static void env_workers(void)
{
	static const char *const accepted[] = {"1", "1024", NULL};
	expect_env_rejected("WEFT_WORKERS", "0", accepted);
	expect_env_rejected("WEFT_WORKERS", "abc", accepted);
	expect_env_rejected("WEFT_WORKERS", "-3", accepted);
	expect_env_rejected("WEFT_WORKERS", "1025", accepted);
	expect_env_rejected("WEFT_WORKERS", "4x", accepted);
	expect_env_rejected("WEFT_WORKERS", "99999999999999999999999", accepted);
}

static void env_policy(void)
{
	static const char *const accepted[] = {"priority", "fifo", NULL};
	expect_env_rejected("WEFT_POLICY", "x", accepted);
	expect_env_rejected("WEFT_POLICY", "lifo", accepted);
}

static void env_capacity(void)
{
	static const char *const accepted[] = {"0", "unbounded", "positive", NULL};
	expect_env_rejected("WEFT_QUEUE_CAPACITY", "-1", accepted);
	expect_env_rejected("WEFT_QUEUE_CAPACITY", "ten", accepted);
	expect_env_rejected("WEFT_QUEUE_CAPACITY", "1.5", accepted);
}

static void env_stats(void)
{
	static const char *const accepted[] = {"0", "1", NULL};
	expect_env_rejected("WEFT_STATS", "2", accepted);
	expect_env_rejected("WEFT_STATS", "yes", accepted);
	expect_env_rejected("WEFT_STATS", "-1", accepted);
}

/* An environment value wins over the field set in code. */
static void env_wins(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_THREADS;
	cfg.policy = WEFT_POLICY_PRIORITY;
	cfg.workers = 3;
	cfg.queue_capacity = 100;
	assert_int_equal(setenv("WEFT_WORKERS", "2", 1), 0);
	weft_rt *rt = wt_create(&cfg);
	weft_config eff;
	weft_stats s;
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(eff.workers, 2);
	assert_int_equal(s.workers, 2);
	assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_ENV);
	/* The others were not overridden. */
	assert_int_equal(eff.model, WEFT_MODEL_THREADS);
	assert_int_equal(eff.queue_capacity, 100);
	assert_rc(0, weft_rt_destroy(rt));

	assert_int_equal(setenv("WEFT_MODEL", "spawn", 1), 0);
	assert_int_equal(setenv("WEFT_POLICY", "fifo", 1), 0);
	assert_int_equal(setenv("WEFT_QUEUE_CAPACITY", "0", 1), 0);
	assert_int_equal(setenv("WEFT_WORKERS", "5", 1), 0);
	rt = wt_create(&cfg);
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(eff.model, WEFT_MODEL_SPAWN);
	assert_int_equal(eff.policy, WEFT_POLICY_FIFO);
	assert_int_equal(eff.queue_capacity, 0);
	assert_int_equal(eff.workers, 5);
	assert_int_equal(s.model, WEFT_MODEL_SPAWN);
	assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_ENV);
	assert_rc(0, weft_rt_destroy(rt));
	unsetenv("WEFT_MODEL");
	unsetenv("WEFT_POLICY");
	unsetenv("WEFT_QUEUE_CAPACITY");
	unsetenv("WEFT_WORKERS");

	/* Without the environment, the field set in code is used. */
	rt = wt_create(&cfg);
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(s.workers, 3);
	assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_CONFIG);
	assert_rc(0, weft_rt_destroy(rt));
}

/* WEFT_STATS=1 prints the statistics to stderr at destroy; cfg.stats too. */
static void env_stats_print(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.workers = 2;
	assert_int_equal(setenv("WEFT_STATS", "1", 1), 0);
	weft_rt *rt = wt_create(&cfg);
	unsetenv("WEFT_STATS");
	weft_task t[3];
	for (int i = 0; i < 3; i++) {
		assert_rc(0, weft_task_init(&t[i], noop, NULL));
		assert_rc(0, weft_post(rt, &t[i]));
	}
	assert_rc(0, weft_wait_all(rt));
	wt_capture_begin();
	int rc = weft_rt_destroy(rt);
	const char *err = wt_capture_end();
	assert_rc(0, rc);
	assert_non_null(strstr(err, "model threads"));
	assert_non_null(strstr(err, "from config"));
	assert_non_null(strstr(err, "posted 3, run 3"));

	/* WEFT_STATS=0 silences a cfg.stats set in code. */
	cfg.stats = 1;
	assert_int_equal(setenv("WEFT_STATS", "0", 1), 0);
	rt = wt_create(&cfg);
	unsetenv("WEFT_STATS");
	wt_capture_begin();
	rc = weft_rt_destroy(rt);
	err = wt_capture_end();
	assert_rc(0, rc);
	assert_null(strstr(err, "weft:"));

	/* cfg.stats alone prints. */
	rt = wt_create(&cfg);
	wt_capture_begin();
	rc = weft_rt_destroy(rt);
	err = wt_capture_end();
	assert_rc(0, rc);
	assert_non_null(strstr(err, "weft: model threads"));
}

/* cfg.workers 0: one per CPU this process may use, from the affinity mask or
 * a lower cgroup limit. */
static void default_workers(void)
{
	cpu_set_t set;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	int cpus = CPU_COUNT(&set);

	weft_config cfg;
	wt_config(&cfg);
	cfg.workers = 0;
	weft_rt *rt = wt_create(&cfg);
	weft_stats s;
	weft_config eff;
	assert_rc(0, weft_stats_get(rt, &s));
	assert_rc(0, weft_rt_config(rt, &eff));
	assert_int_equal(s.cpus_affinity, cpus);
	assert_int_equal(eff.workers, s.workers);
	if (s.workers_source == WEFT_WORKERS_FROM_AFFINITY) {
		assert_int_equal(s.workers, cpus);
		assert_true(s.cpus_cgroup == 0 || s.cpus_cgroup >= cpus);
	} else {
		assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_CGROUP);
		assert_int_equal(s.workers, s.cpus_cgroup);
		assert_true(s.cpus_cgroup < cpus);
	}
	assert_rc(0, weft_rt_destroy(rt));

	/* Narrow the mask to one CPU: one worker, from the affinity. */
	cpu_set_t one;
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set)) {
			CPU_SET(c, &one);
			break;
		}
	}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	rt = wt_create(&cfg);
	assert_rc(0, weft_stats_get(rt, &s));
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(s.cpus_affinity, 1);
	assert_int_equal(s.workers, 1);
	assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_AFFINITY);
	assert_rc(0, weft_rt_destroy(rt));
}

/* An empty variable (`WEFT_WORKERS=`, as a script that clears one leaves
 * it) is unset, for every WEFT_* variable: the code's value or the default
 * stays, and nothing is printed. */
static void env_empty_is_unset(void)
{
	static const char *const vars[] = {
	        "WEFT_MODEL",       "WEFT_POLICY",      "WEFT_WORKERS",       "WEFT_QUEUE_CAPACITY",
	        "WEFT_STATS",       "WEFT_STACK_SIZE",  "WEFT_SEED",          "WEFT_PREEMPT",
	        "WEFT_QUANTUM_US",  "WEFT_MLFQ_LEVELS", "WEFT_MLFQ_BOOST_US", "WEFT_TRACE",
	        "WEFT_TEST_FSROOT",
	};
	weft_config cfg;
	wt_config(&cfg);
	cfg.workers = 3;
	cfg.policy = WEFT_POLICY_FIFO;
	cfg.queue_capacity = 7;
	cfg.seed = 42;
	weft_rt *rt = wt_create(&cfg);
	weft_config want;
	assert_rc(0, weft_rt_config(rt, &want));
	assert_rc(0, weft_rt_destroy(rt));
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		assert_int_equal(setenv(vars[i], "", 1), 0);
		rt = NULL;
		wt_capture_begin();
		int rc = weft_rt_create(&rt, &cfg);
		const char *err = wt_capture_end();
		unsetenv(vars[i]);
		if (rc != 0)
			fail_msg("%s= (empty) refused: %s", vars[i], err);
		if (err[0])
			fail_msg("%s= (empty) printed: %s", vars[i], err);
		weft_config eff;
		assert_rc(0, weft_rt_config(rt, &eff));
		assert_int_equal(eff.model, want.model);
		assert_int_equal(eff.policy, want.policy);
		assert_int_equal(eff.workers, 3);
		assert_int_equal(eff.queue_capacity, 7);
		assert_int_equal(eff.stats, want.stats);
		assert_int_equal(eff.stack_size, want.stack_size);
		assert_int_equal(eff.seed, 42);
		assert_int_equal(eff.preempt, want.preempt);
		assert_int_equal(eff.quantum_us, want.quantum_us);
		assert_int_equal(eff.mlfq_levels, want.mlfq_levels);
		assert_int_equal(eff.mlfq_boost_us, want.mlfq_boost_us);
		assert_null(eff.trace_path);
		weft_stats st;
		assert_rc(0, weft_stats_get(rt, &st));
		assert_int_equal(st.workers_source, WEFT_WORKERS_FROM_CONFIG);
		assert_rc(0, weft_rt_destroy(rt));
	}
}

/* ------------------------------------------------------------ cgroups */

/* A fake file-system root for the cgroup reader (WEFT_TEST_FSROOT): the
 * process's /proc/self/cgroup and mountinfo, and the cgroup files, as a
 * container or a hybrid v1/v2 host shows them. */
static char fake_root[PATH_MAX];

static void fake_mkdirs(const char *rel)
{
	char path[2 * PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	for (char *p = path + strlen(fake_root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* Writes text to fake_root/rel, creating its directories. */
static void fake_file(const char *rel, const char *text)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", rel);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		fake_mkdirs(dir);
	}
	char path[2 * PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static void fake_begin(void)
{
	snprintf(fake_root, sizeof(fake_root), "%s/weft-cgroup-XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(fake_root));
	assert_int_equal(setenv("WEFT_TEST_FSROOT", fake_root, 1), 0);
}

static void fake_end(void)
{
	unsetenv("WEFT_TEST_FSROOT");
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
	assert_int_equal(system(cmd), 0);
}

/* The mountinfo lines of a hybrid host: v1 cpu,cpuacct and the v2 tree at
 * /sys/fs/cgroup/unified (which has no cpu controller there). */
#define MOUNT_V1                                                                               \
	"35 25 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - " \
	"cgroup cgroup rw,cpu,cpuacct\n"
#define MOUNT_V1_MEMORY                                                                          \
	"36 25 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup " \
	"cgroup rw,memory\n"
#define MOUNT_V2_UNIFIED                                                                           \
	"30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 " \
	"cgroup2 rw,nsdelegate\n"
#define MOUNT_V2                                                                                   \
	"30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 " \
	"rw,nsdelegate\n"
#define MOUNT_ROOT "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"

/* Creates a runtime with the default worker count under the fake root and
 * checks the cgroup limit it saw (whole CPUs, 0: none), the worker count
 * and its source, and that the statistics header says `says`. */
static void expect_cgroup(int cpus, const char *says)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.workers = 0;
	weft_rt *rt = wt_create(&cfg);
	weft_stats s;
	assert_rc(0, weft_stats_get(rt, &s));
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_rc(0, weft_stats_print(rt, f));
	rewind(f);
	char buf[4096];
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	assert_rc(0, weft_rt_destroy(rt));
	if (s.cpus_cgroup != cpus)
		fail_msg("cgroup limit %d CPUs, expected %d:\n%s", s.cpus_cgroup, cpus, buf);
	if (cpus > 0 && cpus < s.cpus_affinity) {
		assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_CGROUP);
		assert_int_equal(s.workers, cpus);
	} else {
		assert_int_equal(s.workers_source, WEFT_WORKERS_FROM_AFFINITY);
		assert_int_equal(s.workers, s.cpus_affinity);
	}
	if (!strstr(buf, says))
		fail_msg("the statistics do not say \"%s\":\n%s", says, buf);
}

/* cgroup v1 alone: the cpu controller's cfs quota over its period. */
static void cgroup_v1(void)
{
	fake_begin();
	fake_file("proc/self/cgroup", "5:memory:/job\n4:cpu,cpuacct:/job\n1:name=systemd:/job\n");
	fake_file("proc/self/mountinfo", MOUNT_ROOT MOUNT_V1_MEMORY MOUNT_V1);
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
	fake_file("sys/fs/cgroup/memory/job/cpu.cfs_quota_us", "10000\n"); /* not cpu's */
	fake_file("sys/fs/cgroup/memory/job/cpu.cfs_period_us", "100000\n");
	expect_cgroup(1, "cgroup v1 cpu quota 0.5 CPU (cpu.cfs_quota_us 50000 / cpu.cfs_period_us "
	                 "100000 in /job)");
	/* -1: no quota; nor has the parent. */
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	expect_cgroup(0, "from affinity");
	expect_cgroup(0, "no cgroup CPU limit");
	/* A parent's quota applies to its children. */
	fake_file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
	expect_cgroup(3, "cgroup v1 cpu quota 2.5 CPU");
	fake_end();
}

/* cgroup v2 alone: cpu.max of the process's cgroup and of its parents, the
 * tightest, "max" meaning none. */
static void cgroup_v2(void)
{
	fake_begin();
	fake_file("proc/self/cgroup", "0::/user.slice/job.scope\n");
	fake_file("proc/self/mountinfo", MOUNT_ROOT MOUNT_V2);
	fake_file("sys/fs/cgroup/user.slice/job.scope/cpu.max", "max 100000\n");
	fake_file("sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
	expect_cgroup(0, "no cgroup CPU limit");
	fake_file("sys/fs/cgroup/user.slice/cpu.max", "25000 100000\n");
	expect_cgroup(1, "cgroup v2 cpu.max 0.25 CPU (25000 100000 in /user.slice)");
	fake_file("sys/fs/cgroup/user.slice/job.scope/cpu.max", "20000 100000\n");
	expect_cgroup(1, "cgroup v2 cpu.max 0.2 CPU (20000 100000 in /user.slice/job.scope)");
	fake_file("sys/fs/cgroup/user.slice/job.scope/cpu.max", "300000 100000\n");
	fake_file("sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
	expect_cgroup(3, "cgroup v2 cpu.max 3 CPU");
	fake_end();
}

/* The reported bug: a hybrid host lists a `0::` line too, for a v2 tree
 * without the cpu controller; the v1 quota must still count. With limits
 * in both, the tightest wins and the statistics say which. */
static void cgroup_both(void)
{
	fake_begin();
	fake_file("proc/self/cgroup",
	          "12:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n0::/docker/abc\n");
	fake_file("proc/self/mountinfo", MOUNT_ROOT MOUNT_V2_UNIFIED MOUNT_V1 MOUNT_V1_MEMORY);
	fake_mkdirs("sys/fs/cgroup/unified/docker/abc");
	fake_file("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
	expect_cgroup(1, "1 worker from cgroup (cgroup v1 cpu quota 0.5 CPU");
	/* v2 tighter than v1. */
	fake_file("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "400000\n");
	fake_file("sys/fs/cgroup/unified/docker/abc/cpu.max", "30000 100000\n");
	expect_cgroup(1, "cgroup v2 cpu.max 0.3 CPU");
	/* v1 tighter than v2. */
	fake_file("sys/fs/cgroup/unified/docker/abc/cpu.max", "500000 100000\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
	expect_cgroup(3, "cgroup v1 cpu quota 3 CPU");
	fake_end();
}

/* In a container the mount's root is the container's cgroup: the path in
 * /proc/self/cgroup is found below it, at the mount point itself. */
static void cgroup_container(void)
{
	fake_begin();
	fake_file("proc/self/cgroup", "4:cpu,cpuacct:/kubepods/pod1/c1\n");
	fake_file("proc/self/mountinfo",
	          MOUNT_ROOT "40 30 0:30 /kubepods/pod1/c1 /sys/fs/cgroup/cpu\\040acct ro,nosuid - "
	                     "cgroup cgroup rw,cpuacct,cpu\n");
	fake_file("sys/fs/cgroup/cpu acct/cpu.cfs_quota_us", "50000\n");
	fake_file("sys/fs/cgroup/cpu acct/cpu.cfs_period_us", "100000\n");
	expect_cgroup(1, "cgroup v1 cpu quota 0.5 CPU (cpu.cfs_quota_us 50000 / cpu.cfs_period_us "
	                 "100000 in /kubepods/pod1/c1)");
	/* A cgroup outside the mount's root is not read. */
	fake_file("proc/self/cgroup", "4:cpu,cpuacct:/elsewhere\n");
	expect_cgroup(0, "no cgroup CPU limit");
	fake_end();
}

/* Files that cannot be read or parsed set no limit, and neither does a
 * missing /proc/self/cgroup; without mountinfo the usual mount points are
 * tried. */
static void cgroup_unreadable(void)
{
	fake_begin();
	expect_cgroup(0, "no cgroup CPU limit"); /* empty root */
	fake_file("proc/self/cgroup", "4:cpu,cpuacct:/job\n0::/job\n");
	fake_file("proc/self/mountinfo", MOUNT_ROOT MOUNT_V1 MOUNT_V2_UNIFIED);
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "lots\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
	fake_mkdirs("sys/fs/cgroup/unified/job/cpu.max"); /* a directory: unreadable */
	fake_file("sys/fs/cgroup/unified/cpu.max", "\n");
	expect_cgroup(0, "no cgroup CPU limit");
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n");
	fake_file("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "0\n");
	expect_cgroup(0, "no cgroup CPU limit");
	/* No mountinfo: /sys/fs/cgroup/cpu (v1) and /sys/fs/cgroup (v2). */
	char path[2 * PATH_MAX];
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", fake_root);
	assert_int_equal(unlink(path), 0);
	fake_file("sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "50000\n");
	fake_file("sys/fs/cgroup/cpu/job/cpu.cfs_period_us", "100000\n");
	expect_cgroup(1, "cgroup v1 cpu quota 0.5 CPU");
	fake_end();
}

/* ------------------------------------------------------------ models */

static int count_of(const char *haystack, const char *needle)
{
	int n = 0;
	for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* WEFT_WORKERS=8 under fibers, which runs one worker: one notice naming
 * both, and the statistics show the one worker and why. */
static void workers_not_applicable(void)
{
	assert_int_equal(setenv("WEFT_MODEL", "fibers", 1), 0);
	assert_int_equal(setenv("WEFT_WORKERS", "8", 1), 0);
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = NULL;
	wt_capture_begin();
	int rc = weft_rt_create(&rt, &cfg);
	const char *err = wt_capture_end();
	unsetenv("WEFT_MODEL");
	unsetenv("WEFT_WORKERS");
	assert_rc(0, rc);
	assert_int_equal(count_of(err, "weft:"), 1);
	assert_non_null(strstr(err,
	                       "WEFT_WORKERS=8 does not apply to the fibers model, which runs 1 "
	                       "worker\n"));
	assert_int_equal(wt_workers(rt), 1);
	wt_capture_begin();
	assert_rc(0, weft_stats_print(rt, stderr));
	err = wt_capture_end();
	assert_non_null(strstr(err, "1 worker from WEFT_WORKERS"));
	assert_non_null(strstr(err, "the fibers model runs 1, not the 8 asked"));
	assert_rc(0, weft_rt_destroy(rt));

	/* What the model runs anyway is not worth a notice. */
	assert_int_equal(setenv("WEFT_WORKERS", "1", 1), 0);
	cfg.model = WEFT_MODEL_FIBERS;
	wt_capture_begin();
	rc = weft_rt_create(&rt, &cfg);
	err = wt_capture_end();
	unsetenv("WEFT_WORKERS");
	assert_rc(0, rc);
	assert_null(strstr(err, "weft:"));
	assert_rc(0, weft_rt_destroy(rt));
}

/* WEFT_PREEMPT=timer and the psjf policy under the kernel-thread models,
 * which have no quantum clock: refused, or run without and said once. The
 * notice comes from config.c once the model's configure reports what it
 * runs (preemption off, another policy); until the model does, the case
 * says so and skips. */
static void preempt_not_applicable(void)
{
	static const weft_model models[] = {WEFT_MODEL_THREADS, WEFT_MODEL_SPAWN};
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		const char *name = weft_model_name(models[i]);
		weft_config cfg;
		wt_config(&cfg);
		cfg.model = models[i];
		assert_int_equal(setenv("WEFT_PREEMPT", "timer", 1), 0);
		weft_rt *rt = NULL;
		wt_capture_begin();
		int rc = weft_rt_create(&rt, &cfg);
		const char *err = wt_capture_end();
		unsetenv("WEFT_PREEMPT");
		if (rc == 0) {
			weft_config eff;
			assert_rc(0, weft_rt_config(rt, &eff));
			assert_rc(0, weft_rt_destroy(rt));
			if (eff.preempt == WEFT_PREEMPT_TIMER)
				WT_SKIP("the %s model's configure does not turn preemption off yet",
				        name);
			assert_int_equal(count_of(err, "weft:"), 1);
			assert_non_null(strstr(err, "does not apply to the"));
			assert_non_null(strstr(err, name));
		} else {
			assert_rc(WEFT_EINVAL, rc);
			assert_non_null(strstr(err, "WEFT_PREEMPT"));
			assert_non_null(strstr(err, name));
		}

		assert_int_equal(setenv("WEFT_POLICY", "psjf", 1), 0);
		wt_capture_begin();
		rc = weft_rt_create(&rt, &cfg);
		err = wt_capture_end();
		unsetenv("WEFT_POLICY");
		if (rc == 0) {
			weft_config eff;
			assert_rc(0, weft_rt_config(rt, &eff));
			assert_rc(0, weft_rt_destroy(rt));
			if (eff.policy == WEFT_POLICY_PSJF)
				WT_SKIP("the %s model's configure accepts psjf, which it cannot "
				        "charge, yet",
				        name);
			assert_int_equal(count_of(err, "weft:"), 1);
			assert_non_null(strstr(err, "WEFT_POLICY=psjf does not apply to the"));
		} else {
			assert_rc(WEFT_EINVAL, rc);
			assert_non_null(strstr(err, "psjf"));
			assert_non_null(strstr(err, name));
		}
	}
}

/* The statistics header shows what is in force: the model, the workers
 * and why, the policy, preemption and the quantum. */
static void stats_header(void)
{
	weft_config cfg;
	wt_config(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.workers = 1;
	cfg.policy = WEFT_POLICY_MLFQ;
	cfg.preempt = WEFT_PREEMPT_TIMER;
	cfg.quantum_us = 2000;
	weft_rt *rt = wt_create(&cfg);
	wt_capture_begin();
	assert_rc(0, weft_stats_print(rt, stderr));
	const char *err = wt_capture_end();
	assert_rc(0, weft_rt_destroy(rt));
	static const char *const needles[] = {"weft: model fibers, 1 worker from config (affinity ",
	                                      "policy mlfq", "preemption timer", "quantum 2000 us",
	                                      NULL};
	for (const char *const *n = needles; *n; n++)
		if (!strstr(err, *n))
			fail_msg("the statistics header lacks \"%s\":\n%s", *n, err);
}

/* ------------------------------------------------------------ names */

static void error_strings(void)
{
	static const struct {
		int code;
		const char *name;
	} codes[] = {
#define WT_CODE(name, value, msg) {value, "WEFT_" #name},
	        WEFT_ERRNO_MAP(WT_CODE)
#undef WT_CODE
	};
	size_t n = sizeof(codes) / sizeof(codes[0]);
	assert_int_equal(n, 14); /* keep in step with WEFT_ERRNO_MAP */
	for (size_t i = 0; i < n; i++) {
		const char *msg = weft_strerror(codes[i].code);
		assert_non_null(msg);
		assert_true(strlen(msg) > 0);
		assert_string_not_equal(msg, "unknown weft error");
		assert_string_equal(weft_err_name(codes[i].code), codes[i].name);
		for (size_t j = 0; j < i; j++) {
			assert_int_not_equal(codes[i].code, codes[j].code);
			assert_string_not_equal(msg, weft_strerror(codes[j].code));
		}
	}
	assert_string_equal(weft_err_name(WEFT_OK), "WEFT_OK");
	assert_string_equal(weft_err_name(WEFT_EFULL), "WEFT_EFULL");
	assert_string_equal(weft_strerror(0), "success");
	assert_string_equal(weft_strerror(WEFT_EFULL), "the ready queue is full");
	static const int unknown[] = {1, 7, -14, -100, 12345, -2147483647 - 1, 2147483647};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		assert_string_equal(weft_strerror(unknown[i]), "unknown weft error");
		const char *name = weft_err_name(unknown[i]);
		assert_non_null(name);
		for (size_t j = 0; j < n; j++)
			assert_string_not_equal(name, codes[j].name);
	}
}

static void names(void)
{
	assert_string_equal(weft_model_name(WEFT_MODEL_THREADS), "threads");
	assert_string_equal(weft_model_name(WEFT_MODEL_SPAWN), "spawn");
	assert_null(weft_model_name(WEFT_MODEL_COUNT_));
	assert_null(weft_model_name((weft_model)-1));
	assert_string_equal(weft_policy_name(WEFT_POLICY_PRIORITY), "priority");
	assert_string_equal(weft_policy_name(WEFT_POLICY_FIFO), "fifo");
	assert_null(weft_policy_name(WEFT_POLICY_COUNT_));
	assert_null(weft_policy_name((weft_policy)-1));
	assert_string_equal(weft_workers_source_name(WEFT_WORKERS_FROM_AFFINITY), "affinity");
	assert_string_equal(weft_workers_source_name(WEFT_WORKERS_FROM_CGROUP), "cgroup");
	assert_string_equal(weft_workers_source_name(WEFT_WORKERS_FROM_CONFIG), "config");
	assert_string_equal(weft_workers_source_name(WEFT_WORKERS_FROM_ENV), "WEFT_WORKERS");
	assert_null(weft_workers_source_name(WEFT_WORKERS_SOURCE_COUNT_));
	assert_null(weft_workers_source_name((weft_workers_source)-1));
	assert_string_equal(weft_task_state_name(WEFT_TASK_IDLE), "idle");
	assert_string_equal(weft_task_state_name(WEFT_TASK_QUEUED), "queued");
	assert_string_equal(weft_task_state_name(WEFT_TASK_RUNNING), "running");
	assert_string_equal(weft_task_state_name(WEFT_TASK_DONE), "done");
	assert_string_equal(weft_task_state_name(WEFT_TASK_CANCELLED), "cancelled");
	assert_null(weft_task_state_name(WEFT_TASK_STATE_COUNT_));
	assert_null(weft_task_state_name((weft_task_state)-1));
}

/* ------------------------------------------------------------ tasks */

static void task_api(void)
{
	weft_task t;
	memset(&t, 0xAB, sizeof(t)); /* init must not depend on prior contents */
	int arg = 0;
	assert_rc(0, weft_task_init(&t, noop, &arg));
	assert_int_equal(weft_task_state_of(&t), WEFT_TASK_IDLE);
	assert_int_equal(weft_task_priority(&t), 0);
	assert_rc(0, weft_task_set_priority(&t, -7));
	assert_int_equal(weft_task_priority(&t), -7);
	assert_rc(0, weft_task_set_priority(&t, INT64_MAX));
	assert_true(weft_task_priority(&t) == INT64_MAX);
	assert_rc(0, weft_task_set_priority(&t, INT64_MIN));
	assert_true(weft_task_priority(&t) == INT64_MIN);
	assert_rc(WEFT_EINVAL, weft_task_set_priority(NULL, 1));
	assert_int_equal(weft_task_priority(NULL), 0);
	assert_int_equal(weft_task_state_of(NULL), WEFT_TASK_IDLE);

	/* Outside any task. */
	assert_int_equal(weft_worker_index(), -1);
	assert_null(weft_rt_current());
}

/* ------------------------------------------------------------ allocator */

static void *plain_alloc(size_t size, void *ctx)
{
	(void)ctx;
	return malloc(size);
}

static void plain_free(void *p, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	free(p);
}

static void allocator_api(void)
{
	/* Incomplete allocators are refused. */
	weft_allocator a = {.alloc_fn = plain_alloc, .free_fn = NULL};
	assert_rc(WEFT_EINVAL, weft_set_allocator(&a));
	a = (weft_allocator){.alloc_fn = NULL, .free_fn = plain_free};
	assert_rc(WEFT_EINVAL, weft_set_allocator(&a));

	/* While a runtime lives, the allocator cannot change. */
	weft_config cfg;
	wt_config(&cfg);
	weft_rt *rt = wt_create(&cfg);
	assert_true(wt_alloc_live_blocks() > 0);
	assert_int_equal(weft__live_allocations(), wt_alloc_live_blocks());
	a = (weft_allocator){.alloc_fn = plain_alloc, .free_fn = plain_free};
	assert_rc(WEFT_EBUSY, weft_set_allocator(&a));
	assert_rc(WEFT_EBUSY, weft_set_allocator(NULL));
	assert_rc(0, weft_rt_destroy(rt));
	wt_assert_no_live_allocations();

	/* Two runtimes at once, each freeing its own. */
	weft_rt *r1 = wt_create(&cfg);
	cfg.model = WEFT_MODEL_SPAWN;
	weft_rt *r2 = wt_create(&cfg);
	assert_rc(0, weft_rt_destroy(r1));
	assert_rc(WEFT_EBUSY, weft_set_allocator(NULL));
	assert_rc(0, weft_rt_destroy(r2));
	wt_assert_no_live_allocations();
	/* The harness restores its allocator at the end (it checks the count). */
}

/* weft_allocator promises nothing about alignment, and malloc/calloc (the
 * default) only give alignof(max_align_t), 16 bytes on x86-64. weft's own
 * structures are over-aligned (WEFT__ALIGNED, 64 bytes), so weft must align
 * what it gets, or not ask for more than it can get. This allocator returns
 * blocks that are 16-byte but never 64-byte aligned. */
typedef struct misaligned_hdr {
	void *raw;
	size_t size;
} misaligned_hdr;

static _Atomic long misaligned_live;

static void *misaligned_alloc(size_t size, void *ctx)
{
	(void)ctx;
	size_t total = (size + 128 + 63) / 64 * 64; /* aligned_alloc wants a multiple */
	unsigned char *raw = aligned_alloc(64, total);
	if (!raw)
		return NULL;
	unsigned char *p = raw + 64 + 16; /* 16 mod 64 */
	misaligned_hdr *h = (misaligned_hdr *)(p - sizeof(misaligned_hdr));
	h->raw = raw;
	h->size = size;
	atomic_fetch_add(&misaligned_live, 1);
	return p;
}

static void misaligned_free(void *p, size_t size, void *ctx)
{
	(void)ctx;
	misaligned_hdr *h = (misaligned_hdr *)((unsigned char *)p - sizeof(misaligned_hdr));
	if (h->size != size)
		wt_async_fail(__FILE__, __LINE__, "freed %zu bytes as %zu", h->size, size);
	atomic_fetch_sub(&misaligned_live, 1);
	free(h->raw);
}

static void allocator_alignment(void)
{
	assert_rc(0, weft_set_allocator(NULL));
	weft_allocator a = {.alloc_fn = misaligned_alloc, .free_fn = misaligned_free};
	assert_rc(0, weft_set_allocator(&a));
	for (int m = 0; m < WEFT_MODEL_COUNT_; m++) {
		weft_config cfg;
		wt_config(&cfg);
		cfg.model = (weft_model)m;
		weft_rt *rt = wt_create(&cfg);
		uintptr_t rt_addr = (uintptr_t)rt, state_addr = (uintptr_t)rt->model_state;
		weft_task t;
		assert_rc(0, weft_task_init(&t, noop, NULL));
		assert_rc(0, weft_post(rt, &t));
		assert_rc(0, weft_wait_all(rt));
		assert_rc(0, weft_rt_destroy(rt));
		if (rt_addr % _Alignof(struct weft_rt) != 0)
			fail_msg(
			        "model %s: the weft_rt is at %#lx, not aligned to the %zu bytes "
			        "its type requires (the allocator returned 16-byte aligned memory)",
			        weft_model_name((weft_model)m), (unsigned long)rt_addr,
			        _Alignof(struct weft_rt));
		if (state_addr % 64 != 0 && m == WEFT_MODEL_THREADS)
			fail_msg("model threads: its state is at %#lx, not 64-byte aligned",
			         (unsigned long)state_addr);
	}
	assert_int_equal(atomic_load(&misaligned_live), 0);
	assert_rc(0, weft_set_allocator(NULL));
}

WT_CASES(WT_CASE(null_create), WT_CASE(null_post), WT_CASE(null_wait), WT_CASE(null_group),
         WT_CASE(null_stats_config), WT_CASE(bad_config), WT_CASE(config_limits),
         WT_CASE(env_model), WT_CASE(mn_policies), WT_CASE(env_workers), WT_CASE(env_policy),
         WT_CASE(env_capacity), WT_CASE(env_stats), WT_CASE(env_wins), WT_CASE(env_stats_print),
         WT_CASE(default_workers), WT_CASE(error_strings), WT_CASE(names), WT_CASE(task_api),
         WT_CASE(allocator_api), WT_CASE(allocator_alignment), WT_CASE(env_empty_is_unset),
         WT_CASE(cgroup_v1), WT_CASE(cgroup_v2), WT_CASE(cgroup_both), WT_CASE(cgroup_container),
         WT_CASE(cgroup_unreadable), WT_CASE(workers_not_applicable),
         WT_CASE(preempt_not_applicable), WT_CASE(stats_header));
