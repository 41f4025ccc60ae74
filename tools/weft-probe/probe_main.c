/* weft-probe: command line, experiment table, output and the Markdown
 * report. The measurements live in probe_os.c, probe_tlb.c and
 * probe_threads.c; see probe.h for how they report. */
#define _GNU_SOURCE
#include "probe.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

#include "../../apps/common/cli.h"

typedef struct row {
	char metric[112];
	char unit[16];
	char seed[128];
	double med, min, max;
	int reps;
} row;

typedef struct experiment {
	const char *name;
	const char *title;
	const char *how; /* one paragraph for the report: what and how */
	void (*run)(probe *p);
} experiment;

typedef struct section {
	const experiment *e;
	row *rows;
	int nrows, cap;
	char *md; /* Markdown for the report, from open_memstream */
	size_t md_len;
	FILE *mdf;
	double seconds; /* wall time the experiment took */
} section;

static const experiment experiments[] = {
        {"timer", "resolution and cost of clock_gettime",
         "Calls clock_gettime(CLOCK_MONOTONIC) back to back. The cost is the time of a block of "
         "calls divided by their number; the delta is the difference between two successive "
         "readings (what seed 002's clockTest printed); the resolution is what clock_getres "
         "claims and the smallest non-zero delta seen.",
         probe_timer},
        {"syscall", "a minimal system call (SYS_gettid)",
         "Times a block of syscall(SYS_gettid) calls (the raw system call, not a cached libc "
         "value) and divides by their number, like seed 002's syscall.c. getppid() is shown as a "
         "second minimal system call.",
         probe_syscall},
        {"ctxsw", "context switch: pipes between processes, futex between threads",
         "Two parties hand a token back and forth; one round trip is two switches, so the figure "
         "is the round-trip time divided by two. Pipes: parent and forked child, one byte each "
         "way. Futex: two threads of one process waiting and waking on one shared word. Each is "
         "run with both parties pinned (sched_setaffinity) to one CPU, pinned to two different "
         "CPUs, and unpinned. The naive pipe method of seed 002 is reproduced too: wall time "
         "minus the CPU time of both processes, divided by the switches.",
         probe_ctxsw},
        {"tlb", "TLB reach: access cost against the number of pages touched",
         "Touches one int per 4 KiB page over N pages, N = 1, 2, 4, ..., repeatedly, and reports "
         "ns per access (OSTEP's tlb.c, which seed 002 ran). Memory comes from mmap with "
         "MADV_NOHUGEPAGE so that every page needs its own TLB entry. Two columns: the seed's "
         "method (the same offset in every page, so every access falls in the same cache set) "
         "and a staggered offset (page i touches cache line i mod 64), which separates cache-set "
         "conflicts from TLB misses.",
         probe_tlb},
        {"create", "thread creation and destruction: pthread vs weft fiber",
         "Creates N threads that do nothing, then joins them all (seed 003 experiment 5); the "
         "figure is the total divided by N. The weft fiber version initialises and posts N tasks "
         "on one runtime with cfg.model = WEFT_MODEL_FIBERS and waits with weft_wait_all (the "
         "runtime is created once, outside the timing, and its create+destroy is timed apart).",
         probe_create},
        {"yield", "yield cost: weft fibers vs kernel threads",
         "Two fibers on one fibers-model runtime call weft_yield() in a loop: each call switches "
         "to the other fiber, so time / calls is the cost of one yield (one switch). The same "
         "with two pthreads pinned to one CPU calling sched_yield(), and one fiber yielding with "
         "nobody else ready.",
         probe_yield},
        {"yieldfreq", "the yield-frequency experiment",
         "Two fibers each count to a fixed number of iterations and call weft_yield() every K "
         "iterations, K = 1, 10, 100, 1000, 10000 (seed 003 experiment 4). The figure is the "
         "time until both are done, and ns per iteration.",
         probe_yieldfreq},
        {"switch", "context-switch overhead with and without switching",
         "Seed 003 experiment 2: counting to 100,000 in one fiber without switching, then two "
         "fibers that take turns, each incrementing the shared counter once and yielding. The "
         "difference divided by the number of yields is the overhead of one switch.",
         probe_switch},
        {"memory", "memory per thread: RSS with N parked fibers vs N parked pthreads",
         "In a fresh forked process per repetition, reads RSS (/proc/self/smaps_rollup) before and "
         "after N tasks on a fibers runtime have all blocked on a weft_sem, and likewise for N "
         "pthreads blocked on a semaphore (seed 003 experiment 3 read RSS before and after its "
         "threads ran).",
         probe_memory},
};
#define NEXP ((int)(sizeof(experiments) / sizeof(experiments[0])))

