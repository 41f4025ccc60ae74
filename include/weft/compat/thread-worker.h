/* The Rutgers CS416/518 "thread-worker" API (seed 004, Fall 2024 skeleton:
 * worker_create, worker_yield, worker_exit, worker_join, worker_mutex_*,
 * print_app_stats, worker_setschedprio) implemented on weft, so the seed's
 * benchmarks build unchanged. They write
 *
 *   #include <pthread.h>
 *   #include "../thread-worker.h"
 *
 * from their benchmarks/ directory, one level below the library's header.
 * weft mirrors that layout: this header, and an empty-but-for-a-forward
 * benchmarks/ directory below it, so they compile with one extra flag,
 *
 *   cc -pthread -I<weft>/include/weft/compat/benchmarks bench.c \
 *      -L<weft libdir> -lweft
 *
 * ("../thread-worker.h" is looked up as <that dir>/../thread-worker.h,
 * which is this file; a plain "thread-worker.h" finds the forward in
 * benchmarks/). -I<weft>/include/weft/compat works for programs that
 * include "thread-worker.h", and <weft/compat/thread-worker.h> with
 * -I<weft>/include. weft's own headers are reached by relative quoted
 * includes, so the one -I flag is enough.
 *
 * USE_WORKERS, as in the seed, renames the program's pthread_* calls and
 * types to the worker_* ones below. The seed turned it off by commenting
 * out its #define; here compile with -DWEFT_NO_USE_WORKERS instead, so one
 * source builds both ways (on weft, and on real Linux pthreads).
 *
 * The scheduler is chosen at run time, not with make SCHED=...: by default
 * every worker is a fiber on one kernel thread (WEFT_MODEL=fibers), the
 * policy is PSJF (WEFT_POLICY=psjf) and the timer preempts with a 10 ms
 * quantum (WEFT_PREEMPT=timer, WEFT_QUANTUM_US=10000). WEFT_POLICY=mlfq
 * selects MLFQ (WEFT_MLFQ_LEVELS, WEFT_MLFQ_BOOST_US), WEFT_MODEL=threads
 * runs the workers on a pool of kernel threads (WEFT_WORKERS of them).
 *
 * What differs from the seed (docs/seeds/compat-worker.md has the details):
 *  - worker ids count from 1 in creation order and are never reused;
 *  - the functions return 0 on success and -1 on misuse (NULL arguments,
 *    an unknown or already joined worker) instead of crashing;
 *  - print_app_stats reports times in microseconds (the seed left the unit
 *    open): turnaround = completion - creation, response = first run -
 *    creation, both averaged over the workers that have finished;
 *  - worker_setschedprio is declared here (the seed defined it only in
 *    thread-worker.c under #ifdef MLFQ); policies other than mlfq ignore it;
 *  - the linker symbols are weft_compat_<name> (via asm labels), so libweft
 *    exports nothing outside its weft_ namespace. A program that keeps its
 *    own thread-worker.h (and so calls worker_create, ... by those names,
 *    with its own worker_mutex_t) links against libweft-worker.a instead,
 *    the drop-in for the seed's libthread-worker.a
 *    (docs/seeds/compat-worker.md). */
#ifndef WEFT_COMPAT_THREAD_WORKER_H
#define WEFT_COMPAT_THREAD_WORKER_H

#if !defined(__GNUC__)
#error "weft/compat/thread-worker.h needs asm labels (GCC or Clang)"
#endif

/* As in the seed. It has effect only when this header comes first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

/* To use Linux pthreads instead of worker threads, compile with
 * -DWEFT_NO_USE_WORKERS (the seed: comment out the next line). */
#if !defined(WEFT_NO_USE_WORKERS) && !defined(USE_WORKERS)
#define USE_WORKERS 1
#endif

/* What the seed's header included, which its benchmarks rely on. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../export.h"
#include "../sync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Linker name of a compat function: weft_compat_<name>. */
#ifndef WEFT__COMPAT_SYM
#define WEFT__COMPAT_STR_(x)   #x
#define WEFT__COMPAT_STR(x)    WEFT__COMPAT_STR_(x)
#define WEFT__COMPAT_SYM(name) __asm__(WEFT__COMPAT_STR(__USER_LABEL_PREFIX__) "weft_compat_" #name)
#endif

/* A worker's id: 1, 2, 3, ... in creation order, never reused. */
typedef unsigned int worker_t;

/* The thread control block; private to the library (src/compat/worker.c). */
typedef struct TCB tcb;

/** A mutex: weft's mutex, which parks a waiting fiber (or blocks a waiting
 * kernel thread) instead of spinning. */
