/* The seed scheduler's API (CMPE 180C "sched.h": task_init, sched_init,
 * sched_post, sched_execute, sched_fini) implemented on weft, so the seed's
 * programs build unchanged. They write `#include <sched.h>`; compile them
 * with one extra flag,
 *
 *   cc -I<weft>/include/weft/compat prog.c -L<weft libdir> -lweft -lpthread
 *
 * and this header is found first. It pulls in the system <sched.h> with
 * #include_next (so <pthread.h>, which needs sched_param and friends, and
 * sched_yield() keep working), then the headers the seed's header included
 * and its programs rely on without including them (stdbool.h for bool,
 * string.h for bzero, stdlib.h, stdint.h, unistd.h, pthread.h, assert.h;
 * and ctype.h, which simple_thread.c uses without including it and which
 * compilers that reject implicit declarations need), then declares the
 * seed API. weft's own headers are reached by relative
 * quoted includes, so the one -I flag is enough. It may also be included as
 * <weft/compat/sched.h> with -I<weft>/include.
 *
 * What differs from the seed (docs/seeds/compat.md has the details):
 *  - priority order is exact over the whole uint64_t range (the seed's heap
 *    had an off-by-one sift-up and truncated pri to int), and tasks of
 *    equal priority run in post order (the seed's did not);
 *  - the task function's second argument is weft_worker_index(),
 *    0 .. num_workers-1 under every model;
 *  - WEFT_MODEL, WEFT_WORKERS and WEFT_POLICY in the environment override
 *    what the program asked for (num_workers then reports the effective
 *    count);
 *  - misuse returns false instead of asserting or corrupting the queue
 *    (posting a task that is already posted, posting after sched_fini);
 *  - the linker symbols are weft_compat_<name> (via asm labels), so libweft
 *    exports nothing outside its weft_ namespace; source code still calls
 *    task_init, sched_post, ... A program that keeps the seed's own
 *    sched.h (and so calls sched_init, ... by those names, with the seed's
 *    struct layouts) links against libweft-sched.a instead, the drop-in for
 *    the seed's libsched.a (docs/seeds/compat.md). */
#ifndef WEFT_COMPAT_SCHED_H
#define WEFT_COMPAT_SCHED_H

#if !defined(__GNUC__)
#error "weft/compat/sched.h needs #include_next and asm labels (GCC or Clang)"
#endif

/* #include_next is an extension -Wpedantic would flag in every program that
 * includes this header; like the system header it stands for, it is read
 * as a system header. */
#pragma GCC system_header

/* The system header this one shadows: sched_yield, sched_param, cpu_set_t. */
#include_next <sched.h>

/* What the seed's sched.h included, which its programs rely on. */
#include <assert.h>
#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../export.h"
#include "../task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Linker name of a compat function: weft_compat_<name>. */
#define WEFT__COMPAT_STR_(x)   #x
#define WEFT__COMPAT_STR(x)    WEFT__COMPAT_STR_(x)
#define WEFT__COMPAT_SYM(name) __asm__(WEFT__COMPAT_STR(__USER_LABEL_PREFIX__) "weft_compat_" #name)

struct sched;
struct weft_compat_sched;

/** A unit of work. pri, fptr and args are the seed's fields; set them with
 * task_init. The rest is private. The task is caller-owned: it must stay
 * alive and untouched from sched_post until it has run (sched_execute or
 * sched_fini returned); after that it may be posted again. */
typedef struct task {
	uint64_t pri;              /**< smaller runs first */
	void (*fptr)(void *, int); /**< fptr(args, worker index) */
	void *args;                /**< passed to fptr */
	/** @cond WEFT_PRIVATE */
	weft_task task_;                  /* what weft queues and runs */
	struct task *held_next_;          /* link while held (SCHED_STOPPED) */
	struct weft_compat_sched *owner_; /* scheduler it was last posted to */
	int held_;                        /* in the held list */

	/** @endcond */
} task_t;

/* task_init zeroes *tp, then sets pri, fptr and args. */
WEFT_EXTERN void task_init(task_t *tp, uint64_t pri, void (*fptr)(void *, int), void *args)
        WEFT__COMPAT_SYM(task_init);

typedef enum sched_state {
	SCHED_STOPPED = 0, /* tasks can be posted but are held, not run */
	SCHED_RUNNING = 1, /* posted tasks run at once */
	SCHED_DONE = 2     /* sched_fini: drain, then stop */
} sched_state_t;

/** A scheduler: a weft runtime plus the list of held tasks. The public
 * fields are for reading. */
typedef struct sched {
	int num_workers;     /**< workers actually running (after WEFT_WORKERS) */
	int queue_depth;     /**< most tasks posted and not yet started */
	sched_state_t state; /**< changed by sched_post, sched_execute, sched_fini */
	/** @cond WEFT_PRIVATE */
	struct weft_compat_sched *impl_;

	/** @endcond */
} sched_t;

/* sched_init starts num_workers workers (0: one per CPU) that take at most
 * queue_depth waiting tasks, in state SCHED_STOPPED. The model, worker
 * count and policy may be overridden by WEFT_MODEL, WEFT_WORKERS and
 * WEFT_POLICY. Returns false (and leaves nothing allocated) for a NULL sp,
 * num_workers < 0, queue_depth < 1, an invalid WEFT_* value or when the
 * workers cannot be started, and says why on stderr: the seed's programs
 * ignore the result. sched_post and sched_execute on a scheduler whose
 * sched_init failed then say so too (once each) instead of silently running
 * nothing; sched_fini clears it. */
WEFT_EXTERN bool sched_init(sched_t *sp, int num_workers, int queue_depth)
        WEFT__COMPAT_SYM(sched_init);

/* sched_post queues tp with priority tp->pri. In SCHED_STOPPED, and with
 * run_now false, the task is held until sched_execute (or a later run_now
 * post, or sched_fini). With run_now true the scheduler switches to
 * SCHED_RUNNING and everything held starts, in priority order. In
 * SCHED_RUNNING every post runs at once. Returns false, changing nothing,
 * when queue_depth tasks are already waiting (posted, not started), when tp
 * is already posted and has not finished, when tp has no function, or when
 * sp is not initialised. Callable from any thread, including from tasks. */
WEFT_EXTERN bool sched_post(sched_t *sp, task_t *tp, bool run_now) WEFT__COMPAT_SYM(sched_post);

/* sched_execute switches to SCHED_RUNNING, starts every held task and
 * blocks until every posted task (including tasks posted by tasks) has
 * finished, then returns to SCHED_STOPPED: post, execute, post, execute.
 * Called from inside one of the scheduler's own tasks, it starts the held
 * tasks and returns without waiting (waiting there would deadlock). */
WEFT_EXTERN void sched_execute(sched_t *sp) WEFT__COMPAT_SYM(sched_execute);

/* sched_fini runs every task still posted or held, stops the workers and
 * frees everything sched_init acquired. Afterwards sched_post returns false
 * and sched_init may be called again. Must not be called from one of the
 * scheduler's own tasks (it then does nothing). */
WEFT_EXTERN void sched_fini(sched_t *sp) WEFT__COMPAT_SYM(sched_fini);

#ifdef __cplusplus
}
#endif

#endif
