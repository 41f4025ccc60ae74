/* The second adversarial review's findings (issue 26) that belong to the
 * core, on every model and worker count (MATRIX):
 * `test_review <case> <model> <workers>`.
 *
 *   progress_remove_self  (c) a progress function that removes itself
 *                         (called by an idle fiber worker, and by the
 *                         test thread's weft_progress_poll on every model)
 *                         returns, and the runtime is destroyed: before the
 *                         fix the remove waited for the poll it was called
 *                         from, for ever (run in a child with an alarm, so
 *                         a hang fails the case instead of the suite)
 *   group_after_waits     (d) once weft_wait has returned for each task of a
 *                         group, the group counts none of them: its pending
 *                         count is 0, weft_group_init succeeds (no false
 *                         WEFT_EBUSY) and the group can be freed (ASan saw
 *                         the worker's decrement land after free) */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <weft/progress.h>

#include "harness.h"

/* ------------------------------------------------------------ (c) */

typedef struct self_remover {
	atomic_int calls;
	atomic_int removed_rc; /* 1 until the remove returned */
} self_remover;

static int64_t remove_self(void *arg)
{
	self_remover *s = arg;
	if (atomic_fetch_add(&s->calls, 1) == 0)
		atomic_store(&s->removed_rc, weft_progress_remove(remove_self, s));
	return -1;
}

static void nap(void *arg)
{
	(void)arg;
	weft_sleep_ns(20 * 1000 * 1000); /* the worker idles: a fiber worker polls */
}

static void remove_self_body(void *arg)
{
	(void)arg;
	self_remover s = {.removed_rc = 1};
	weft_rt *rt;
	weft_config cfg;
	wt_config(&cfg);
	if (weft_rt_create(&rt, &cfg) != 0)
		_exit(10);
	if (weft_progress_add(remove_self, &s) != 0)
		_exit(11);
	weft_task t;
	weft_task_init(&t, nap, NULL);
	if (weft_post(rt, &t) != 0 || weft_wait(&t) != 0)
		_exit(12);
	/* Kernel-thread models never poll by themselves: the test thread
	 * does (and on fiber models, when the worker did not). */
	if (atomic_load(&s.calls) == 0)
		(void)weft_progress_poll();
	if (atomic_load(&s.calls) != 1 || atomic_load(&s.removed_rc) != 0)
		_exit(13);
	/* Gone: neither a poll nor a second remove finds it. */
	(void)weft_progress_poll();
	if (atomic_load(&s.calls) != 1 || weft_progress_remove(remove_self, &s) != WEFT_EINVAL)
		_exit(14);
	if (weft_rt_destroy(rt) != 0)
		_exit(15);
}

static void progress_remove_self(void)
{
	char err[2048];
	int status = wt_in_child(remove_self_body, NULL, 20, err, sizeof(err));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		print_message("child: %s %d; stderr: %s\n",
		              WIFSIGNALED(status) ? "signal" : "exit status",
		              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------ (d) */

static void nothing(void *arg)
{
	(void)arg;
}

static void group_after_waits(void)
{
	weft_rt *rt = wt_create_default();
	int rounds = WT_SANITIZER ? 3000 : 40000;
	long still_counted = 0, busy = 0;
	enum { K = 2 };
	for (int r = 0; r < rounds; r++) {
		weft_group *g = malloc(sizeof(*g)); /* freed at once: ASan sees a late write */
		assert_non_null(g);
		/* Often the block just freed: a group left counting there
		 * refuses its init too. */
		if (weft_group_init(g) == WEFT_EBUSY) {
			busy++;
			memset(g, 0, sizeof(*g));
		}
		weft_task t[K];
		for (int i = 0; i < K; i++) {
			weft_task_init(&t[i], nothing, NULL);
			assert_rc(0, weft_post_in(rt, g, &t[i]));
		}
		for (int i = 0; i < K; i++)
			assert_rc(0, weft_wait(&t[i]));
		still_counted += weft_group_pending(g) != 0;
		busy += weft_group_init(g) == WEFT_EBUSY;
		free(g);
	}
	print_message("%d rounds: group still counting after the waits %ld, "
	              "weft_group_init WEFT_EBUSY %ld\n",
	              rounds, still_counted, busy);
	assert_rc(0, weft_rt_destroy(rt));
	assert_int_equal(still_counted, 0);
	assert_int_equal(busy, 0);
}

WT_CASES(WT_CASE(progress_remove_self), WT_CASE(group_after_waits));