static section sections[NEXP];
static int nsections;

/* ---- time and statistics ------------------------------------------------ */

double probe_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double probe_median(const double *v, int n, double *min, double *max)
{
	double s[PROBE_MAX_REPS];
	if (n < 1)
		return 0;
	if (n > PROBE_MAX_REPS)
		n = PROBE_MAX_REPS;
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	if (min)
		*min = s[0];
	if (max)
		*max = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- output ----------------------------------------------------------- */

static void fmt_val(char *buf, size_t len, double v)
{
	double a = v < 0 ? -v : v;
	if (a >= 1000)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 100)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3g", v);
}

void probe_row(probe *p, const char *metric, const char *unit, const double *samples, int n,
               const char *seed)
{
	section *s = p->sect;
	if (s->nrows == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->rows = realloc(s->rows, (size_t)s->cap * sizeof(*s->rows));
		if (!s->rows) {
			perror(PROBE_NAME);
			exit(1);
		}
	}
	row *r = &s->rows[s->nrows++];
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	snprintf(r->seed, sizeof(r->seed), "%s", seed ? seed : "");
	r->reps = n;
	r->med = probe_median(samples, n, &r->min, &r->max);

	if (p->csv) {
		/* metric and seed may hold commas: quote them */
		printf("%s,\"%s\",%s,%d,%.6g,%.6g,%.6g,\"%s\"\n", s->e->name, r->metric, r->unit,
		       r->reps, r->med, r->min, r->max, r->seed);
		return;
	}
	char med[32], mn[32], mx[32];
	fmt_val(med, sizeof(med), r->med);
	fmt_val(mn, sizeof(mn), r->min);
	fmt_val(mx, sizeof(mx), r->max);
	printf("  %-54s %10s %-5s [%s .. %s] x%d", r->metric, med, r->unit, mn, mx, r->reps);
	if (r->seed[0])
		printf("   seed: %s", r->seed);
	printf("\n");
	fflush(stdout);
}

static void vnote(probe *p, int print, int report, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	if (report)
		vfprintf(p->sect->mdf, fmt, ap);
	if (print && !p->csv) {
		vprintf(fmt, ap2);
		fflush(stdout);
	}
	va_end(ap2);
}

void probe_note(probe *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (!p->csv)
		printf("  note: ");
	vnote(p, 1, 1, fmt, ap);
	va_end(ap);
	fprintf(p->sect->mdf, "\n\n");
	if (!p->csv)
		printf("\n");
}

void probe_md(probe *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnote(p, 0, 1, fmt, ap);
	va_end(ap);
}

void probe_text(probe *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnote(p, 1, 0, fmt, ap);
	va_end(ap);
}

char *probe_asset_path(const probe *p, const char *suffix)
{
	if (!p->report)
		return NULL;
	size_t n = strlen(p->report);
	if (n > 3 && strcmp(p->report + n - 3, ".md") == 0)
		n -= 3;
	char *path = malloc(n + strlen(suffix) + 2);
	if (path)
		sprintf(path, "%.*s-%s", (int)n, p->report, suffix);
	return path;
}

/* ---- processes and CPUs ------------------------------------------------- */

