/* weft-ticker: the seed's stock ticker (CMPE 180C project/stock_ticker)
 * written once against weft's native API.
 *
 *   weft-ticker [--json | --csv] [--url BASE] [--timeout S] [--deadline S]
 *               [--max-bytes N] [--max-inflight N] [--quiet] SYMBOLS_FILE
 *
 * Reads the symbols (symbols.h), posts one task per symbol, each of which
 * GETs BASE/v7/finance/quote?symbols=SYM (fetch.h: blocking-style code that
 * parks its fiber under WEFT_MODEL=fibers) and parses the answer
 * (quote.h). After every task finished it prints the seed's table — or
 * JSON, or CSV — in file order. A failed symbol (HTTP error, timeout,
 * malformed or oversized answer, unknown symbol) shows in its own row and
 * makes the exit status 1; it never stops the others.
 *
 * Exit status: 0 every symbol quoted; 1 some symbol failed or some line of
 * the file was bad; 2 usage or input error (nothing fetched). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <weft/weft.h>

#include "../common/cli.h"
#include "fetch.h"
#include "quote.h"
#include "symbols.h"

#define DEFAULT_URL     "https://query1.finance.yahoo.com"
#define QUOTE_PATH      "/v7/finance/quote?symbols="
#define MAX_URL         2000
#define MAX_FILE        (64L << 20)
#define FIBER_STACK     (256 * 1024) /* curl and OpenSSL run on it */
#define FDS_PER_REQUEST 5            /* socket, curl's wake-up pair, resolver pipe, epoll set */
#define FDS_RESERVED    64
#define ERROR_MAX       200

enum format { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV };

typedef struct options {
	enum format format;
	const char *url;
	const char *file;
	double timeout_s;
	double deadline_s; /* 0: none */
	size_t max_bytes;
	long max_inflight; /* 0: from the open-file limit */
	int quiet;
} options;

/* What every task reads; only `inflight` changes, through weft_sem. */
typedef struct run {
	const options *opt;
	char base[MAX_URL + 1]; /* --url without a trailing '/' */
	int64_t deadline;       /* CLOCK_MONOTONIC ns, or INT64_MAX */
	weft_sem inflight;      /* requests allowed to start */
} run;

/* One symbol: written by its task only, read by main after weft_wait_all. */
typedef struct job {
	weft_task task;
	run *run;
	const ticker_symbol *sym;
	int ok;
	int worker; /* weft_worker_index() where the request started */
	ticker_quote quote;
	char error[ERROR_MAX];
} job;

static const char *prog = "weft-ticker";

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: %s [--json | --csv] [--url BASE] [--timeout S] [--deadline S]\n"
	        "       %*s [--max-bytes N] [--max-inflight N] [--quiet] SYMBOLS_FILE\n"
	        "\n"
	        "Fetches a quote for every symbol of SYMBOLS_FILE (one per line; blank lines\n"
	        "and '#' comments allowed; '-' reads standard input), one weft task per\n"
	        "symbol, and prints them in file order once all requests have finished.\n"
	        "\n"
	        "  --json, --csv     output format (default: the seed's table)\n"
	        "  --url BASE        endpoint; requests go to BASE" QUOTE_PATH "SYM\n"
	        "                    (default " DEFAULT_URL ")\n"
	        "  --timeout S       limit of each request in seconds (default 10)\n"
	        "  --deadline S      limit of the whole run in seconds (default none)\n"
	        "  --max-bytes N     largest answer accepted (default 1048576)\n"
	        "  --max-inflight N  most requests at once (default: what the open-file\n"
	        "                    limit allows)\n"
	        "  --quiet           no summary line on standard error\n"
	        "  -h, --help        this text\n"
	        "  --version         print the version and exit\n"
	        "\n"
	        "The threading model comes from the environment: WEFT_MODEL=threads|spawn|fibers,\n"
	        "WEFT_WORKERS=N, WEFT_POLICY=... (docs/configuration.md).\n"
	        "Redirects are not followed: an HTTP 3xx answer is an error of its symbol.\n"
	        "Options take their value as --opt VALUE or --opt=VALUE.\n"
	        "Exit status: 0 every symbol quoted, 1 some symbol failed or a line was bad,\n"
	        "2 usage or input error.\n",
	        prog, (int)strlen(prog), "");
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	return 2;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400)
		return -1;
	*out = v;
	return 0;
}

