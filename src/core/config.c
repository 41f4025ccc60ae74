/* Configuration: defaults, then fields set in code, then WEFT_* environment
 * variables (read here, once, at runtime creation), then machine defaults
 * for whatever is still unset. docs/configuration.md catalogues the
 * variables; keep the two in step. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/os.h"
#include "io/files.h"
#include "io/pool.h"

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

/* snprintf without the compiler's truncation warnings: whether all of it
 * fitted (a path that does not fit is not read; a message is cut). */
__attribute__((format(printf, 3, 4))) static bool format_to(char *buf, size_t size, const char *fmt,
                                                            ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

/* ------------------------------------------------------------ environment */

/* A WEFT_* variable's value; NULL when unset or empty: an empty variable
 * (`WEFT_WORKERS=`, as a script that clears one leaves it) means unset. */
static const char *env(const char *var)
{
	const char *v = getenv(var);
	return v && v[0] ? v : NULL;
}

static int bad_env(const char *var, const char *value, const char *accepted)
{
	weft__log(WEFT_LOG_ERROR, "weft: invalid %s=\"%s\": accepted values are %s\n", var, value,
	          accepted);
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

/* WEFT_PIN: 0 or off, 1 or cores (weft_pin). */
static int env_pin(int *pin)
{
	const char *v = env("WEFT_PIN");
	if (!v)
		return 0;
	if (strcmp(v, "0") == 0 || strcmp(v, "off") == 0)
		*pin = WEFT_PIN_OFF;
	else if (strcmp(v, "1") == 0 || strcmp(v, "cores") == 0)
		*pin = WEFT_PIN_CORES;
	else
		return bad_env("WEFT_PIN", v, "0 or off, 1 or cores");
	return 0;
}

static int env_name(const char *var, const char *const *names, int count, int *out)
{
	const char *v = env(var);
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
	const char *v = env(var);
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
#ifdef WEFT_OS_LINUX
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		int n = CPU_COUNT(&set);
		if (n > 0)
			return n;
	}
#endif
	/* POSIX: the CPUs online, whatever the process may use. */
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* The CPU limit of the cgroups this process is in, v1 and v2 alike (a
 * hybrid system lists both in /proc/self/cgroup: a `0::` line for the v2
 * hierarchy, which may have no cpu controller, and `N:cpu,cpuacct:` for
 * the v1 one that does). Each hierarchy is found in /proc/self/mountinfo
 * (cgroup2, or cgroup with the cpu option), the process's cgroup path is
 * mapped under its mount (less the mount's own root, as in a container),
 * and every directory from there up to the mount is read, because a
 * parent's limit applies too: v2 cpu.max ("max 100000" or "50000 100000"),
 * v1 cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. The tightest
 * limit wins. A file that cannot be read or parsed sets no limit. All
 * paths are under `root` ("" in production; the tests point it at a fake
 * tree with WEFT_TEST_FSROOT). */
/* Buffers are sized for real cgroup paths (a longer one is not read) and
 * kept small: a runtime may be created on a fiber's stack. */
enum {
	CG_PATH = 1024, /* a cgroup's path, as /proc/self/cgroup names it */
	CG_MOUNT = 512, /* a mount point, or the hierarchy's root mounted there */
	CG_LINE = 1536, /* a line of /proc/self/cgroup or mountinfo */
	CG_FILE = 2560, /* root, mount point, cgroup path and file name */
};

typedef struct cgroup_limit {
	int version;        /* 1 or 2; 0: no limit found */
	long quota, period; /* the limiting cgroup's values, µs */
	char dir[256];      /* that cgroup, as /proc/self/cgroup names it */
} cgroup_limit;

#ifdef WEFT_OS_LINUX
typedef struct cgroup_mount {
	bool found;
	char point[CG_MOUNT]; /* where it is mounted */
	char root[CG_MOUNT];  /* the hierarchy's directory mounted there */
} cgroup_mount;

/* Reads a line of f into buf without its newline; a line longer than buf
 * is skipped whole. false at the end. */
static bool next_line(FILE *f, char *buf, size_t size)
{
	while (fgets(buf, (int)size, f)) {
		size_t n = strcspn(buf, "\n");
		if (buf[n] == '\n' || feof(f)) {
			buf[n] = '\0';
			return true;
		}
		int c;
		while ((c = getc(f)) != EOF && c != '\n')
			;
	}
	return false;
}

static bool read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = next_line(f, buf, size);
	fclose(f);
	return ok;
}

/* Whether the comma-separated list has the exact token. */
static bool has_token(const char *list, const char *token)
{
	size_t n = strlen(token);
	for (const char *p = list;; p++) {
		if (strncmp(p, token, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
		p = strchr(p, ',');
		if (!p)
			return false;
	}
}

/* mountinfo escapes a space as \040 (octal): undone in place. */
static void unescape(char *s)
{
	char *out = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* The process's cgroup in the v1 hierarchy with the cpu controller and in
 * the v2 one ("" when not listed); false when /proc/self/cgroup cannot be
 * read. Lines are hierarchy-id:controllers:path, v2's being 0::path. */
static bool find_cgroups(const char *root, char *v1, char *v2)
{
	char line[CG_LINE];
	v1[0] = v2[0] = '\0';
	if (!format_to(line, sizeof(line), "%s/proc/self/cgroup", root))
		return false;
	FILE *f = fopen(line, "re");
	if (!f)
		return false;
	while (next_line(f, line, sizeof(line))) {
		char *ctrl = strchr(line, ':');
		char *cg = ctrl ? strchr(ctrl + 1, ':') : NULL;
		if (!cg || cg[1] != '/')
			continue;
		*ctrl++ = '\0';
		*cg++ = '\0';
		if (strcmp(line, "0") == 0 && ctrl[0] == '\0')
			format_to(v2, CG_PATH, "%s", cg);
		else if (has_token(ctrl, "cpu"))
			format_to(v1, CG_PATH, "%s", cg);
	}
	fclose(f);
	return true;
}

/* Finds the v1 cpu and the v2 mounts; false when mountinfo is unreadable.
 * Lines are: id parent major:minor root point options [optional...] -
 * type source super-options. */
static bool find_mounts(const char *root, cgroup_mount *v1, cgroup_mount *v2)
{
	char line[CG_LINE];
	if (!format_to(line, sizeof(line), "%s/proc/self/mountinfo", root))
		return false;
	FILE *f = fopen(line, "re");
	if (!f)
		return false;
	while (next_line(f, line, sizeof(line))) {
		char *field[6] = {0}, *save = NULL, *tok = strtok_r(line, " ", &save);
		int n = 0;
		while (tok && n < 6) {
			field[n++] = tok;
			tok = strtok_r(NULL, " ", &save);
		}
		while (tok && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " ", &save);
		char *type = tok ? strtok_r(NULL, " ", &save) : NULL;
		char *source = type ? strtok_r(NULL, " ", &save) : NULL;
		char *super = source ? strtok_r(NULL, " ", &save) : NULL;
		if (n < 5 || !super)
			continue;
		cgroup_mount *m = NULL;
		if (strcmp(type, "cgroup2") == 0)
			m = v2;
		else if (strcmp(type, "cgroup") == 0 && has_token(super, "cpu"))
			m = v1;
		if (!m || m->found)
			continue;
		unescape(field[3]);
		unescape(field[4]);
		m->found = format_to(m->root, sizeof(m->root), "%s", field[3]) &&
		           format_to(m->point, sizeof(m->point), "%s", field[4]);
	}
	fclose(f);
	return true;
}

/* Reads the limit of the cgroup directory in dir (len characters, room
 * for a file name after them); false when it sets none. */
static bool read_limit(char *dir, size_t len, int version, long *quota, long *period)
{
	char text[128];
	if (version == 2) {
		char q[32];
		return format_to(dir + len, CG_FILE - len, "/cpu.max") &&
		       read_line(dir, text, sizeof(text)) &&
		       sscanf(text, "%31s %ld", q, period) == 2 && strcmp(q, "max") != 0 &&
		       parse_long(q, 1, LONG_MAX, quota) && *period > 0;
	}
	return format_to(dir + len, CG_FILE - len, "/cpu.cfs_quota_us") &&
	       read_line(dir, text, sizeof(text)) && parse_long(text, -1, LONG_MAX, quota) &&
	       *quota > 0 && format_to(dir + len, CG_FILE - len, "/cpu.cfs_period_us") &&
	       read_line(dir, text, sizeof(text)) && parse_long(text, 1, LONG_MAX, period);
}

/* Walks the process's cgroup `cg` of one hierarchy mounted at m, from it
 * up to the mount, keeping the tightest limit in *best. */
static void walk_cgroup(const char *root, int version, const cgroup_mount *m, const char *cg,
                        cgroup_limit *best)
{
	/* The part of cg below the mount's root (all of it when that is /). */
	size_t rl = strcmp(m->root, "/") == 0 ? 0 : strlen(m->root);
	if (rl && (strncmp(cg, m->root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0')))
		return; /* not under this mount: nothing here to read */
	char rel[CG_PATH];
	format_to(rel, sizeof(rel), "%s", cg + rl);
	for (;;) {
		bool top = rel[0] == '\0' || strcmp(rel, "/") == 0;
		char dir[CG_FILE];
		long quota, period;
		if (format_to(dir, sizeof(dir), "%s%s%s", root, m->point, top ? "" : rel) &&
		    read_limit(dir, strlen(dir), version, &quota, &period) &&
		    (best->version == 0 ||
		     (double)quota / (double)period < (double)best->quota / (double)best->period)) {
			best->version = version;
			best->quota = quota;
			best->period = period;
			format_to(best->dir, sizeof(best->dir), "%.*s%s", (int)rl, cg,
			          top ? (rl ? "" : "/") : rel);
		}
		if (top)
			break;
		char *slash = strrchr(rel, '/');
		slash[slash == rel ? 1 : 0] = '\0';
	}
}

static void cgroup_cpu_limit(const char *root, cgroup_limit *best)
{
	memset(best, 0, sizeof(*best));
	char v1_path[CG_PATH], v2_path[CG_PATH];
	if (!find_cgroups(root, v1_path, v2_path) || (!v1_path[0] && !v2_path[0]))
		return;
	cgroup_mount v1 = {0}, v2 = {0};
	if (!find_mounts(root, &v1, &v2)) { /* the usual places */
		v1 = (cgroup_mount){.found = true, .point = "/sys/fs/cgroup/cpu", .root = "/"};
		v2 = (cgroup_mount){.found = true, .point = "/sys/fs/cgroup", .root = "/"};
	}
	if (v1_path[0] && v1.found)
		walk_cgroup(root, 1, &v1, v1_path, best);
	if (v2_path[0] && v2.found)
		walk_cgroup(root, 2, &v2, v2_path, best);
}
#else
/* cgroups are Linux's: no limit elsewhere (and in the portable build). */
static void cgroup_cpu_limit(const char *root, cgroup_limit *best)
{
	(void)root;
	memset(best, 0, sizeof(*best));
}
#endif

/* The limit in whole CPUs, rounded up (half a CPU still needs a worker). */
static int limit_cpus(const cgroup_limit *l)
{
	if (l->version == 0)
		return 0;
	long cpus = l->quota / l->period + (l->quota % l->period != 0);
	return cpus > WEFT__MAX_WORKERS ? WEFT__MAX_WORKERS : (int)cpus;
}

/* "0.5", "2", "1.25": the limit in CPUs, without trailing zeros. */
static void format_cpus(char *buf, size_t size, const cgroup_limit *l)
{
	format_to(buf, size, "%.2f", (double)l->quota / (double)l->period);
	char *dot = strchr(buf, '.');
	if (!dot)
		return;
	char *end = buf + strlen(buf);
	while (end > dot + 1 && end[-1] == '0')
		*--end = '\0';
	if (end == dot + 1)
		*dot = '\0';
}

/* Says which cgroup limit there is, e.g. "cgroup v1 cpu quota 0.5 CPU
 * (cpu.cfs_quota_us 50000 / cpu.cfs_period_us 100000 in /a)". */
static void describe_limit(char *buf, size_t size, const cgroup_limit *l)
{
	if (l->version == 0) {
		format_to(buf, size, "no cgroup CPU limit");
		return;
	}
	char cpus[32];
	format_cpus(cpus, sizeof(cpus), l);
	if (l->version == 1)
		format_to(
		        buf, size,
		        "cgroup v1 cpu quota %s CPU (cpu.cfs_quota_us %ld / cpu.cfs_period_us %ld "
		        "in %s)",
		        cpus, l->quota, l->period, l->dir);
	else
		format_to(buf, size, "cgroup v2 cpu.max %s CPU (%ld %ld in %s)", cpus, l->quota,
		          l->period, l->dir);
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
	    (unsigned)cfg.preempt >= WEFT_PREEMPT_COUNT_ || (unsigned)cfg.pin >= WEFT_PIN_COUNT_ ||
	    (cfg.quantum_us != 0 &&
	     (cfg.quantum_us < WEFT__MIN_QUANTUM_US || cfg.quantum_us > WEFT__MAX_QUANTUM_US)) ||
	    cfg.mlfq_levels > WEFT__MAX_LEVELS ||
	    (cfg.mlfq_boost_us != 0 && cfg.mlfq_boost_us < WEFT__MIN_QUANTUM_US))
		return WEFT_EINVAL;

	int model = cfg.model, policy = cfg.policy, preempt = cfg.preempt, pin = cfg.pin;
	long quantum = cfg.quantum_us ? cfg.quantum_us : WEFT__DEFAULT_QUANTUM_US;
	long levels = cfg.mlfq_levels ? cfg.mlfq_levels : WEFT__DEFAULT_LEVELS;
	long boost = cfg.mlfq_boost_us ? cfg.mlfq_boost_us : WEFT__DEFAULT_BOOST_US;
	long workers = 0, capacity = cfg.queue_capacity, stats = cfg.stats != 0;
	long stack = (long)cfg.stack_size, seed = (long)(cfg.seed & LONG_MAX);
	long standins = WEFT__MAX_STANDINS, grace = WEFT__DEFAULT_GRACE_US; /* core/standin.c */
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
	    (rc = env_pin(&pin)) ||
	    (rc = env_long("WEFT_QUANTUM_US", WEFT__MIN_QUANTUM_US, WEFT__MAX_QUANTUM_US,
	                   "microseconds from 100 to 10000000", &quantum, NULL)) ||
	    (rc = env_long("WEFT_MLFQ_LEVELS", 1, WEFT__MAX_LEVELS, "integers from 1 to 64",
	                   &levels, NULL)) ||
	    (rc = env_long("WEFT_MLFQ_BOOST_US", WEFT__MIN_QUANTUM_US, UINT32_MAX,
	                   "microseconds from 100 to 4294967295", &boost, NULL)) ||
	    (rc = env_long("WEFT_STANDINS", 0, WEFT__MAX_STANDINS, "integers from 0 to 256",
	                   &standins, NULL)) ||
	    (rc = env_long("WEFT_STANDIN_GRACE_US", 0, 1000000, "microseconds from 0 to 1000000",
	                   &grace, NULL)))
		return rc;
	rt->standin_cap = (int)standins;
	rt->standin_grace_ns = grace * 1000;
	rt->seed_given = seed != 0;
	rt->model_from_env = env("WEFT_MODEL") != NULL;
	rt->policy_from_env = env("WEFT_POLICY") != NULL;
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
	cfg.pin = (weft_pin)pin;
	cfg.quantum_us = (uint32_t)quantum;
	cfg.mlfq_levels = (uint32_t)levels;
	cfg.mlfq_boost_us = (uint32_t)boost;
	const char *trace = env("WEFT_TRACE");
	if (trace)
		cfg.trace_path = trace;
	/* WEFT_IO: the fiber models' file backend (io/files.h); no field of
	 * weft_config, the environment only. */
	static const char *const io_names[] = {"auto", "uring", "epoll"};
	int io = WEFT__IO_AUTO;
	if ((rc = env_name("WEFT_IO", io_names, WEFT__IO_WANT_COUNT_, &io)) != 0)
		return rc;
	rt->io_want = io;
	long blocking = WEFT__POOL_MAX;
	if ((rc = env_long("WEFT_BLOCKING_THREADS", 1, 4096, "integers from 1 to 4096", &blocking,
	                   NULL)) != 0)
		return rc;
	rt->blocking_max = (int)blocking;

	const char *fsroot = env("WEFT_TEST_FSROOT");
	cgroup_limit limit;
	cgroup_cpu_limit(fsroot ? fsroot : "", &limit);
	rt->cpus_affinity = affinity_cpus();
	rt->cpus_cgroup = limit_cpus(&limit);
	char cgroup[sizeof(rt->workers_detail)];
	describe_limit(cgroup, sizeof(cgroup), &limit);
	char *why = rt->workers_detail;
	size_t why_size = sizeof(rt->workers_detail);
	if (workers_env) {
		cfg.workers = (int)workers;
		rt->workers_source = WEFT_WORKERS_FROM_ENV;
	} else if (cfg.workers > 0) {
		rt->workers_source = WEFT_WORKERS_FROM_CONFIG;
	} else if (rt->cpus_cgroup > 0 && rt->cpus_cgroup < rt->cpus_affinity) {
		cfg.workers = rt->cpus_cgroup;
		rt->workers_source = WEFT_WORKERS_FROM_CGROUP;
		format_to(why, why_size, "%s, rounded up; affinity %d CPUs", cgroup,
		          rt->cpus_affinity);
	} else {
		cfg.workers = rt->cpus_affinity;
		rt->workers_source = WEFT_WORKERS_FROM_AFFINITY;
		format_to(why, why_size, "%d CPUs; %s%s", rt->cpus_affinity, cgroup,
		          limit.version ? ", not lower" : "");
	}
	if (rt->workers_source == WEFT_WORKERS_FROM_ENV ||
	    rt->workers_source == WEFT_WORKERS_FROM_CONFIG)
		format_to(why, why_size, "affinity %d CPUs, %s", rt->cpus_affinity, cgroup);
	rt->cfg = cfg;
	return 0;
}

/* ------------------------------------------------------------ the model */

int weft__config_run_to_completion(weft_rt *rt)
{
	rt->cfg.preempt = WEFT_PREEMPT_OFF;
	weft_policy p = rt->cfg.policy;
	if (p != WEFT_POLICY_PSJF && p != WEFT_POLICY_MLFQ)
		return 0;
	if (!rt->policy_from_env) /* else weft__config_model says it */
		weft__log(WEFT_LOG_NOTICE,
		          "weft: the %s model runs every task to completion, so the %s policy the "
		          "program sets (it orders by quanta used) does not apply: using fifo\n",
		          weft_model_name(rt->cfg.model), weft_policy_name(p));
	rt->cfg.policy = WEFT_POLICY_FIFO;
	return 0;
}

int weft__config_model(weft_rt *rt)
{
	const weft_config asked = rt->cfg;
	if (rt->model->configure) {
		int rc = rt->model->configure(rt);
		if (rc)
			return rc;
	}
	/* What the model changed, said once, here: the statistics header then
	 * shows what is in force. */
	const char *model = weft_model_name(rt->cfg.model);
	if (rt->cfg.workers != asked.workers) {
		if (rt->workers_source == WEFT_WORKERS_FROM_ENV)
			weft__log(
			        WEFT_LOG_NOTICE,
			        "weft: WEFT_WORKERS=%d does not apply to the %s model, which runs "
			        "%d worker%s\n",
			        asked.workers, model, rt->cfg.workers,
			        rt->cfg.workers == 1 ? "" : "s");
		bool asked_for = rt->workers_source == WEFT_WORKERS_FROM_ENV ||
		                 rt->workers_source == WEFT_WORKERS_FROM_CONFIG;
		size_t used = strlen(rt->workers_detail);
		format_to(rt->workers_detail + used, sizeof(rt->workers_detail) - used,
		          "; the %s model runs %d, not the %d %s", model, rt->cfg.workers,
		          asked.workers, asked_for ? "asked" : "found");
	}
	if (asked.preempt != WEFT_PREEMPT_OFF && rt->cfg.preempt == WEFT_PREEMPT_OFF)
		weft__log(WEFT_LOG_NOTICE,
		          "weft: preemption (WEFT_PREEMPT=%s) does not apply to the %s model: its "
		          "tasks run without it\n",
		          weft_preempt_name(asked.preempt), model);
	if (asked.policy != rt->cfg.policy && rt->policy_from_env)
		weft__log(WEFT_LOG_NOTICE,
		          "weft: WEFT_POLICY=%s does not apply to the %s model: using %s\n",
		          weft_policy_name(asked.policy), model, weft_policy_name(rt->cfg.policy));
	return 0;
}