typedef struct worker_mutex_t {
	/** @cond WEFT_PRIVATE */
	weft_mutex m_;
	/** @endcond */
} worker_mutex_t;

/* Priorities for worker_setschedprio (MLFQ): HIGH_PRIO starts a worker in
 * the top queue, LOW_PRIO in the bottom one. */
#define NUMPRIO      4
#define HIGH_PRIO    3
#define MEDIUM_PRIO  2
#define DEFAULT_PRIO 1
#define LOW_PRIO     0

/* The default time slice, in milliseconds (the seed's "assume each quantum
 * is 10ms"). Changing it here changes nothing: set WEFT_QUANTUM_US (in
 * microseconds) in the environment at run time. */
#define QUANTUM 10

/* worker_create starts function(arg) as a new worker and stores its id in
 * *thread. attr is ignored. The first call starts the process-wide weft
 * runtime (destroyed at exit). Returns 0, or -1 for a NULL thread or
 * function, or when the runtime cannot start (an invalid WEFT_* value is
 * named on stderr) or memory runs out. Callable from any thread and from
 * workers. */
WEFT_EXTERN int worker_create(worker_t *thread, pthread_attr_t *attr, void *(*function)(void *),
                              void *arg) WEFT__COMPAT_SYM(worker_create);

/* worker_yield lets other workers run before the caller continues. Returns
 * 0. */
WEFT_EXTERN int worker_yield(void) WEFT__COMPAT_SYM(worker_yield);

/* worker_exit ends the calling worker, from any depth of calls, with
 * value_ptr as its result for worker_join. Called outside a worker it ends
 * the calling kernel thread (pthread_exit). */
WEFT_EXTERN __attribute__((noreturn)) void worker_exit(void *value_ptr)
        WEFT__COMPAT_SYM(worker_exit);

/* worker_join waits until the worker has finished, stores its result (the
 * function's return value or worker_exit's argument) in *value_ptr when
 * value_ptr is not NULL, and releases the worker. Returns 0, or -1 for an
 * unknown id, a worker already joined (or being joined), or a worker
 * joining itself. */
WEFT_EXTERN int worker_join(worker_t thread, void **value_ptr) WEFT__COMPAT_SYM(worker_join);

/* worker_mutex_init prepares an unlocked mutex; mutexattr is ignored.
 * lock waits behind earlier waiters (first come, first served; not
 * recursive); unlock hands the mutex to the longest waiter; destroy
 * releases nothing (init allocates nothing) and fails while the mutex is
 * locked or waited for. Each returns 0, or -1 for NULL (and unlock for a
 * mutex that is not locked, destroy for one in use). */
WEFT_EXTERN int worker_mutex_init(worker_mutex_t *mutex, const pthread_mutexattr_t *mutexattr)
        WEFT__COMPAT_SYM(worker_mutex_init);
WEFT_EXTERN int worker_mutex_lock(worker_mutex_t *mutex) WEFT__COMPAT_SYM(worker_mutex_lock);
WEFT_EXTERN int worker_mutex_unlock(worker_mutex_t *mutex) WEFT__COMPAT_SYM(worker_mutex_unlock);
WEFT_EXTERN int worker_mutex_destroy(worker_mutex_t *mutex) WEFT__COMPAT_SYM(worker_mutex_destroy);

/* worker_setschedprio sets the MLFQ queue a worker runs in from its next
 * enqueue on: prio HIGH_PRIO (3) is the top level, LOW_PRIO (0) the level
 * NUMPRIO-1 below it. Other policies ignore it. Returns 0, or -1 for an
 * unknown id or a prio outside LOW_PRIO .. HIGH_PRIO. */
WEFT_EXTERN int worker_setschedprio(worker_t thread, int prio)
        WEFT__COMPAT_SYM(worker_setschedprio);

/* print_app_stats writes the seed's three lines to stderr: the context
 * switches (fibers switched in; under WEFT_MODEL=threads or spawn, workers
 * run plus preemptions), and the average turnaround and response times, in
 * microseconds, of the workers that have finished. */
WEFT_EXTERN void print_app_stats(void) WEFT__COMPAT_SYM(print_app_stats);

#ifdef USE_WORKERS
#define pthread_t             worker_t
#define pthread_mutex_t       worker_mutex_t
#define pthread_create        worker_create
#define pthread_exit          worker_exit
#define pthread_join          worker_join
#define pthread_mutex_init    worker_mutex_init
#define pthread_mutex_lock    worker_mutex_lock
#define pthread_mutex_unlock  worker_mutex_unlock
#define pthread_mutex_destroy worker_mutex_destroy
#define pthread_setschedprio  worker_setschedprio
#endif

#ifdef __cplusplus
}
#endif

#endif
