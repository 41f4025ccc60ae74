/* weft-haunted: the haunted house of seed 002 (CPE690 project 2, part 3),
 * written once on weft and run under any model (docs/seeds/apps-haunted.md).
 *
 *   weft-haunted [options] INPUT CROSS_SECONDS
 *   weft-haunted [options] --generate N CROSS_SECONDS
 *   weft-haunted --check LOG [INPUT] [--capacity N] [--visitors N]
 *
 * Design. The house is a monitor: one weft_mutex guards its state (who is
 * inside, which way they cross, the line of waiting visitors) and the log,
 * so every decision and the line that reports it happen together, in the
 * order the checker reads them. Visitors are numbered in input order and
 * arrive in that order: the arrival of visitor k is the feeder (the main
 * thread, or a root task under fibers so that sleeps can run on the virtual
 * clock) taking the lock, printing the request, and either granting it at
 * once or printing Waiting. That number is the visitor's ticket; since the
 * feeder is the only one who arrives, ticket order is arrival order however
 * the tasks are later scheduled.
 *
 * Admission is strict FIFO: only the first waiting visitor may enter, when
 * the house is empty (the crossing may turn) or crossed its way with room.
 * The controller (admit_waiting) runs on arrival and on every exit, under
 * the lock, grants as many as the rule allows and hands each its own
 * weft_sem. Each visitor is a weft task: it waits on that semaphore (which
 * parks its fiber under fibers), crosses with weft_sleep_ns, then waits on
 * a weft_cond for its turn to leave (exit order is entry order) and leaves,
 * running the controller for whoever waits.
 *
 * Why the feeder waits until each visitor's task has started before the
 * next arrival: under threads and spawn a waiting visitor occupies its
 * worker. If tasks could start out of arrival order (WEFT_POLICY=random),
 * W later visitors could hold all W workers waiting while an earlier,
 * already-granted visitor was still queued: deadlock. Starting in arrival
 * order rules that out: everyone granted started earlier than anyone
 * waiting, so is running, so will leave. The cost: with W workers at most W
 * visitors are in the house or waiting, and later arrivals are delayed. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "../common/cli.h"
#include "parse.h"

#define PROG "weft-haunted"

#define DEFAULT_CAPACITY 3
#define MAX_CAPACITY     1000000UL
#define MAX_SECONDS      86400.0
#define NS_PER_S         1000000000.0
/* Most bytes read as INPUT (10,000,000 visitors take 20 MB) and as a LOG
 * to --check (about 400 bytes a visitor): an endless stream (/dev/zero)
 * ends in a message, not in the OOM killer. */
#define MAX_INPUT_BYTES  ((size_t)64 << 20)
#define MAX_LOG_BYTES    ((size_t)256 << 20)

typedef struct house house;

typedef struct visitor {
	weft_task task;
	weft_sem admitted; /* posted once by the controller: go in */
	house *h;
	unsigned long id; /* 1-based ticket: arrival order */
	char dir;
} visitor;

struct house {
	/* Set before the first arrival, then read-only. */
	unsigned long capacity;
	int64_t cross_ns;
	visitor *v;
	size_t n;
	FILE *out;

	weft_mutex lock;     /* guards everything below and the writes to out */
	weft_cond exit_turn; /* broadcast when someone leaves */
	size_t arrived;      /* visitors 1 .. arrived have requested */
	size_t next_admit;   /* v[next_admit] is first in line (if < arrived) */
	size_t next_exit;    /* v[next_exit] leaves next; inside: [next_exit, next_admit) */
	char crossing;       /* direction of those inside (kept after they leave) */

	weft_sem started; /* one post per visitor task that has begun */
};

typedef struct pacing {
	int64_t min_ns, max_ns; /* gap between arrivals, uniform in [min, max] */
	uint64_t rng;
} pacing;

/* splitmix64: small, seedable, the same everywhere. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t inside(const house *h)
{
	return h->next_admit - h->next_exit;
}

/* Grants the first waiting visitors for as long as strict FIFO allows.
 * Called with the lock held. */
