/* The seed's Thread Support Library API (Bilkent CS342 Spring 2024,
 * project 2: "tsl.h") implemented on weft's fiber layer, so programs
 * written against the seed build unchanged. They write #include "tsl.h";
 * compile them with one extra flag,
 *
 *   cc -I<weft>/include/weft/compat app.c -L<weft libdir> -lweft -lpthread
 *
 * weft's own headers are reached by relative quoted includes, so the one
 * -I flag is enough. It may also be included as <weft/compat/tsl.h> with
 * -I<weft>/include.
 *
 * The model is the seed's: user-level threads, purely cooperative, M:1 on
 * the kernel thread that called tsl_init. That thread's own flow of control
 * becomes TSL thread TID_MAIN (1) and is scheduled like the others; other
 * threads get tids 2, 3, ... in creation order. Switches happen only in
 * tsl_yield, tsl_join and tsl_exit (and when a thread's function returns).
 *
 * What differs from the seed (docs/seeds/compat-tsl.md has the details):
 *  - 64-bit, no -m32; the switch is weft's assembly context switch (or
 *    its ucontext fallback on other processors), not getcontext/
 *    setcontext. <ucontext.h> is still included because the seed's
 *    header included it and its programs may rely on that.
 *  - stacks come from weft's pool of mmap'ed stacks with a guard page: an
 *    overflow prints "weft: fiber task ... overflowed its N-byte stack"
 *    and aborts instead of corrupting memory. A stack is at least
 *    TSL_STACKSIZE bytes; WEFT_STACK_SIZE (16384 or more) overrides it.
 *  - the environment beats the code, as everywhere in weft: WEFT_POLICY
 *    (fifo, random, priority, psjf, mlfq) overrides tsl_init's algorithm;
 *    WEFT_SEED seeds ALG_RANDOM (same seed, same interleaving; unset: a
 *    time seed); WEFT_QUANTUM_US is the quantum of psjf and mlfq.
 *  - ALG_MYALGORITHM is weft's psjf ("least attained service"): the ready
 *    thread that has used the fewest quanta of CPU time runs first, FCFS
 *    among equals; a thread that yields while it has used fewer quanta
 *    than every ready thread keeps the CPU.
 *  - tsl_join does not poll: the joiner sleeps until the target
 *    terminates, then becomes ready (FCFS: at the tail). A join that would
 *    close a cycle of joiners (deadlock), a second joiner of the same
 *    thread, and a join of oneself return TSL_ERROR.
 *  - every function returns TSL_ERROR before tsl_init and when called from
 *    a kernel thread other than the one that called tsl_init; tsl_init
 *    succeeds once per process.
 *  - the linker symbols are weft_compat_<name> (via asm labels), so
 *    libweft exports nothing outside its weft_ namespace; source code still
 *    calls tsl_init, tsl_yield, ... A program that keeps its own copy of
 *    the seed's tsl.h (and so calls tsl_init, ... by those names) links
 *    against libweft-tsl.a instead, the drop-in for the seed's libtsl.a
 *    (docs/seeds/compat-tsl.md). */
#ifndef WEFT_COMPAT_TSL_H
#define WEFT_COMPAT_TSL_H

#if !defined(__GNUC__)
#error "weft/compat/tsl.h needs asm labels (GCC or Clang)"
#endif

/* What the seed's tsl.h included. */
#include <ucontext.h>

#include "../export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_MAXTHREADS 256   /* threads alive or not yet joined, main included */
#define TSL_STACKSIZE  32768 /* bytes: the smallest stack a thread gets */

/* Scheduling algorithms (tsl_init's salg). */
#define ALG_FCFS        1 /* round robin: the yielder goes to the tail */
#define ALG_RANDOM      2 /* a uniformly random ready thread (WEFT_SEED) */
#define ALG_MYALGORITHM 3 /* weft's psjf: fewest quanta of CPU used first */

