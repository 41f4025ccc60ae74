/* Fiber stacks: mmap'ed, with a guard page below each stack that traps an
 * overflow, pooled and reused so that creating a fiber usually costs no
 * system call.
 *
 * Layout of one stack, one anonymous private mapping (MAP_NORESERVE,
 * MAP_STACK), low addresses first:
 *
 *   map                 base                             s (descriptor)
 *   | guard (one page) | usable: size bytes, grows down  | weft__stack  |
 *   |<------------------------ map_size (whole pages) ------------------>|
 *
 * The descriptor takes the last WEFT__STACK_DESC bytes of the mapping, so a
 * stack needs no allocation besides its own pages, and the stack's top is
 * (char *)s, aligned to 64 bytes. The mapping is the requested size plus
 * the descriptor, rounded up to whole pages, plus the guard page, plus a
 * page when that makes an even count (stack.c: an odd count spreads the
 * stacks over a cache's sets); size is what is left for the fiber, never
 * less than requested (a 16 KiB request maps 28 KiB: 4 KiB guard, 24,512
 * usable bytes, the 64-byte descriptor; the default 64 KiB maps 76 KiB).
 * The descriptor shares its page with the fiber's first frames, so the
 * page it dirties costs no RSS a running fiber would not use anyway.
 *
 * Guard pages: with MADV_GUARD_INSTALL (Linux 6.13+) the guard is installed
 * inside the stack's own mapping and costs no extra VMA (adjacent stacks
 * even merge into one VMA), so a million guarded stacks fit under
 * vm.max_map_count. Without it, a PROT_NONE page (mprotect) splits the
 * mapping in two VMAs per stack, and creating stacks fails with NULL (the
 * caller's WEFT_ENOMEM) and a one-time message naming vm.max_map_count when
 * the kernel refuses more mappings: a clear error, never a crash. Which one
 * is used is probed at the first stack (EINVAL from madvise: fall back).
 *
 * Reuse: put keeps up to max_cached stacks on the pool's free list as they
 * are, without MADV_DONTNEED: reuse then costs no system call and no page
 * fault, and the pages a cached stack holds are bounded by max_cached x
 * map_size. Stacks beyond max_cached are unmapped. (If munmap is refused,
 * which happens when unmapping from the middle of merged VMAs would pass
 * vm.max_map_count, the stack is cached anyway, beyond max_cached.)
 *
 * The reserve: a pool maps one stack when it is created, which is where a
 * stack size the system cannot map (RLIMIT_AS, memory) fails, with a
 * message naming the size and the limit (weft_rt_create then answers
 * WEFT_ENOMEM), and it never unmaps its last stack. So a pool that has no
 * stack handed out always has one to hand out: a worker that cannot map a
 * new stack has fibers alive that will give theirs back (src/fiber/engine.c
 * runs them first, then waits for them; see start_elsewhere).
 *
 * Overflow: a fiber that runs past its stack touches the guard page; the
 * SIGSEGV/SIGBUS handler (on an alternate signal stack, installed by
 * weft__stack_overflow_handler_install) recognises the fault address as the
 * guard of the current fiber's stack (or the page below it), prints which
 * task overflowed and its stack size, and aborts. weft's kernel threads
 * (src/core/thread.c) record their own stack with
 * weft__thread_stack_record, and a fault in its guard is reported the same
 * way, naming the running task and its function; then the process dies of
 * the fault as it would have without weft (SIG_DFL restored, the access
 * repeats): SIGSEGV. For any other fault it
 * calls the handler installed before it, or, when that was SIG_DFL or
 * SIG_IGN, restores SIG_DFL and returns so the fault repeats and kills the
 * process as it would have without weft. docs/stack-overflow.md says what
 * a guard page cannot catch.
 *
 * Stacks are registered with valgrind (VALGRIND_STACK_REGISTER) when its
 * headers were available at build time. */
#ifndef WEFT_SRC_FIBER_STACK_H
#define WEFT_SRC_FIBER_STACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct weft__stack {
	void *base;  /* lowest usable address (just above the guard page) */
	size_t size; /* usable bytes: base + size == (char *)this, the stack top */
	void *map;   /* the whole mapping, guard included */
	size_t map_size;
	unsigned valgrind_id;
	struct weft__stack *next; /* pool link */
} weft__stack;

/* Bytes the descriptor takes at the top of the mapping: keeps the stack
 * top 64-byte aligned. */
#define WEFT__STACK_DESC 64

typedef struct weft__stack_pool {
	size_t stack_size; /* usable size of every stack in the pool */
	size_t map_size;   /* mapping of every stack, guard and descriptor included */
	size_t max_cached; /* free stacks kept for reuse; more are unmapped */
	size_t cached;
	weft__stack *free_list;
	size_t live; /* handed out and not yet returned */
} weft__stack_pool;

/* Single-threaded: a pool belongs to one worker (or is used under a lock).
 * init fails with WEFT_EINVAL for a stack_size of 0 or one too large to
 * address, and with WEFT_ENOMEM (the reason on stderr: errno's text, the
 * size, RLIMIT_AS or vm.max_map_count) when the reserve stack cannot be
 * mapped; p->stack_size is then the usable size every stack will have (>=
 * the request). destroy unmaps the cached stacks; every stack must have
 * been put back. */
int weft__stack_pool_init(weft__stack_pool *p, size_t stack_size, size_t max_cached);
void weft__stack_pool_destroy(weft__stack_pool *p);

/* weft__stack_get returns a stack from the pool or maps a new one; NULL
 * when the system refuses (after printing why, with errno's text, the size
 * and the limit, once per process). Never NULL while p->live == 0. */
weft__stack *weft__stack_get(weft__stack_pool *p);
void weft__stack_put(weft__stack_pool *p, weft__stack *s);

/* What the overflow handler reports: set by the scheduler on every switch
 * into a fiber (a thread-local store), cleared (NULL, NULL) on the way out. */
extern _Thread_local const weft__stack *weft__current_stack
        __attribute__((tls_model("initial-exec")));
extern _Thread_local const void *weft__current_task __attribute__((tls_model("initial-exec")));

static inline void weft__stack_set_current(const weft__stack *s, const void *task)
{
	weft__current_task = task;
	weft__current_stack = s;
	/* The handler runs on this thread: it must see both stores. */
	atomic_signal_fence(memory_order_seq_cst);
}

/* Installs the SIGSEGV/SIGBUS handler once per process (thread-safe) and
 * an alternate signal stack for the calling thread (each worker calls it;
 * again on the same thread is a no-op). A thread that already has an
 * alternate signal stack of at least SIGSTKSZ keeps it. The one weft maps
 * is unmapped at thread exit (pthread key destructor); the main thread's
 * lives as long as the process. Returns 0 or WEFT_ENOMEM / WEFT_EINVAL. */
int weft__stack_overflow_handler_install(void);

/* weft__thread_stack_record notes the calling kernel thread's own stack
 * and guard (pthread_getattr_np) for the overflow handler; forget drops it
 * before the thread ends. Called by every thread weft creates. */
void weft__thread_stack_record(void);
void weft__thread_stack_forget(void);

/* True when guard pages are installed with MADV_GUARD_INSTALL (one VMA per
 * stack), false when they are PROT_NONE mappings (mprotect). Probes the
 * kernel if no stack was mapped yet. */
bool weft__stack_guard_in_mapping(void);

/* Testing: force the mprotect fallback from now on, as on a kernel without
 * MADV_GUARD_INSTALL (tests exercise the vm.max_map_count path with it). */
void weft__stack_testing_force_mprotect(void);

#endif