static void admit_waiting(house *h)
{
	while (h->next_admit < h->arrived) {
		visitor *v = &h->v[h->next_admit];
		if (inside(h) > 0 && (v->dir != h->crossing || inside(h) >= h->capacity))
			return;
		h->crossing = v->dir;
		h->next_admit++;
		fprintf(h->out,
		        "Visitor %lu: Cross house request granted (Current crossing: %s, Number of "
		        "visitors on house: %zu)\n",
		        v->id, haunted_dir_words(v->dir), inside(h));
		weft_sem_post(&v->admitted);
	}
}

static void arrive(house *h, visitor *v)
{
	weft_mutex_lock(&h->lock);
	h->arrived++;
	fprintf(h->out, "Visitor %lu: Request to cross house (%s)\n", v->id,
	        haunted_dir_words(v->dir));
	admit_waiting(h);
	if (h->next_admit < h->arrived) /* v is in line, not in the house */
		fprintf(h->out, "Visitor %lu: Waiting\n", v->id);
	weft_mutex_unlock(&h->lock);
}

static void visit(void *arg)
{
	visitor *v = arg;
	house *h = v->h;

	weft_sem_post(&h->started);
	weft_sem_wait(&v->admitted);
	weft_sleep_ns(h->cross_ns);

	weft_mutex_lock(&h->lock);
	while (h->next_exit + 1 != v->id)
		weft_cond_wait(&h->exit_turn, &h->lock);
	h->next_exit++;
	fprintf(h->out,
	        "Visitor %lu: Exit house (Current crossing: %s, Number of visitors on house: "
	        "%zu)\n",
	        v->id, haunted_dir_words(v->dir), inside(h));
	admit_waiting(h);
	weft_cond_broadcast(&h->exit_turn);
	weft_mutex_unlock(&h->lock);
}

typedef struct feeder {
	house *h;
	weft_rt *rt;
	pacing pace;
	int rc;
} feeder;

/* weft_post that waits for room in a bounded ready queue
 * (WEFT_QUEUE_CAPACITY): the feeder is the main thread (weft_post_wait) or,
 * under fibers, a task, which yields so that the queued visitors start. */
static int post_visitor(weft_rt *rt, weft_task *t)
{
	if (!weft_rt_current())
		return weft_post_wait(rt, t);
	int rc;
	while ((rc = weft_post(rt, t)) == WEFT_EFULL)
		weft_yield();
	return rc;
}

static void feed(void *arg)
{
	feeder *f = arg;
	house *h = f->h;

	for (size_t i = 0; i < h->n; i++) {
		visitor *v = &h->v[i];
		if (i > 0) {
			int64_t gap = f->pace.min_ns;
			if (f->pace.max_ns > f->pace.min_ns)
				gap += (int64_t)(next_random(&f->pace.rng) %
				                 (uint64_t)(f->pace.max_ns - f->pace.min_ns + 1));
			if (gap > 0)
				weft_sleep_ns(gap);
		}
		arrive(h, v);
		int rc = post_visitor(f->rt, &v->task);
		if (rc != 0) {
			fprintf(stderr, PROG ": cannot post visitor %lu: %s\n", v->id,
			        weft_strerror(rc));
			/* Let it through without a task so the others can finish. */
			f->rc = 1;
			weft_sem_post(&h->started);
			visit(v);
			weft_sem_wait(&h->started);
			continue;
		}
		weft_sem_wait(&h->started);
	}
}

