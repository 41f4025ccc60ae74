/* sort: a parallel merge sort, divide and conquer with weft_fork_join.
 *
 * Each level sorts its two halves as a fork-join pair, then merges them
 * into a scratch array. Below CUTOFF elements the recursion stops and
 * qsort takes over: forking is cheap in weft (a push and a pop when nobody
 * steals), but a merge level per 8 elements would not be. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/weft.h>

#define N      1000000
#define CUTOFF 4096

typedef struct span {
	weft_rt *rt;
	int *a, *tmp; /* tmp: scratch of the same size as a */
	size_t n;
} span;

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

static void merge_sort(void *arg)
{
	span *s = arg;
	if (s->n <= CUTOFF) {
		qsort(s->a, s->n, sizeof(int), cmp_int);
		return;
	}
	size_t half = s->n / 2;
	span left = {s->rt, s->a, s->tmp, half};
	span right = {s->rt, s->a + half, s->tmp + half, s->n - half};
	weft_fork_join(s->rt, merge_sort, &left, merge_sort, &right);

	/* Merge the sorted halves into tmp, then copy back. */
	size_t i = 0, j = half, k = 0;
	while (i < half && j < s->n)
		s->tmp[k++] = s->a[j] < s->a[i] ? s->a[j++] : s->a[i++];
	while (i < half)
		s->tmp[k++] = s->a[i++];
	while (j < s->n)
		s->tmp[k++] = s->a[j++];
	memcpy(s->a, s->tmp, s->n * sizeof(int));
}

int main(void)
{
	int *a = malloc(N * sizeof(int)), *tmp = malloc(N * sizeof(int));
	weft_rt *rt;
	if (!a || !tmp || weft_rt_create(&rt, NULL) != 0)
		return 1;
	uint32_t x = 12345; /* a fixed pseudo-random input: the same every run */
	for (size_t i = 0; i < N; i++) {
		x = x * 1664525u + 1013904223u;
		a[i] = (int)(x >> 1);
	}

	span all = {rt, a, tmp, N};
	weft_task root;
	weft_task_init(&root, merge_sort, &all);
	if (weft_post(rt, &root) != 0 || weft_wait(&root) != 0)
		return 1;

	size_t bad = 0;
	for (size_t i = 1; i < N; i++)
		bad += a[i - 1] > a[i];
	printf("sorted %d ints: %s\n", N, bad == 0 ? "in order" : "NOT in order");
	free(a);
	free(tmp);
	return weft_rt_destroy(rt) == 0 && bad == 0 ? 0 : 1;
}