static int parse_count(const char *s, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, options *o)
{
	enum {
		OPT_URL = 256,
		OPT_TIMEOUT,
		OPT_DEADLINE,
		OPT_MAX_BYTES,
		OPT_MAX_INFLIGHT,
		OPT_VERSION
	};
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"json", no_argument, NULL, 'j'},
	        {"csv", no_argument, NULL, 'c'},
	        {"quiet", no_argument, NULL, 'q'},
	        {"url", required_argument, NULL, OPT_URL},
	        {"timeout", required_argument, NULL, OPT_TIMEOUT},
	        {"deadline", required_argument, NULL, OPT_DEADLINE},
	        {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
	        {"max-inflight", required_argument, NULL, OPT_MAX_INFLIGHT},
	        {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *val = optarg;
		long n;
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			return cli_print_version(prog);
		case 'j':
			o->format = FORMAT_JSON;
			break;
		case 'c':
			o->format = FORMAT_CSV;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case OPT_URL:
			if (strncmp(val, "http://", 7) && strncmp(val, "https://", 8))
				return bad_usage("--url '%s': not an http:// or https:// URL", val);
			if (strlen(val) > MAX_URL - 100)
				return bad_usage("--url '%.60s...': too long", val);
			o->url = val;
			break;
		case OPT_TIMEOUT:
			if (parse_seconds(val, &o->timeout_s))
				return bad_usage(
				        "--timeout '%s': not a number of seconds in (0, 86400]",
				        val);
			break;
		case OPT_DEADLINE:
			if (parse_seconds(val, &o->deadline_s))
				return bad_usage(
				        "--deadline '%s': not a number of seconds in (0, 86400]",
				        val);
			break;
		case OPT_MAX_BYTES:
			if (parse_count(val, 1L << 30, &n))
				return bad_usage(
				        "--max-bytes '%s': not a byte count in [1, 1073741824]",
				        val);
			o->max_bytes = (size_t)n;
			break;
		case OPT_MAX_INFLIGHT:
			if (parse_count(val, 1000000, &n))
				return bad_usage("--max-inflight '%s': not a count in [1, 1000000]",
				                 val);
			o->max_inflight = n;
			break;
		default:
			cli_option_error(prog, c, argv, longopts);
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (o->file)
			return bad_usage("unexpected argument '%s' (one symbols file)", argv[i]);
		o->file = argv[i];
	}
	if (!o->file)
		return bad_usage("%s", "missing the symbols file");
	return -1;
}

/* ------------------------------------------------------------- input */

static char *read_file(const char *path, size_t *len)
{
	FILE *fp = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!fp) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			char *b = cap >= (size_t)MAX_FILE ? NULL : realloc(buf, cap * 2);
			if (!b) {
				fprintf(stderr, "%s: %s: %s\n", prog, path,
				        cap >= (size_t)MAX_FILE ? "larger than 64 MiB"
				                                : "out of memory");
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - n, fp);
		n += got;
		if (got == 0) {
			if (ferror(fp)) {
				fprintf(stderr, "%s: cannot read %s: %s\n", prog, path,
				        strerror(errno));
				free(buf);
				buf = NULL;
			}
			break;
		}
	}
	if (fp != stdin)
		fclose(fp);
	*len = n;
	return buf;
}

static void report_bad_line(void *ctx, unsigned long line, const char *reason, const char *text,
                            size_t len)
{
	const char *path = ctx;
	char shown[48];
	ticker_clean_text(text, len > 40 ? 40 : len, shown, sizeof(shown));
	fprintf(stderr, "%s:%lu: bad symbol '%s%s': %s\n", path, line, shown, len > 40 ? "..." : "",
	        reason);
}

/* ------------------------------------------------------------- tasks */

static void url_for(const run *r, const char *sym, char *out, size_t size)
{
	size_t n = (size_t)snprintf(out, size, "%s" QUOTE_PATH, r->base);
	for (const char *p = sym; *p && n + 4 < size; p++) {
		if (*p == '^' || *p == '=')
			n += (size_t)snprintf(out + n, size - n, "%%%02X", (unsigned char)*p);
		else
			out[n++] = *p;
	}
	out[n] = '\0';
}

