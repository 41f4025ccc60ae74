/* The seed's sample program (app.c of the TSL assignment), rewritten here
 * in its style from its documented behaviour (seed 003 in the list in
 * docs/seeds/README.md): main creates numofthreads-1
 * threads running foo, joins them one by one and ends with tsl_exit();
 * each thread counts to MAXCOUNT, printing every count and yielding every
 * YIELDPERIOD counts. Built with only -I include/weft/compat, as a seed
 * program would be; the messages keep the seed's spelling ("thead",
 * "tlib_exit"). */
#include "tsl.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAXCOUNT    1000
#define YIELDPERIOD 100

void *foo(void *v)
{
	int count = 0;
	int mytid;

	mytid = tsl_gettid();
	printf("thread %d started running (first time);  at the start function\n", mytid);

	while (1) {
		printf("thread %d is running (count=%d)\n", mytid, count);
		if (count % YIELDPERIOD == 0)
			tsl_yield(TSL_ANY);
		count++;
		if (count == MAXCOUNT)
			break;
	}
	return (NULL);
}

int main(int argc, char **argv)
{
	int *tids;
	int i;
	int numthreads = 0;

	if (argc != 2) {
		printf("usage: ./app numofthreads\n");
		exit(1);
	}
	numthreads = atoi(argv[1]);
	tids = (int *)malloc(numthreads * sizeof(int));

	tids[0] = tsl_init(ALG_FCFS); /* the seed's comment: the main thread's id */

	for (i = 1; i < numthreads; ++i) {
		tids[i] = tsl_create_thread((void *)&foo, NULL);
		printf("thead %d created\n", (int)tids[i]);
	}

	for (i = 1; i < numthreads; ++i) {
		printf("main: waiting for thead %d\n", tids[i]);
		tsl_join(tids[i]);
		printf("main: thead %d finished\n", tids[i]);
	}

	free(tids);
	printf("main thread calling tlib_exit\n");
	tsl_exit();

	return 0;
}