#define TID_MAIN    1 /* the thread that called tsl_init */
#define TSL_ANY     0 /* tsl_yield: let the algorithm choose */
#define TSL_ERROR   -1
#define TSL_SUCCESS 0

/* Linker name of a compat function: weft_compat_<name>. */
#ifndef WEFT__COMPAT_SYM
#define WEFT__COMPAT_STR_(x)   #x
#define WEFT__COMPAT_STR(x)    WEFT__COMPAT_STR_(x)
#define WEFT__COMPAT_SYM(name) __asm__(WEFT__COMPAT_STR(__USER_LABEL_PREFIX__) "weft_compat_" #name)
#endif

/* tsl_init makes the calling kernel thread the home of the library and its
 * flow of control thread TID_MAIN, running, with scheduling algorithm salg
 * (ALG_FCFS, ALG_RANDOM or ALG_MYALGORITHM; WEFT_POLICY overrides it).
 * Returns TSL_SUCCESS, or TSL_ERROR for a bad salg, an invalid WEFT_*
 * variable, or when tsl_init already succeeded in this process. */
WEFT_EXTERN int tsl_init(int salg) WEFT__COMPAT_SYM(tsl_init);

/* tsl_create_thread makes a thread that will run tsf(targ) (targ may be
 * NULL) and puts it in the ready queue; the caller keeps running. When tsf
 * returns, the thread ends as if it called tsl_exit. Returns the new tid
 * (2, 3, ... in creation order), or TSL_ERROR for a NULL tsf, when
 * TSL_MAXTHREADS threads (main included) are alive or not yet joined, or
 * when no stack can be mapped. */
WEFT_EXTERN int tsl_create_thread(void (*tsf)(void *), void *targ)
        WEFT__COMPAT_SYM(tsl_create_thread);

/* tsl_yield gives the CPU away. With TSL_ANY the algorithm chooses among
 * the ready threads (the caller continues if none is ready, or, under
 * ALG_MYALGORITHM, if it has used less CPU than all of them). With tid > 0
 * the ready thread tid runs next; if no ready thread has that tid (unknown,
 * terminated, waiting in tsl_join, or the caller itself) it returns
 * TSL_ERROR at once without yielding. Otherwise it returns, once the
 * caller runs again, the tid of the thread it yielded to (its own tid when
 * it kept the CPU). */
WEFT_EXTERN int tsl_yield(int tid) WEFT__COMPAT_SYM(tsl_yield);

/* tsl_exit ends the calling thread; it does not return. The thread's TCB
 * and stack stay until some thread joins it. When no thread is left that
 * could run, the process exits with status 0 (exit(0), on the main
 * thread's stack, after every stack is unmapped). Returns TSL_ERROR only
 * before tsl_init. */
WEFT_EXTERN int tsl_exit(void) WEFT__COMPAT_SYM(tsl_exit);

/* tsl_join waits until thread tid has terminated (exited or cancelled),
 * then frees its TCB and stack. Returns tid, or TSL_ERROR for an unknown
 * or already joined tid, the caller's own tid, a thread someone else is
 * joining, or a join that would deadlock (tid is, directly or through a
 * chain of joiners, waiting for the caller). */
WEFT_EXTERN int tsl_join(int tid) WEFT__COMPAT_SYM(tsl_join);

/* tsl_cancel ends thread tid at once: it never runs again (a thread
 * waiting in tsl_join stops waiting). Its TCB stays until it is joined;
 * its joiner, if any, becomes ready. Returns TSL_SUCCESS (also when tid has
 * already terminated), or TSL_ERROR for an unknown or joined tid or the
 * caller's own tid (use tsl_exit). */
WEFT_EXTERN int tsl_cancel(int tid) WEFT__COMPAT_SYM(tsl_cancel);

/* tsl_gettid returns the calling thread's tid (TID_MAIN for the thread
 * that called tsl_init), or TSL_ERROR before tsl_init. */
WEFT_EXTERN int tsl_gettid(void) WEFT__COMPAT_SYM(tsl_gettid);

#ifdef __cplusplus
}
#endif

#endif
