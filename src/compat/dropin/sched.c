/* libweft-sched.a: the CMPE 180C scheduler's own function names
 * (task_init, sched_init, sched_post, sched_execute, sched_fini), for a
 * program compiled against the seed's own sched.h (its Makefile's
 * -I ../sched). Each forwards to weft's (src/compat/sched.c). See dropin.h.
 *
 * The seed's header gives task_t and sched_t the seed's layouts, which are
 * not weft's (weft's task_t embeds a weft_task), so this file reads and
 * writes the program's structs only through mirrors of those layouts,
 * seed_task and seed_sched below, checked against the seed's sizes:
 *
 *  - task_init writes the seed's three fields and nothing else;
 *  - sched_init keeps a weft scheduler (struct dropin_sched) in the
 *    pointer the seed kept its heap in, and keeps num_workers and state
 *    up to date for programs that read them;
 *  - sched_post copies the program's task (pri, fptr, args) into a weft
 *    task_t of its own and posts that: the program's task is free to be
 *    reused at once (the seed required it to stay untouched until run).
 *    The copies are kept on a list, pushed without a lock (posts come from
 *    tasks too), and freed once they have finished: by sched_execute after
 *    its wait, by a post that finds more than a queue's worth outstanding,
 *    and by sched_fini.
 *
 * The seed's heap_* functions (its priority queue, which its programs do
 * not call) are not provided. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include <weft/compat/sched.h>
#include <weft/task.h>

#include "dropin.h"

/* The seed's struct task. */
struct seed_task {
	uint64_t pri;
	void (*fptr)(void *, int);
	void *args;
};

/* The seed's struct sched, with its struct priority_queue inlined; heap
 * (the seed's heap_t *) holds this file's struct dropin_sched. */
struct seed_sched {
	pthread_cond_t cv;
	pthread_mutex_t lock;
	void *heap;
	int remaining_tasks;
	pthread_t *workers;
	int num_workers;
	int state; /* the seed's sched_state_t: SCHED_STOPPED, ... */
};

/* glibc's pthread_mutex_t is 40 bytes on x86-64 and 48 on aarch64, so the
 * seed's sched_t differs between them (found by the aarch64 build). */
#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert(sizeof(struct seed_task) == 24, "the seed's task_t is 24 bytes on LP64");
#endif
#if defined(__x86_64__) && defined(__GLIBC__)
_Static_assert(offsetof(struct seed_sched, num_workers) == 112 &&
                       offsetof(struct seed_sched, state) == 116 &&
                       sizeof(struct seed_sched) == 120,
               "the seed's sched_t on x86-64 glibc");
#elif defined(__aarch64__) && defined(__GLIBC__)
_Static_assert(offsetof(struct seed_sched, num_workers) == 120 &&
                       offsetof(struct seed_sched, state) == 124 &&
                       sizeof(struct seed_sched) == 128,
               "the seed's sched_t on aarch64 glibc");
#endif

struct copy {
	task_t t;          /* weft's task, made from the program's */
	struct copy *next; /* on dropin_sched.copies */
};

struct dropin_sched {
	sched_t s;                     /* weft's scheduler */
	_Atomic(struct copy *) copies; /* posted copies, newest first */
	_Atomic long outstanding;      /* copies on the list */
};

static struct dropin_sched *of(struct seed_sched *sp)
{
	return sp ? sp->heap : NULL;
}

static void sync_fields(struct seed_sched *sp, struct dropin_sched *d)
{
	sp->num_workers = d->s.num_workers;
	sp->state = (int)d->s.state;
}

/* Frees the copies that have finished (all of them when `all`: the
 * runtime is gone), keeping the others. Safe against concurrent posts and
 * reaps: it takes the whole list and pushes back what it keeps. */
