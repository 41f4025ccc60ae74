/* Configuration: defaults, then fields set in code, then WEFT_* environment
 * variables (read here, once, at runtime creation), then machine defaults
 * for whatever is still unset. docs/configuration.md catalogues the
 * variables; keep the two in step. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

static const char *const model_names[] = {
        [WEFT_MODEL_THREADS] = "threads",
        [WEFT_MODEL_SPAWN] = "spawn",
        [WEFT_MODEL_FIBERS] = "fibers",
        [WEFT_MODEL_MN] = "mn",
};
_Static_assert(sizeof(model_names) / sizeof(model_names[0]) == WEFT_MODEL_COUNT_,
               "a name per model");

static const char *const policy_names[] = {
        [WEFT_POLICY_PRIORITY] = "priority", [WEFT_POLICY_FIFO] = "fifo",
        [WEFT_POLICY_RANDOM] = "random",     [WEFT_POLICY_PSJF] = "psjf",
        [WEFT_POLICY_MLFQ] = "mlfq",
};
_Static_assert(sizeof(policy_names) / sizeof(policy_names[0]) == WEFT_POLICY_COUNT_,
               "a name per policy");

static const char *const preempt_names[] = {
        [WEFT_PREEMPT_OFF] = "off",
        [WEFT_PREEMPT_TIMER] = "timer",
};
_Static_assert(sizeof(preempt_names) / sizeof(preempt_names[0]) == WEFT_PREEMPT_COUNT_,
               "a name per preemption mode");

_Static_assert(sizeof(void *) != 8 || sizeof(weft_config) == 96,
               "weft_config keeps its size (ABI)");

static const char *const workers_source_names[] = {
        [WEFT_WORKERS_FROM_AFFINITY] = "affinity",
        [WEFT_WORKERS_FROM_CGROUP] = "cgroup",
        [WEFT_WORKERS_FROM_CONFIG] = "config",
        [WEFT_WORKERS_FROM_ENV] = "WEFT_WORKERS",
};
_Static_assert(sizeof(workers_source_names) / sizeof(workers_source_names[0]) ==
                       WEFT_WORKERS_SOURCE_COUNT_,
               "a name per workers source");

int weft_config_init(weft_config *cfg)
{
	if (!cfg)
		return WEFT_EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->model = WEFT_MODEL_THREADS;
	cfg->policy = WEFT_POLICY_PRIORITY;
	return 0;
}

const char *weft_model_name(weft_model model)
{
	return (unsigned)model < WEFT_MODEL_COUNT_ ? model_names[model] : NULL;
}

const char *weft_policy_name(weft_policy policy)
{
	return (unsigned)policy < WEFT_POLICY_COUNT_ ? policy_names[policy] : NULL;
}

const char *weft_preempt_name(weft_preempt preempt)
{
	return (unsigned)preempt < WEFT_PREEMPT_COUNT_ ? preempt_names[preempt] : NULL;
}

const char *weft_workers_source_name(weft_workers_source source)
{
	return (unsigned)source < WEFT_WORKERS_SOURCE_COUNT_ ? workers_source_names[source] : NULL;
}

/* ------------------------------------------------------------ environment */

static int bad_env(const char *var, const char *value, const char *accepted)
{
	fprintf(stderr, "weft: invalid %s=\"%s\": accepted values are %s\n", var, value, accepted);
	return WEFT_EINVAL;
}

/* Parses a whole decimal integer in [lo, hi]. */
static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int env_name(const char *var, const char *const *names, int count, int *out)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	for (int i = 0; i < count; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	char accepted[256] = "";
	for (int i = 0; i < count; i++) {
		strncat(accepted, i ? ", " : "", sizeof(accepted) - strlen(accepted) - 1);
		strncat(accepted, names[i], sizeof(accepted) - strlen(accepted) - 1);
	}
	return bad_env(var, v, accepted);
}

static int env_long(const char *var, long lo, long hi, const char *accepted, long *out, bool *set)
{
	const char *v = getenv(var);
	if (!v)
		return 0;
	if (!parse_long(v, lo, hi, out))
		return bad_env(var, v, accepted);
	if (set)
		*set = true;
	return 0;
}