static int run_house(const haunted_visitors *in, unsigned long capacity, int64_t cross_ns,
                     pacing pace)
{
	house h;
	feeder f;
	weft_rt *rt;
	weft_config cfg;
	weft_task root;
	int rc;

	memset(&h, 0, sizeof h);
	h.capacity = capacity;
	h.cross_ns = cross_ns;
	h.n = in->count;
	h.out = stdout;
	h.v = calloc(in->count, sizeof *h.v);
	if (!h.v) {
		fprintf(stderr, PROG ": out of memory for %zu visitors\n", in->count);
		return 1;
	}
	weft_mutex_init(&h.lock);
	weft_cond_init(&h.exit_turn);
	weft_sem_init(&h.started, 0);
	for (size_t i = 0; i < in->count; i++) {
		visitor *v = &h.v[i];
		v->h = &h;
		v->id = (unsigned long)i + 1;
		v->dir = in->dir[i];
		weft_sem_init(&v->admitted, 0);
		weft_task_init(&v->task, visit, v);
		/* Under the priority policy, too, tasks start in arrival order. */
		weft_task_set_priority(&v->task, (int64_t)i);
	}

	if ((rc = weft_rt_create(&rt, NULL)) != 0) {
		fprintf(stderr, PROG ": cannot start the runtime: %s\n", weft_strerror(rc));
		free(h.v);
		return 2;
	}
	weft_rt_config(rt, &cfg);
	f = (feeder){&h, rt, pace, 0};
	if (cfg.model == WEFT_MODEL_FIBERS) {
		/* A root task: its sleeps are fiber sleeps (virtual under a seeded
		 * random policy), and nothing outside the runtime posts. */
		weft_task_init(&root, feed, &f);
		weft_task_set_priority(&root, -1);
		if ((rc = weft_post_wait(rt, &root)) != 0) {
			fprintf(stderr, PROG ": cannot post the arrivals: %s\n", weft_strerror(rc));
			f.rc = 1;
		}
	} else {
		feed(&f);
	}
	weft_wait_all(rt);
	rc = weft_rt_destroy(rt);
	if (rc != 0) {
		fprintf(stderr, PROG ": runtime shutdown: %s\n", weft_strerror(rc));
		f.rc = 1;
	}
	free(h.v);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_stdout_error(PROG, "the log");
		return 1;
	}
	return f.rc;
}

/* ------------------------------------------------------------ command line */

static void usage(FILE *to)
{
	fputs("usage: " PROG " [options] INPUT CROSS_SECONDS\n"
	      "       " PROG " [options] --generate N CROSS_SECONDS\n"
	      "       " PROG " --check LOG [INPUT] [--capacity N] [--visitors N]\n"
	      "\n"
	      "The haunted house (seed 002): visitors cross a house from the left door\n"
	      "to the right (L) or back (R); at most CAPACITY inside, one direction at a\n"
	      "time, admitted strictly in arrival order. Each visitor is a weft task;\n"
	      "WEFT_MODEL=threads|spawn|fibers, WEFT_WORKERS, WEFT_POLICY choose how they run.\n"
	      "\n"
	      "  INPUT            one line of comma-separated L and R, e.g. L,R,R,L\n"
	      "                   (visitor 1 is the first; '-' reads standard input)\n"
	      "  CROSS_SECONDS    time every visitor takes to cross (decimal, e.g. 2 or 0.01)\n"
	      "  --capacity N     most visitors inside at once (default 3)\n"
	      "  --pace S         seconds between two arrivals (default 0.4 x CROSS_SECONDS)\n"
	      "  --pace MIN:MAX   a random gap in [MIN, MAX] seconds (seeded by --seed)\n"
	      "  --generate N     N visitors with random directions instead of INPUT\n"
	      "  --seed N         seed for --generate and random pacing (default 1)\n"
	      "  --check LOG      verify a log this program printed ('-': standard input):\n"
	      "                   the four messages, capacity, one direction at a time,\n"
	      "                   FIFO by arrival, exit order, everyone in and out once;\n"
	      "                   with INPUT, the visitors and directions it lists\n"
	      "  --visitors N     --check: the log must have N visitors\n"
	      "  -h, --help       this help\n"
	      "  --version        print the version and exit\n"
	      "\n"
	      "Options take their value as --opt VALUE or --opt=VALUE. INPUT may hold at\n"
	      "most 64 MiB, a LOG at most 256 MiB.\n"
	      "\n"
	      "Prints, one line per event:\n"
	      "  Visitor N: Request to cross house (left to right)\n"
	      "  Visitor N: Waiting\n"
	      "  Visitor N: Cross house request granted (Current crossing: left to right, "
	      "Number of visitors on house: K)\n"
	      "  Visitor N: Exit house (Current crossing: left to right, Number of visitors "
	      "on house: K)\n"
	      "Exit status: 0 done (or the log keeps every rule), 1 the log breaks a rule\n"
	      "or the run failed, 2 usage, input or start-up error.\n",
	      to);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '" PROG " --help'.\n");
	return 2;
}