static void fail(job *j, const char *fmt, const char *a, const char *b)
{
	char raw[ERROR_MAX];
	snprintf(raw, sizeof(raw), fmt, a, b);
	ticker_clean_text(raw, strlen(raw), j->error, sizeof(j->error));
}

/* Under mn (tasks move between workers before they start), which workers
 * started the requests: shows that every worker took part. Ends the
 * summary line on stderr; says something only for mn with more than one
 * worker. */
static void print_per_worker(const job *jobs, size_t n, const weft_config *used)
{
	enum { SHOWN = 16 };
	if (used->model != WEFT_MODEL_MN || used->workers < 2 || used->workers > SHOWN) {
		fprintf(stderr, "\n");
		return;
	}
	size_t count[SHOWN] = {0};
	for (size_t i = 0; i < n; i++)
		if (jobs[i].worker >= 0 && jobs[i].worker < used->workers)
			count[jobs[i].worker]++;
	fprintf(stderr, "; requests started per worker:");
	for (int w = 0; w < used->workers; w++)
		fprintf(stderr, " %zu", count[w]);
	fprintf(stderr, "\n");
}

static void quote_task(void *arg)
{
	job *j = arg;
	run *r = j->run;
	const options *o = r->opt;

	weft_sem_wait(&r->inflight);
	j->worker = weft_worker_index();
	int64_t left = r->deadline - now_ns();
	if (left <= 0) {
		snprintf(j->error, sizeof(j->error), "not fetched: the --deadline of %g s passed",
		         o->deadline_s);
		weft_sem_post(&r->inflight);
		return;
	}
	long timeout_ms = (long)(o->timeout_s * 1000);
	if (left / 1000000 < timeout_ms)
		timeout_ms = left / 1000000 > 0 ? (long)(left / 1000000) : 1;

	char url[MAX_URL + 4 * TICKER_SYMBOL_MAX];
	url_for(r, j->sym->text, url, sizeof(url));
	ticker_fetch_opts fo = {.timeout_ms = timeout_ms,
	                        .max_body = o->max_bytes,
	                        .user_agent = "weft-ticker/1.0 libcurl"};
	ticker_response resp;
	char err[ERROR_MAX];
	int rc = ticker_fetch(url, &fo, &resp, err, sizeof(err));
	weft_sem_post(&r->inflight);
	if (rc != 0) {
		fail(j, "%s%s", err, "");
		return;
	}

	if (resp.status < 200 || resp.status > 299) {
		char status[32], desc[120];
		snprintf(status, sizeof(status), "HTTP %ld", resp.status);
		if (resp.status >= 300 && resp.status <= 399)
			fail(j, "%s: redirect not followed (to %.100s)", status,
			     resp.redirect[0] ? resp.redirect : "no Location");
		else if (ticker_quote_error_text(resp.body, resp.len, desc, sizeof(desc)))
			fail(j, "%s: %s", status, desc);
		else
			fail(j, "%s%s", status, "");
	} else {
		char why[120];
		switch (ticker_quote_parse(resp.body, resp.len, &j->quote, why, sizeof(why))) {
		case TICKER_QUOTE_OK:
			j->ok = 1;
			break;
		case TICKER_QUOTE_UNKNOWN:
			fail(j, "%s%s", "unknown symbol", "");
			break;
		case TICKER_QUOTE_MALFORMED:
			fail(j, "malformed answer: %s%s", why, "");
			break;
		}
	}
	free(resp.body);
}

/* ------------------------------------------------------------ output */

static const char *shown_symbol(const job *j)
{
	return j->ok && strcmp(j->quote.symbol, "unknown") ? j->quote.symbol : j->sym->text;
}

static void print_table(const job *jobs, size_t n)
{
	printf("%-25s%-15s%-15s%-10s%-10s\n", "COMPANY", "SYMBOL", "MARKET CAP", "PRICE", "CHANGE");
	for (size_t i = 0; i < n; i++) {
		const job *j = &jobs[i];
		if (j->ok)
			printf("%-25s%-15s%-15s%-10s%-10s\n", j->quote.company, shown_symbol(j),
			       j->quote.market_cap, j->quote.price, j->quote.change);
		else
			printf("%-25s%-15s%-15s%-10s%-10serror: %s\n", "-", shown_symbol(j), "-",
			       "-", "-", j->error);
	}
}