static void reap(struct dropin_sched *d, bool all)
{
	struct copy *c = atomic_exchange(&d->copies, NULL);
	while (c) {
		struct copy *next = c->next;
		weft_task_state st = weft_task_state_of(&c->t.task_);
		if (all || st == WEFT_TASK_DONE || st == WEFT_TASK_CANCELLED) {
			if (!all)
				weft_wait(&c->t.task_); /* finished: returns at once */
			free(c);
			atomic_fetch_sub(&d->outstanding, 1);
		} else {
			c->next = atomic_load(&d->copies);
			while (!atomic_compare_exchange_weak(&d->copies, &c->next, c))
				;
		}
		c = next;
	}
}

WEFT_DROPIN void dropin_task_init(struct seed_task *tp, uint64_t pri, void (*fptr)(void *, int),
                                  void *args) WEFT__DROPIN_SYM(task_init);
WEFT_DROPIN bool dropin_sched_init(struct seed_sched *sp, int num_workers, int queue_depth)
        WEFT__DROPIN_SYM(sched_init);
WEFT_DROPIN bool dropin_sched_post(struct seed_sched *sp, struct seed_task *tp, bool run_now)
        WEFT__DROPIN_SYM(sched_post);
WEFT_DROPIN void dropin_sched_execute(struct seed_sched *sp) WEFT__DROPIN_SYM(sched_execute);
WEFT_DROPIN void dropin_sched_fini(struct seed_sched *sp) WEFT__DROPIN_SYM(sched_fini);

void dropin_task_init(struct seed_task *tp, uint64_t pri, void (*fptr)(void *, int), void *args)
{
	if (!tp)
		return;
	memset(tp, 0, sizeof(*tp));
	tp->pri = pri;
	tp->fptr = fptr;
	tp->args = args;
}

/* A failed init keeps its dropin_sched, whose weft scheduler then says
 * "sched_init failed" to the posts that follow (the seed's programs do not
 * look at the result); sched_fini frees it. */
bool dropin_sched_init(struct seed_sched *sp, int num_workers, int queue_depth)
{
	if (!sp)
		return false;
	memset(sp, 0, sizeof(*sp));
	struct dropin_sched *d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "weft: sched_init: out of memory\n");
		return false;
	}
	bool ok = sched_init(&d->s, num_workers, queue_depth);
	sp->heap = d;
	sync_fields(sp, d);
	return ok;
}

bool dropin_sched_post(struct seed_sched *sp, struct seed_task *tp, bool run_now)
{
	struct dropin_sched *d = of(sp);
	if (!d || !tp)
		return false;
	if (d->s.impl_ && atomic_load(&d->outstanding) > 2L * d->s.queue_depth + 16)
		reap(d, false);
	struct copy *c = malloc(sizeof(*c));
	if (!c)
		return false;
	task_init(&c->t, tp->pri, tp->fptr, tp->args);
	if (!sched_post(&d->s, &c->t, run_now)) {
		free(c); /* refused: never posted */
		return false;
	}
	sync_fields(sp, d);
	/* On the list once posted (a reap until then cannot see it, and
	 * nothing else frees it: sched_fini comes after every post). */
	atomic_fetch_add(&d->outstanding, 1);
	c->next = atomic_load(&d->copies);
	while (!atomic_compare_exchange_weak(&d->copies, &c->next, c))
		;
	return true;
}

void dropin_sched_execute(struct seed_sched *sp)
{
	struct dropin_sched *d = of(sp);
	if (!d)
		return;
	sched_execute(&d->s);
	sync_fields(sp, d);
	if (d->s.impl_)
		reap(d, false);
}

void dropin_sched_fini(struct seed_sched *sp)
{
	struct dropin_sched *d = of(sp);
	if (!d)
		return;
	sched_fini(&d->s);
	if (d->s.impl_)
		return; /* from one of its own tasks: weft's did nothing */
	reap(d, true);
	free(d);
	memset(sp, 0, sizeof(*sp));
	sp->state = SCHED_DONE;
}