int probe_pin(const probe *p, int cpu)
{
	cpu_set_t set;
	if (cpu < 0) {
		set = p->allowed;
	} else {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
	}
	return sched_setaffinity(0, sizeof(set), &set);
}

int probe_in_child(int (*fn)(void *arg, double *out, int n), void *arg, double *out, int n)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		close(fd[0]);
		int rc = fn(arg, out, n);
		if (rc == 0 && write(fd[1], out, (size_t)n * sizeof(*out)) !=
		                       (ssize_t)((size_t)n * sizeof(*out)))
			rc = 1;
		_exit(rc ? 1 : 0);
	}
	close(fd[1]);
	size_t want = (size_t)n * sizeof(*out), got = 0;
	while (got < want) {
		ssize_t r = read(fd[0], (char *)out + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return got == want && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---- the report ----------------------------------------------------------- */

static void md_escape_pipes(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
}

static void md_row(FILE *f, const row *r, const char *exp)
{
	char med[32], mn[32], mx[32];
	fmt_val(med, sizeof(med), r->med);
	fmt_val(mn, sizeof(mn), r->min);
	fmt_val(mx, sizeof(mx), r->max);
	fprintf(f, "| ");
	if (exp)
		fprintf(f, "%s | ", exp);
	md_escape_pipes(f, r->metric);
	fprintf(f, " | %s %s | %s .. %s | %d | ", med, r->unit, mn, mx, r->reps);
	md_escape_pipes(f, r->seed[0] ? r->seed : "-");
	fprintf(f, " |\n");
}

static void cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *v = strchr(line, ':');
			if (v) {
				v += 1 + (v[1] == ' ');
				v[strcspn(v, "\n")] = 0;
				snprintf(buf, len, "%s", v);
			}
			break;
		}
	}
	fclose(f);
}

static const char *build_kind(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return "sanitizer build: the figures are not the machine's";
#elif defined(__OPTIMIZE__)
	return "optimised build";
#else
	return "unoptimised build";
#endif
}

/* The 1-minute load average, to show how busy the machine was. */
static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static double load_start;

/* The report, opened before the experiments (an unwritable path fails at
 * once, not after a minute of measuring); written and closed at the end. */
static FILE *report_file;