/* ------------------------------------------------------------ machine */

static int affinity_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		int n = CPU_COUNT(&set);
		if (n > 0)
			return n;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* The CPU limit of the cgroup (v2 cpu.max, or v1 cfs quota) this process is
 * in, rounded up to whole CPUs; 0 when there is none. Walks up the v2
 * hierarchy, because a parent's limit applies too. */
static int read_quota(const char *path_fmt, const char *dir, long *quota, long *period)
{
	char path[PATH_MAX + 64]; /* dir plus the file name */
	snprintf(path, sizeof(path), path_fmt, dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char q[32] = "";
	int n = fscanf(f, "%31s %ld", q, period);
	fclose(f);
	if (n != 2)
		return -1;
	*quota = strcmp(q, "max") == 0 ? -1 : strtol(q, NULL, 10);
	return 0;
}

static int cgroup_cpus(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return 0;
	char line[PATH_MAX], dir[PATH_MAX] = "";
	bool v2 = false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(dir, sizeof(dir), "%s", line + 3);
			v2 = true;
			break;
		}
		char *ctrl = strchr(line, ':');
		char *path = ctrl ? strchr(ctrl + 1, ':') : NULL;
		if (path && strstr(ctrl, "cpu"))
			snprintf(dir, sizeof(dir), "%s", path + 1);
	}
	fclose(f);

	double best = 0;
	long quota, period;
	if (v2) {
		for (;;) {
			if (read_quota("/sys/fs/cgroup%s/cpu.max", dir, &quota, &period) == 0 &&
			    quota > 0 && period > 0) {
				double cpus = (double)quota / (double)period;
				if (best == 0 || cpus < best)
					best = cpus;
			}
			char *slash = strrchr(dir, '/');
			if (!slash || dir[0] == '\0')
				break;
			*slash = '\0';
		}
	} else if (dir[0]) {
		char qpath[PATH_MAX + 64];
		snprintf(qpath, sizeof(qpath), "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", dir);
		FILE *q = fopen(qpath, "re"), *p = NULL;
		if (q) {
			snprintf(qpath, sizeof(qpath), "/sys/fs/cgroup/cpu%s/cpu.cfs_period_us",
			         dir);
			p = fopen(qpath, "re");
		}
		if (q && p && fscanf(q, "%ld", &quota) == 1 && fscanf(p, "%ld", &period) == 1 &&
		    quota > 0 && period > 0)
			best = (double)quota / (double)period;
		if (q)
			fclose(q);
		if (p)
			fclose(p);
	}
	if (best <= 0)
		return 0;
	int cpus = (int)best;
	return (double)cpus < best ? cpus + 1 : cpus;
}

/* ------------------------------------------------------------ resolve */