static void csv_field(const char *s, int last)
{
	size_t n = strlen(s);
	if (strpbrk(s, ",\"\r\n") || (n > 0 && (s[0] == ' ' || s[n - 1] == ' '))) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else {
		fputs(s, stdout);
	}
	putchar(last ? '\n' : ',');
}

static void print_csv(const job *jobs, size_t n)
{
	printf("company,symbol,market_cap,price,change,error\n");
	for (size_t i = 0; i < n; i++) {
		const job *j = &jobs[i];
		const ticker_quote *q = &j->quote;
		csv_field(j->ok ? q->company : "", 0);
		csv_field(shown_symbol(j), 0);
		csv_field(j->ok && (q->has & TICKER_HAS_MARKET_CAP) ? q->market_cap : "", 0);
		csv_field(j->ok && (q->has & TICKER_HAS_PRICE) ? q->price : "", 0);
		csv_field(j->ok && (q->has & TICKER_HAS_CHANGE) ? q->change : "", 0);
		csv_field(j->ok ? "" : j->error, 1);
	}
}

static cJSON *json_number(int present, const char *text)
{
	return present ? cJSON_CreateRaw(text) : cJSON_CreateNull();
}

static int print_json(const job *jobs, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; arr && i < n; i++) {
		const job *j = &jobs[i];
		const ticker_quote *q = &j->quote;
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		int ok = j->ok;
		cJSON_AddItemToObject(o, "symbol", cJSON_CreateString(shown_symbol(j)));
		cJSON_AddItemToObject(o, "line", cJSON_CreateNumber((double)j->sym->line));
		cJSON_AddItemToObject(o, "company",
		                      ok && strcmp(q->company, "unknown")
		                              ? cJSON_CreateString(q->company)
		                              : cJSON_CreateNull());
		cJSON_AddItemToObject(
		        o, "marketCap",
		        json_number(ok && (q->has & TICKER_HAS_MARKET_CAP), q->market_cap));
		cJSON_AddItemToObject(o, "price",
		                      json_number(ok && (q->has & TICKER_HAS_PRICE), q->price));
		cJSON_AddItemToObject(o, "change",
		                      json_number(ok && (q->has & TICKER_HAS_CHANGE), q->change));
		cJSON_AddItemToObject(o, "error",
		                      ok ? cJSON_CreateNull() : cJSON_CreateString(j->error));
	}
	char *text = arr ? cJSON_Print(arr) : NULL;
	cJSON_Delete(arr);
	if (!text) {
		fprintf(stderr, "%s: out of memory writing JSON\n", prog);
		return -1;
	}
	puts(text);
	cJSON_free(text);
	return 0;
}

/* --------------------------------------------------------------- main */

