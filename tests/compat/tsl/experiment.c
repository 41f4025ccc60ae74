/* An experiment program like the one in the seed student's report
 * (seed 003 in the list in docs/seeds/README.md),
 * written in the seed's style and built with only -I include/weft/compat:
 *
 *   ./experiment nthreads alg maxcount yieldperiod exitperiod cancelperiod [print]
 *
 * Each of nthreads-1 threads counts from 1 to maxcount. Every yieldperiod
 * counts it yields, alternately to TSL_ANY and to a random thread; every
 * exitperiod counts (0: never) it exits; every cancelperiod counts (0:
 * never) it cancels a random other thread. With print = 1 it prints every
 * count, as the report's runs did. main joins every thread and prints the
 * CPU time (clock()) and what happened, then "experiment: PASS" when every
 * thread was joined and counted what it should have. */
#include "tsl.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int nthreads, maxcount, yieldperiod, exitperiod, cancelperiod, print;
static int *counts;    /* by tid */
static int *exited;    /* by tid: left through tsl_exit */
static int cancels_ok; /* tsl_cancel calls that returned TSL_SUCCESS */

static int random_tid(void)
{
	return 2 + rand() % (nthreads - 1);
}

void counter(void *arg)
{
	int mytid = tsl_gettid();
	int i;

	for (i = 1; i <= maxcount; i++) {
		counts[mytid]++;
		if (print)
			printf("thread %d count %d\n", mytid, i);
		if (cancelperiod && i % cancelperiod == 0) {
			int victim = random_tid();
			if (victim != mytid && tsl_cancel(victim) == TSL_SUCCESS)
				cancels_ok++;
		}
		if (exitperiod && i % exitperiod == 0) {
			exited[mytid] = 1;
			tsl_exit();
		}
		if (yieldperiod && i % yieldperiod == 0)
			tsl_yield((i / yieldperiod) % 2 ? TSL_ANY : random_tid());
	}
}

int main(int argc, char **argv)
{
	int i, alg, joined = 0, full = 0, ok = 1;
	clock_t start;

	if (argc != 7 && argc != 8) {
		printf("usage: ./experiment nthreads alg maxcount yieldperiod exitperiod "
		       "cancelperiod [print]\n");
		exit(1);
	}
	nthreads = atoi(argv[1]);
	alg = atoi(argv[2]);
	maxcount = atoi(argv[3]);
	yieldperiod = atoi(argv[4]);
	exitperiod = atoi(argv[5]);
	cancelperiod = atoi(argv[6]);
	print = argc == 8 ? atoi(argv[7]) : 0;
	if (nthreads < 2 || nthreads > TSL_MAXTHREADS || maxcount < 1) {
		printf("experiment: need 2 <= nthreads <= %d and maxcount >= 1\n", TSL_MAXTHREADS);
		exit(1);
	}
	counts = calloc(nthreads + 1, sizeof(int));
	exited = calloc(nthreads + 1, sizeof(int));
	srand(1);

	start = clock();
	if (tsl_init(alg) != TSL_SUCCESS) {
		printf("experiment: tsl_init(%d) failed\n", alg);
		exit(1);
	}
	for (i = 1; i < nthreads; i++) {
		if (tsl_create_thread(counter, NULL) != i + 1) {
			printf("experiment: FAIL: thread %d not created\n", i + 1);
			exit(1);
		}
	}
	for (i = 2; i <= nthreads; i++) {
		if (tsl_join(i) == i)
			joined++;
		else
			ok = 0;
		if (counts[i] == maxcount)
			full++;
		/* A thread that was not cancelled counted to maxcount, or to
		 * its first exitperiod. */
		if (!exited[i] && counts[i] != maxcount && !cancelperiod)
			ok = 0;
		if (exited[i] && counts[i] != exitperiod)
			ok = 0;
	}
	printf("experiment: %d threads, alg %d, maxcount %d, yield %d, exit %d, cancel %d: "
	       "%.3f s cpu, %d joined, %d counted to the end, %d cancels\n",
	       nthreads, alg, maxcount, yieldperiod, exitperiod, cancelperiod,
	       (double)(clock() - start) / CLOCKS_PER_SEC, joined, full, cancels_ok);
	if (!cancelperiod && !exitperiod && full != nthreads - 1)
		ok = 0;
	printf(ok ? "experiment: PASS\n" : "experiment: FAIL\n");
	free(counts);
	free(exited);
	tsl_exit();
	return 0;
}
