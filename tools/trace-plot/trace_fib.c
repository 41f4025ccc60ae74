/* trace-fib: a recursive fork-join (fib(N): every call with n >= 2 posts
 * fib(n-1) and fib(n-2) into a group and waits for it), the trace the
 * weft-trace-plot tests draw: run with WEFT_TRACE=file.json. A task that
 * waits runs others on its worker meanwhile (threads) or parks (fibers,
 * mn), so run segments nest and leave gaps.
 *
 *   trace-fib [N]      (default 12; prints fib(N)) */
#include <stdio.h>
#include <stdlib.h>

#include <weft/weft.h>

#include "../../apps/common/cli.h"

typedef struct fib_call {
	int n;
	long result;
	weft_task t;
} fib_call;

static weft_rt *rt;

static void fib(void *arg)
{
	fib_call *c = arg;
	if (c->n < 2) {
		c->result = c->n;
		return;
	}
	fib_call a = {.n = c->n - 1}, b = {.n = c->n - 2};
	weft_group g;
	weft_group_init(&g);
	weft_task_init(&a.t, fib, &a);
	weft_task_init(&b.t, fib, &b);
	if (weft_post_in(rt, &g, &a.t) != 0 || weft_post_in(rt, &g, &b.t) != 0) {
		fprintf(stderr, "trace-fib: cannot post\n");
		exit(1);
	}
	weft_group_wait(&g);
	c->result = a.result + b.result;
}

int main(int argc, char **argv)
{
	int first = cli_help_version_only(
	        argc, argv, "trace-fib", "[N]",
	        "fib(N) (0 to 25, default 12) as a recursive fork-join; run with\n"
	        "WEFT_TRACE=file.json for a trace whose segments nest.\n");
	unsigned long long n = 12;
	if (first < argc && !cli_parse_u64(argv[first], 0, 25, &n)) {
		fprintf(stderr, "trace-fib: N is a whole number from 0 to 25, not '%s'\n",
		        argv[first]);
		return 2;
	}
	int rc = weft_rt_create(&rt, NULL);
	if (rc != 0) {
		fprintf(stderr, "trace-fib: %s\n", weft_strerror(rc));
		return 1;
	}
	fib_call root = {.n = (int)n};
	weft_task_init(&root.t, fib, &root);
	if (weft_post(rt, &root.t) != 0 || weft_wait(&root.t) != 0) {
		fprintf(stderr, "trace-fib: cannot run\n");
		return 1;
	}
	printf("fib(%llu) = %ld\n", n, root.result);
	return weft_rt_destroy(rt) != 0;
}