static int write_report(const probe *p, double total_s)
{
	FILE *f = report_file;
	report_file = NULL;
	struct utsname u;
	char cpu[160];
	char date[64] = "?";
	time_t now = time(NULL);
	struct tm tm;
	if (localtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %z", &tm);
	cpu_model(cpu, sizeof(cpu));
	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));

	fprintf(f, "# weft-probe report\n\n");
	fprintf(f, "- date: %s\n", date);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	fprintf(f, "- machine: %s, %ld CPU%s online, %d in this process's affinity mask\n", cpu,
	        online, cli_plural(online), p->ncpus);
	fprintf(f, "- kernel: %s %s %s\n", u.sysname, u.release, u.machine);
	fprintf(f, "- weft %d.%d.%d, %s; %d repetition%s per figure%s; total %.1f s\n",
	        WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, build_kind(), p->reps,
	        cli_plural(p->reps),
	        p->quick ? ", --quick sizes (smoke test: the figures mean little)" : "", total_s);
	double load_end = loadavg();
	fprintf(f, "- load average (1 min) at start %.2f, at end %.2f%s\n", load_start, load_end,
	        load_start > p->ncpus || load_end > p->ncpus
	                ? ": above the CPU count, other processes competed with the measurements"
	                : "");
	fprintf(f, "\nEvery figure is the median of its repetitions, with the smallest and "
	           "largest beside it. \"Seed\" is the figure the seed's report gives for the "
	           "same experiment, measured on other hardware (seed 002: a VirtualBox Ubuntu "
	           "VM, gcc -O0; seed 003: a university server running a 32-bit user-level "
	           "thread library).\n\n");

	fprintf(f, "## Summary\n\n| experiment | what | median | min .. max | reps | seed |\n"
	           "|---|---|---|---|---|---|\n");
	for (int i = 0; i < nsections; i++)
		for (int j = 0; j < sections[i].nrows; j++)
			md_row(f, &sections[i].rows[j], sections[i].e->name);

	for (int i = 0; i < nsections; i++) {
		const section *s = &sections[i];
		fprintf(f, "\n## %s: %s\n\n%s\n\n", s->e->name, s->e->title, s->e->how);
		if (s->nrows) {
			fprintf(f, "| what | median | min .. max | reps | seed |\n"
			           "|---|---|---|---|---|\n");
			for (int j = 0; j < s->nrows; j++)
				md_row(f, &s->rows[j], NULL);
			fprintf(f, "\n");
		}
		if (s->md_len)
			fwrite(s->md, 1, s->md_len, f);
		fprintf(f, "(%.1f s)\n", s->seconds);
	}
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, PROBE_NAME ": cannot write the report '%s': %s\n", p->report,
		        strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- command line -------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROBE_NAME " [options] <experiment>... | all | list\n"
	        "\n"
	        "Measures what the seeds measured (timer, system call, context switch, TLB,\n"
	        "thread creation, yield, memory per thread) and prints the median, min and\n"
	        "max over repetitions next to the seed's figure.\n"
	        "\n"
	        "  all              every experiment\n"
	        "  list             the experiments, one per line\n"
	        "  <experiment>     one or more of the names `list` prints\n"
	        "\n"
	        "options:\n"
	        "  --reps N         repetitions per figure (1..%d; default 5, 3 with --quick)\n"
	        "  --quick          small sizes (seconds in all), for tests\n"
	        "  --csv            CSV rows on stdout: "
	        "experiment,metric,unit,reps,median,min,max,seed\n"
	        "  --report FILE    write a Markdown report to FILE (none without it); the\n"
	        "                   TLB plot goes next to it. FILE is created before the\n"
	        "                   experiments run, so an unwritable path fails at once\n"
	        "  --text-plot      draw the TLB plot as text even when gnuplot exists\n"
	        "  -h, --help       this text\n"
	        "  --version        print the version and exit\n"
	        "Options take their value as --opt VALUE or --opt=VALUE.\n",
	        PROBE_MAX_REPS);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, PROBE_NAME ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(try '" PROBE_NAME " --help')\n");
	return 2;
}

static const experiment *find_experiment(const char *name)
{
	for (int i = 0; i < NEXP; i++)
		if (strcmp(experiments[i].name, name) == 0)
			return &experiments[i];
	return NULL;
}