int weft__config_resolve(weft_rt *rt, const weft_config *in)
{
	weft_config cfg;
	if (in)
		cfg = *in;
	else
		weft_config_init(&cfg);

	if ((unsigned)cfg.model >= WEFT_MODEL_COUNT_ ||
	    (unsigned)cfg.policy >= WEFT_POLICY_COUNT_ || cfg.workers < 0 ||
	    cfg.workers > WEFT__MAX_WORKERS || cfg.queue_capacity < 0 ||
	    (cfg.stack_size != 0 &&
	     (cfg.stack_size < WEFT__MIN_STACK || cfg.stack_size > WEFT__MAX_STACK)) ||
	    (unsigned)cfg.preempt >= WEFT_PREEMPT_COUNT_ ||
	    (cfg.quantum_us != 0 &&
	     (cfg.quantum_us < WEFT__MIN_QUANTUM_US || cfg.quantum_us > WEFT__MAX_QUANTUM_US)) ||
	    cfg.mlfq_levels > WEFT__MAX_LEVELS ||
	    (cfg.mlfq_boost_us != 0 && cfg.mlfq_boost_us < WEFT__MIN_QUANTUM_US))
		return WEFT_EINVAL;

	int model = cfg.model, policy = cfg.policy, preempt = cfg.preempt;
	long quantum = cfg.quantum_us ? cfg.quantum_us : WEFT__DEFAULT_QUANTUM_US;
	long levels = cfg.mlfq_levels ? cfg.mlfq_levels : WEFT__DEFAULT_LEVELS;
	long boost = cfg.mlfq_boost_us ? cfg.mlfq_boost_us : WEFT__DEFAULT_BOOST_US;
	long workers = 0, capacity = cfg.queue_capacity, stats = cfg.stats != 0;
	long stack = (long)cfg.stack_size, seed = (long)(cfg.seed & LONG_MAX);
	bool workers_env = false;
	int rc;
	if ((rc = env_name("WEFT_MODEL", model_names, WEFT_MODEL_COUNT_, &model)) ||
	    (rc = env_name("WEFT_POLICY", policy_names, WEFT_POLICY_COUNT_, &policy)) ||
	    (rc = env_long("WEFT_WORKERS", 1, WEFT__MAX_WORKERS, "integers from 1 to 1024",
	                   &workers, &workers_env)) ||
	    (rc = env_long("WEFT_QUEUE_CAPACITY", 0, LONG_MAX,
	                   "0 (unbounded) or a positive integer", &capacity, NULL)) ||
	    (rc = env_long("WEFT_STATS", 0, 1, "0 or 1", &stats, NULL)) ||
	    (rc = env_long("WEFT_STACK_SIZE", WEFT__MIN_STACK, WEFT__MAX_STACK,
	                   "bytes from 16384 to 1073741824", &stack, NULL)) ||
	    (rc = env_long("WEFT_SEED", 1, LONG_MAX, "integers from 1 to 9223372036854775807",
	                   &seed, NULL)) ||
	    (rc = env_name("WEFT_PREEMPT", preempt_names, WEFT_PREEMPT_COUNT_, &preempt)) ||
	    (rc = env_long("WEFT_QUANTUM_US", WEFT__MIN_QUANTUM_US, WEFT__MAX_QUANTUM_US,
	                   "microseconds from 100 to 10000000", &quantum, NULL)) ||
	    (rc = env_long("WEFT_MLFQ_LEVELS", 1, WEFT__MAX_LEVELS, "integers from 1 to 64",
	                   &levels, NULL)) ||
	    (rc = env_long("WEFT_MLFQ_BOOST_US", WEFT__MIN_QUANTUM_US, UINT32_MAX,
	                   "microseconds from 100 to 4294967295", &boost, NULL)))
		return rc;
	rt->seed_given = seed != 0;
	rt->model_from_env = getenv("WEFT_MODEL") != NULL;
	rt->policy_from_env = getenv("WEFT_POLICY") != NULL;
	if (seed == 0) { /* pick one; the stats show it so a run can be replayed */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (long)(((uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
		               (uint64_t)getpid() << 20) &
		              LONG_MAX);
		seed += seed == 0;
	}
	cfg.seed = (uint64_t)seed;
	cfg.stack_size = stack ? (size_t)stack : WEFT__DEFAULT_STACK;
	cfg.model = (weft_model)model;
	cfg.policy = (weft_policy)policy;
	cfg.queue_capacity = capacity;
	cfg.stats = (int)stats;
	cfg.preempt = (weft_preempt)preempt;
	cfg.quantum_us = (uint32_t)quantum;
	cfg.mlfq_levels = (uint32_t)levels;
	cfg.mlfq_boost_us = (uint32_t)boost;
	const char *trace = getenv("WEFT_TRACE");
	if (trace)
		cfg.trace_path = trace[0] ? trace : NULL;

	rt->cpus_affinity = affinity_cpus();
	rt->cpus_cgroup = cgroup_cpus();
	if (workers_env) {
		cfg.workers = (int)workers;
		rt->workers_source = WEFT_WORKERS_FROM_ENV;
	} else if (cfg.workers > 0) {
		rt->workers_source = WEFT_WORKERS_FROM_CONFIG;
	} else if (rt->cpus_cgroup > 0 && rt->cpus_cgroup < rt->cpus_affinity) {
		cfg.workers = rt->cpus_cgroup;
		rt->workers_source = WEFT_WORKERS_FROM_CGROUP;
	} else {
		cfg.workers = rt->cpus_affinity;
		rt->workers_source = WEFT_WORKERS_FROM_AFFINITY;
	}
	rt->cfg = cfg;
	return 0;
}