/* Reads a whole file ("-": standard input) of at most max bytes. */
static int read_all(const char *path, size_t max, char **text, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *buf;

	if (!f) {
		fprintf(stderr, PROG ": cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fprintf(stderr, PROG ": '%s': out of memory\n", path);
			break;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		if (cap >= max) {
			fprintf(stderr, PROG ": '%s': larger than %zu MiB\n", path, max >> 20);
			free(buf);
			buf = NULL;
			break;
		}
		char *nb = cap > (SIZE_MAX >> 2) ? NULL : realloc(buf, cap * 2);
		if (!nb)
			free(buf);
		buf = nb;
		cap *= 2;
	}
	if (buf && ferror(f)) {
		fprintf(stderr, PROG ": cannot read '%s': %s\n", path, strerror(errno));
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	if (!buf)
		return -1;
	*text = buf;
	*len = n;
	return 0;
}

/* "FILE:LINE:COL: message", then the line with a caret under the column. */
static void report(const char *path, const char *text, size_t len, const haunted_error *e)
{
	if (e->line == 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, e->msg);
		return;
	}
	fprintf(stderr, PROG ": %s:%lu:%lu: %s\n", path, e->line, e->column, e->msg);
	const char *p = text, *end = text + len;
	for (unsigned long l = 1; l < e->line && p < end; l++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	size_t n = (size_t)((eol ? eol : end) - p), col = e->column ? e->column - 1 : 0;
	size_t from = col > 60 ? col - 60 : 0;
	if (n > from + 100)
		n = from + 100;
	fputs("  ", stderr);
	for (size_t i = from; i < n; i++)
		fputc(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?', stderr);
	fputs("\n  ", stderr);
	for (size_t i = from; i < col; i++)
		fputc(' ', stderr);
	fputs("^\n", stderr);
}

static int load_input(const char *path, haunted_visitors *out)
{
	char *text;
	size_t len;
	haunted_error e;

	if (read_all(path, MAX_INPUT_BYTES, &text, &len) != 0)
		return -1;
	int rc = haunted_parse(text, len, out, &e);
	if (rc != HAUNTED_OK)
		report(path, text, len, &e);
	free(text);
	return rc == HAUNTED_OK ? 0 : -1;
}

/* A decimal number of seconds, 0 .. MAX_SECONDS, as nanoseconds. */
static int parse_seconds(const char *s, int64_t *ns)
{
	char *end;
	if (!s[0] || s[0] == '-' || s[0] == '+' || (s[0] != '.' && (s[0] < '0' || s[0] > '9')))
		return -1;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || *end || !(d >= 0.0 && d <= MAX_SECONDS))
		return -1;
	*ns = (int64_t)(d * NS_PER_S + 0.5);
	return 0;
}

static int parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

static int run_check(const char *log_path, const char *input_path, unsigned long capacity,
                     unsigned long expect)
{
	haunted_visitors in = {0};
	haunted_check_opts o = {capacity, NULL, expect};
	haunted_check_stats st;
	haunted_error e;
	char *text;
	size_t len;

	if (input_path) {
		if (load_input(input_path, &in) != 0)
			return 2;
		o.input = &in;
	}
	if (read_all(log_path, MAX_LOG_BYTES, &text, &len) != 0) {
		haunted_visitors_free(&in);
		return 2;
	}
	int rc = haunted_check(text, len, &o, &st, &e);
	if (rc == HAUNTED_OK)
		printf("%s: ok: %lu visitor%s (%lu waited), at most %lu inside (capacity %lu), "
		       "%lu turn%s of direction, FIFO by arrival: nobody overtaken\n",
		       strcmp(log_path, "-") == 0 ? "<stdin>" : log_path, st.visitors,
		       cli_plural((long long)st.visitors), st.waited, st.max_inside, capacity,
		       st.turns, st.turns == 1 ? "" : "s");
	else
		report(strcmp(log_path, "-") == 0 ? "<stdin>" : log_path, text, len, &e);
	free(text);
	haunted_visitors_free(&in);
	return rc == HAUNTED_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(PROG);
	const char *pos[2] = {NULL, NULL}, *check_log = NULL;
	unsigned long capacity = DEFAULT_CAPACITY, generate = 0, expect = 0;
	uint64_t seed = 1;
	int npos = 0, pace_set = 0;
	pacing pace = {0, 0, 0};

	enum {
		OPT_VERSION = 256,
		OPT_CAPACITY,
		OPT_PACE,
		OPT_GENERATE,
		OPT_SEED,
		OPT_CHECK,
		OPT_VISITORS
	};
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"capacity", required_argument, NULL, OPT_CAPACITY},
	        {"pace", required_argument, NULL, OPT_PACE},
	        {"generate", required_argument, NULL, OPT_GENERATE},
	        {"seed", required_argument, NULL, OPT_SEED},
	        {"check", required_argument, NULL, OPT_CHECK},
	        {"visitors", required_argument, NULL, OPT_VISITORS},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *val = optarg;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			return cli_print_version(PROG);
		case OPT_CAPACITY:
			if (parse_count(val, MAX_CAPACITY, &capacity))
				return usage_error(
				        "invalid capacity '%s' (a whole number, 1 to 1000000)",
				        val);
			break;
		case OPT_GENERATE:
			if (parse_count(val, HAUNTED_MAX_VISITORS, &generate))
				return usage_error(
				        "invalid number of visitors '%s' (1 to 10000000)", val);
			break;
		case OPT_VISITORS:
			if (parse_count(val, HAUNTED_MAX_VISITORS, &expect))
				return usage_error(
				        "invalid number of visitors '%s' (1 to 10000000)", val);
			break;
		case OPT_SEED: {
			char *end;
			errno = 0;
			if (val[0] < '0' || val[0] > '9' ||
			    (seed = strtoull(val, &end, 10), errno || *end))
				return usage_error("invalid seed '%s' (a whole number)", val);
			break;
		}
		case OPT_CHECK:
			check_log = val;
			break;
		case OPT_PACE: {
			char lo[64];
			const char *colon = strchr(val, ':');
			size_t n = colon ? (size_t)(colon - val) : strlen(val);
			if (n >= sizeof lo)
				return usage_error("invalid pace '%s'", val);
			memcpy(lo, val, n);
			lo[n] = 0;
			if (parse_seconds(lo, &pace.min_ns) ||
			    parse_seconds(colon ? colon + 1 : lo, &pace.max_ns) ||
			    pace.max_ns < pace.min_ns)
				return usage_error(
				        "invalid pace '%s' (seconds, or MIN:MAX with MIN <= "
				        "MAX)",
				        val);
			pace_set = 1;
			break;
		}
		default:
			cli_option_error(PROG, c, argv, longopts);
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (npos == 2)
			return usage_error("unexpected argument '%s'", argv[i]);
		pos[npos++] = argv[i];
	}

	if (check_log) {
		if (npos > 1)
			return usage_error("unexpected argument '%s' (--check takes LOG [INPUT])",
			                   pos[1]);
		if (generate || pace_set)
			return usage_error("%s", "--check reads a log; it does not run the house");
		return run_check(check_log, npos ? pos[0] : NULL, capacity, expect);
	}
	if (expect)
		return usage_error("%s", "--visitors goes with --check");

	int need = generate ? 1 : 2;
	if (npos < need)
		return usage_error(
		        "%s", generate ? "missing the crossing time in seconds"
		                       : "missing the input file or the crossing time in seconds");
	if (npos > need)
		return usage_error("unexpected argument '%s'", pos[need]);
	const char *cross_arg = pos[need - 1];
	int64_t cross_ns;
	if (parse_seconds(cross_arg, &cross_ns))
		return usage_error("invalid crossing time '%s' (seconds, 0 to 86400, e.g. 2 or "
		                   "0.05)",
		                   cross_arg);

	haunted_visitors in = {0};
	if (generate) {
		uint64_t g = seed ^ 0x6861756e746564ULL; /* "haunted": apart from pacing */
		in.dir = malloc(generate);
		if (!in.dir) {
			fprintf(stderr, PROG ": out of memory for %lu visitors\n", generate);
			return 1;
		}
		in.count = generate;
		for (unsigned long i = 0; i < generate; i++)
			in.dir[i] = next_random(&g) & 1 ? HAUNTED_RIGHT : HAUNTED_LEFT;
	} else if (load_input(pos[0], &in) != 0) {
		return 2;
	}
	if (!pace_set)
		pace.min_ns = pace.max_ns = cross_ns / 5 * 2;
	pace.rng = seed;
	int rc = run_house(&in, capacity, cross_ns, pace);
	haunted_visitors_free(&in);
	return rc;
}