static int run_experiment(probe *p, const experiment *e)
{
	section *s = &sections[nsections++];
	memset(s, 0, sizeof(*s));
	s->e = e;
	s->mdf = open_memstream(&s->md, &s->md_len);
	if (!s->mdf) {
		perror(PROBE_NAME);
		return -1;
	}
	p->sect = s;
	if (!p->csv) {
		printf("\n== %s: %s\n", e->name, e->title);
		printf("  %-54s %10s %-5s [min .. max] xreps\n", "what", "median", "unit");
		fflush(stdout);
	}
	double t0 = probe_now_ns();
	e->run(p);
	s->seconds = (probe_now_ns() - t0) / 1e9;
	fclose(s->mdf);
	s->mdf = NULL;
	probe_pin(p, -1);
	return 0;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROBE_NAME);
	probe p;
	memset(&p, 0, sizeof(p));
	p.reps = 0;
	const experiment *selected[NEXP];
	int nselected = 0, all = 0, list = 0;

	enum { OPT_VERSION = 256, OPT_QUICK, OPT_CSV, OPT_TEXT_PLOT, OPT_REPS, OPT_REPORT };
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"quick", no_argument, NULL, OPT_QUICK},
	        {"csv", no_argument, NULL, OPT_CSV},
	        {"text-plot", no_argument, NULL, OPT_TEXT_PLOT},
	        {"reps", required_argument, NULL, OPT_REPS},
	        {"report", required_argument, NULL, OPT_REPORT},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *v = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf(PROBE_NAME " (weft) %s\n", weft_version());
			return 0;
		case OPT_QUICK:
			p.quick = 1;
			break;
		case OPT_CSV:
			p.csv = 1;
			break;
		case OPT_TEXT_PLOT:
			p.text_plot = 1;
			break;
		case OPT_REPS: {
			char *end;
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 1 || n > PROBE_MAX_REPS) {
				fprintf(stderr,
				        PROBE_NAME ": --reps needs a whole number from 1 to %d, "
				                   "not '%s'\n",
				        PROBE_MAX_REPS, v);
				return 2;
			}
			p.reps = (int)n;
			break;
		}
		case OPT_REPORT:
			if (!*v)
				return bad_usage("--report needs a file name", "");
			p.report = v;
			break;
		case ':':
			return bad_usage("option '%s' needs a value", argv[optind - 1]);
		default: {
			const char *a = argv[optind - 1];
			if (!strncmp(a, "--", 2) && strchr(a, '='))
				return bad_usage("option '%s' takes no value", a);
			return bad_usage("unknown option '%s'", a);
		}
		}
	}
	for (int i = optind; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "all") == 0) {
			all = 1;
		} else if (strcmp(a, "list") == 0) {
			list = 1;
		} else {
			const experiment *e = find_experiment(a);
			if (!e)
				return bad_usage("unknown experiment '%s' (`" PROBE_NAME
				                 " list` names them)",
				                 a);
			if (nselected < NEXP)
				selected[nselected++] = e;
		}
	}
	if (list) {
		for (int i = 0; i < NEXP; i++)
			printf("%-10s %s\n", experiments[i].name, experiments[i].title);
		return 0;
	}
	if (all) {
		nselected = 0;
		for (int i = 0; i < NEXP; i++)
			selected[nselected++] = &experiments[i];
	}
	if (nselected == 0) {
		fprintf(stderr, PROBE_NAME ": no experiment given\n");
		usage(stderr);
		return 2;
	}
	if (p.reps == 0)
		p.reps = p.quick ? 3 : 5;
	if (p.report && !(report_file = fopen(p.report, "w"))) {
		fprintf(stderr, PROBE_NAME ": cannot write the report '%s': %s\n", p.report,
		        strerror(errno));
		return 2;
	}

	if (sched_getaffinity(0, sizeof(p.allowed), &p.allowed) != 0) {
		perror(PROBE_NAME ": sched_getaffinity");
		if (report_file)
			fclose(report_file);
		return 1;
	}
	p.ncpus = CPU_COUNT(&p.allowed);
	p.cpu[0] = p.cpu[1] = -1;
	for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &p.allowed))
			p.cpu[k++] = c;

	if (p.csv)
		printf("experiment,metric,unit,reps,median,min,max,seed\n");
	else
		printf(PROBE_NAME ": %d experiment%s, %d repetition%s each%s, %d CPU%s allowed\n",
		       nselected, cli_plural(nselected), p.reps, cli_plural(p.reps),
		       p.quick ? ", quick sizes" : "", p.ncpus, cli_plural(p.ncpus));

	load_start = loadavg();
	double t0 = probe_now_ns();
	for (int i = 0; i < nselected; i++)
		if (run_experiment(&p, selected[i]) != 0) {
			if (report_file)
				fclose(report_file);
			return 1;
		}
	double total = (probe_now_ns() - t0) / 1e9;

	int rc = 0;
	if (p.report) {
		rc = write_report(&p, total) ? 1 : 0;
		if (!rc && !p.csv)
			printf("\nreport written to %s (%.1f s)\n", p.report, total);
	} else if (all && !p.csv) {
		printf("\nno report written (--report FILE writes one)\n");
	}
	for (int i = 0; i < nsections; i++) {
		free(sections[i].rows);
		free(sections[i].md);
	}
	return rc;
}