/* Raises the soft open-file limit to the hard one and returns the limit. */
static long open_file_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024;
	rlim_t want =
	        rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1 << 20) ? (1 << 20) : rl.rlim_max;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		struct rlimit raised = {.rlim_cur = want, .rlim_max = rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			rl.rlim_cur = want;
	}
	return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1 << 20) ? (1 << 20)
	                                                               : (long)rl.rlim_cur;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit(prog);
	options opt = {
	        .format = FORMAT_TABLE, .url = DEFAULT_URL, .timeout_s = 10, .max_bytes = 1 << 20};
	int status = parse_args(argc, argv, &opt);
	if (status >= 0)
		return status;

	size_t len;
	char *text = read_file(opt.file, &len);
	if (!text)
		return 2;
	ticker_symbols syms = {0};
	if (ticker_symbols_parse(&syms, text, len, report_bad_line, (void *)opt.file) != 0) {
		fprintf(stderr, "%s: %s: out of memory\n", prog, opt.file);
		free(text);
		ticker_symbols_free(&syms);
		return 2;
	}
	free(text);
	if (syms.n == 0) {
		fprintf(stderr, "%s: %s: no symbols (%zu bad line%s)\n", prog, opt.file, syms.bad,
		        syms.bad == 1 ? "" : "s");
		ticker_symbols_free(&syms);
		return 2;
	}

	long fd_limit = open_file_limit();
	long cap = (fd_limit - FDS_RESERVED) / FDS_PER_REQUEST;
	if (cap < 1)
		cap = 1;
	long inflight = opt.max_inflight ? opt.max_inflight : cap;
	if (inflight > cap) {
		fprintf(stderr,
		        "%s: --max-inflight %ld lowered to %ld: the open-file limit is %ld "
		        "(raise it with ulimit -n)\n",
		        prog, inflight, cap, fd_limit);
		inflight = cap;
	} else if (!opt.max_inflight && (size_t)inflight < syms.n && !opt.quiet) {
		fprintf(stderr,
		        "%s: at most %ld requests at once: the open-file limit is %ld "
		        "(raise it with ulimit -n)\n",
		        prog, inflight, fd_limit);
	}

	run *r = calloc(1, sizeof(*r));
	job *jobs = calloc(syms.n, sizeof(*jobs));
	if (!r || !jobs) {
		fprintf(stderr, "%s: out of memory for %zu symbols\n", prog, syms.n);
		free(r);
		free(jobs);
		ticker_symbols_free(&syms);
		return 2;
	}
	r->opt = &opt;
	snprintf(r->base, sizeof(r->base), "%s", opt.url);
	for (size_t n = strlen(r->base); n > 0 && r->base[n - 1] == '/'; n--)
		r->base[n - 1] = '\0';
	weft_sem_init(&r->inflight, inflight);

	/* A peer closing early must be an error of its row, never SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "%s: cannot initialise libcurl\n", prog);
		status = 2;
		goto out;
	}
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.stack_size = FIBER_STACK; /* WEFT_STACK_SIZE still wins */
	weft_rt *rt;
	int rc = weft_rt_create(&rt, &cfg);
	if (rc != 0) {
		fprintf(stderr, "%s: cannot start the runtime: %s\n", prog, weft_strerror(rc));
		curl_global_cleanup();
		status = 2;
		goto out;
	}

	int64_t start = now_ns();
	r->deadline = opt.deadline_s > 0 ? start + (int64_t)(opt.deadline_s * 1e9) : INT64_MAX;
	for (size_t i = 0; i < syms.n; i++) {
		jobs[i].run = r;
		jobs[i].sym = &syms.v[i];
		jobs[i].worker = -1;
		weft_task_init(&jobs[i].task, quote_task, &jobs[i]);
		rc = weft_post_wait(rt, &jobs[i].task);
		if (rc != 0) {
			fprintf(stderr, "%s: cannot post a task: %s\n", prog, weft_strerror(rc));
			break;
		}
	}
	weft_wait_all(rt);
	double secs = (double)(now_ns() - start) / 1e9;
	weft_config used;
	weft_rt_config(rt, &used);
	weft_rt_destroy(rt);
	curl_global_cleanup();

	size_t failed = 0;
	for (size_t i = 0; i < syms.n; i++) {
		if (weft_task_state_of(&jobs[i].task) != WEFT_TASK_DONE)
			snprintf(jobs[i].error, sizeof(jobs[i].error), "not run");
		failed += !jobs[i].ok;
	}
	if (opt.format == FORMAT_JSON) {
		if (print_json(jobs, syms.n) != 0)
			failed++;
	} else if (opt.format == FORMAT_CSV) {
		print_csv(jobs, syms.n);
	} else {
		print_table(jobs, syms.n);
	}
	if (fflush(stdout) != 0) {
		cli_stdout_error(prog, "the output");
		failed++;
	}
	if (!opt.quiet) {
		fprintf(stderr,
		        "%s: %zu symbol%s, %zu failed, %zu bad line%s, %.3f s (%s, %d worker%s)",
		        prog, syms.n, syms.n == 1 ? "" : "s", failed, syms.bad,
		        syms.bad == 1 ? "" : "s", secs, weft_model_name(used.model), used.workers,
		        used.workers == 1 ? "" : "s");
		print_per_worker(jobs, syms.n, &used);
	}
	status = failed || syms.bad ? 1 : 0;
out:
	free(jobs);
	free(r);
	ticker_symbols_free(&syms);
	return status;
}
