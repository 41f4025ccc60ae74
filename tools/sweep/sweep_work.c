/* sweep-work: a CPU-bound workload whose run time weft-sweep's tests can
 * predict from WEFT_WORKERS.
 *
 *   sweep-work [--fail-every K] <tasks> <millions>
 *   sweep-work --version
 *
 * Posts <tasks> tasks on one weft runtime configured only by the WEFT_*
 * environment; each task runs <millions> million rounds of an integer hash
 * (no memory traffic, no locks), so with W workers on at least W idle CPUs
 * the run takes about ceil(tasks / W) task lengths, and the fibers model
 * (one worker) takes all of them in turn. Prints one line: the model, the
 * worker count and a checksum (so the work cannot be optimised away).
 *
 * --fail-every K: exit with status 3, after the work, on every K-th run,
 * counted in the file named by SWEEP_WORK_COUNTER (created if missing), so
 * the tests can make a command that fails on some runs only.
 *
 * Exit status: 0 done, 2 usage or start-up error, 3 failure on request. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "../../apps/common/cli.h"

#define MAX_TASKS 4096
#define USAGE     "usage: sweep-work [--fail-every K] <tasks> <millions>\n"

typedef struct job {
	weft_task task;
	uint64_t rounds;
	uint64_t result;
} job;

static void work(void *arg)
{
	job *j = arg;
	uint64_t x = (uint64_t)(uintptr_t)j | 1;
	for (uint64_t i = 0; i < j->rounds; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdULL;
		x ^= x >> 29;
	}
	j->result = x;
}

static long parse_long(const char *s, long lo, long hi, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "sweep-work: invalid %s '%s' (expected %ld-%ld)\n", what, s, lo,
		        hi);
		exit(2);
	}
	return v;
}

/* Counts this run in SWEEP_WORK_COUNTER and says whether it is a K-th one. */
static int nth_run_fails(long every)
{
	const char *path = getenv("SWEEP_WORK_COUNTER");
	if (!path) {
		fprintf(stderr, "sweep-work: --fail-every needs SWEEP_WORK_COUNTER\n");
		exit(2);
	}
	long n = 0;
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 0;
		fclose(f);
	}
	n++;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "sweep-work: cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fprintf(f, "%ld\n", n);
	fclose(f);
	return n % every == 0;
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("sweep-work");
	enum { OPT_VERSION = 256, OPT_FAIL_EVERY };
	static const struct option longopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, OPT_VERSION},
	        {"fail-every", required_argument, NULL, OPT_FAIL_EVERY},
	        {NULL, 0, NULL, 0},
	};
	long fail_every = 0;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf(USAGE);
			return 0;
		case OPT_VERSION:
			printf("sweep-work (weft) %s\n", weft_version());
			return 0;
		case OPT_FAIL_EVERY:
			fail_every = parse_long(optarg, 1, 1000000, "--fail-every");
			break;
		case ':':
			fprintf(stderr, "sweep-work: option '%s' needs a value\n" USAGE,
			        argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "sweep-work: unknown option '%s'\n" USAGE,
			        argv[optind - 1]);
			return 2;
		}
	}
	int i = optind;
	if (argc - i != 2) {
		fprintf(stderr, USAGE);
		return 2;
	}
	long tasks = parse_long(argv[i], 1, MAX_TASKS, "task count");
	long millions = parse_long(argv[i + 1], 0, 100000, "millions of rounds");

	job *jobs = calloc((size_t)tasks, sizeof(*jobs));
	weft_rt *rt = NULL;
	weft_config cfg;
	if (!jobs || weft_config_init(&cfg) != 0 || weft_rt_create(&rt, &cfg) != 0) {
		fprintf(stderr, "sweep-work: cannot start the runtime\n");
		free(jobs);
		return 2;
	}
	for (long t = 0; t < tasks; t++) {
		jobs[t].rounds = (uint64_t)millions * 1000000u;
		int rc = weft_task_init(&jobs[t].task, work, &jobs[t]);
		if (rc == 0)
			rc = weft_post_wait(rt, &jobs[t].task); /* room in a bounded queue */
		if (rc != 0) {
			fprintf(stderr, "sweep-work: cannot post task %ld: %s\n", t,
			        weft_strerror(rc));
			weft_rt_destroy(rt);
			free(jobs);
			return 2;
		}
	}
	int rc = weft_wait_all(rt);
	weft_config eff;
	weft_rt_config(rt, &eff);
	weft_rt_destroy(rt);

	uint64_t sum = 0;
	for (long t = 0; t < tasks; t++)
		sum += jobs[t].result;
	free(jobs);
	if (rc != 0) {
		fprintf(stderr, "sweep-work: weft_wait_all: %s\n", weft_strerror(rc));
		return 2;
	}
	printf("sweep-work: model=%s workers=%d tasks=%ld checksum=%016llx\n",
	       weft_model_name(eff.model), eff.workers, tasks, (unsigned long long)sum);
	if (fail_every && nth_run_fails(fail_every)) {
		fprintf(stderr, "sweep-work: failing this run on request (--fail-every %ld)\n",
		        fail_every);
		return 3;
	}
	return 0;
}
