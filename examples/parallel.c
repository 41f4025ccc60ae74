/* parallel: a parallel loop and a reduction over one array.
 *
 * weft_parallel_for hands the body sub-ranges [lo, hi) of the index range,
 * so the inner loop is an ordinary loop. weft_parallel_reduce also gives
 * each sub-range an accumulator (init), folds its iterations into it (body)
 * and combines neighbours, left then right (combine). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <weft/weft.h>

#define N 1000000

static void fill(size_t lo, size_t hi, void *arg)
{
	uint64_t *x = arg;
	for (size_t i = lo; i < hi; i++)
		x[i] = (uint64_t)i * i;
}

static void sum_init(void *acc, void *arg)
{
	(void)arg;
	*(uint64_t *)acc = 0;
}

static void sum_body(size_t lo, size_t hi, void *acc, void *arg)
{
	const uint64_t *x = arg;
	uint64_t s = *(uint64_t *)acc;
	for (size_t i = lo; i < hi; i++)
		s += x[i];
	*(uint64_t *)acc = s;
}

static void sum_combine(void *acc, const void *right, void *arg)
{
	(void)arg;
	*(uint64_t *)acc += *(const uint64_t *)right;
}

int main(void)
{
	uint64_t *x = malloc(N * sizeof(*x));
	weft_rt *rt;
	if (!x || weft_rt_create(&rt, NULL) != 0)
		return 1;

	/* grain 0: weft picks the cut (a chunk per worker, split further when
	 * a worker is idle); a grain g > 0 gives the body at most g iterations. */
	if (weft_parallel_for(rt, 0, N, 0, fill, x) != 0)
		return 1;

	static const weft_reducer sum = {sizeof(uint64_t), sum_init, sum_body, sum_combine};
	uint64_t total;
	if (weft_parallel_reduce(rt, 0, N, 0, &sum, x, &total) != 0)
		return 1;

	uint64_t n = N - 1, expected = n * (n + 1) * (2 * n + 1) / 6;
	printf("sum of i*i for i < %d: %llu (%s)\n", N, (unsigned long long)total,
	       total == expected ? "matches n(n+1)(2n+1)/6" : "WRONG");
	free(x);
	return weft_rt_destroy(rt) == 0 && total == expected ? 0 : 1;
}
