/* fib: recursive fork-join, the first program a oneTBB or Cilk user writes.
 *
 * weft_fork_join(rt, a, a_arg, b, b_arg) runs a and b, possibly at the same
 * time, and returns when both have returned. b is offered to idle workers;
 * when nobody takes it, the caller runs it itself at the cost of a push and
 * a pop, so forking at every level is cheap. Each level's records live on
 * the stack: nothing is allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <weft/weft.h>

typedef struct fib {
	weft_rt *rt;
	int n;
	long result;
} fib;

static void fib_task(void *arg)
{
	fib *f = arg;
	if (f->n < 2) {
		f->result = f->n;
		return;
	}
	fib a = {f->rt, f->n - 1, 0};
	fib b = {f->rt, f->n - 2, 0};
	weft_fork_join(f->rt, fib_task, &a, fib_task, &b);
	f->result = a.result + b.result;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 25;
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;

	/* The root runs as a task, so that every level forks from a worker. */
	fib top = {rt, n, 0};
	weft_task root;
	weft_task_init(&root, fib_task, &top);
	if (weft_post(rt, &root) != 0 || weft_wait(&root) != 0)
		return 1;
	printf("fib(%d) = %ld\n", n, top.result);
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
