/* What the layers of weft share and the public API does not show: the
 * runtime object, the model and policy ops tables, the per-thread context
 * and the helpers every model uses to run and account for tasks. */
#ifndef WEFT_SRC_CORE_INTERNAL_H
#define WEFT_SRC_CORE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <weft/weft.h>

#include "core/alloc.h"    /* WEFT__ALIGNED, WEFT__WARN_UNUSED, weft__alloc */
#include "core/lock_raw.h" /* weft__lock */
#include "core/log.h"      /* weft__log */

#define WEFT__MAX_WORKERS 1024

/* The struct of type `type` whose member `field` p points to. */
#define WEFT__CONTAINER(p, type, field) ((type *)(void *)((char *)(p)-offsetof(type, field)))

#define WEFT__MIN_STACK     16384L
#define WEFT__MAX_STACK     (1L << 30)
#define WEFT__DEFAULT_STACK 65536L

#define WEFT__MIN_QUANTUM_US     100u
#define WEFT__MAX_QUANTUM_US     10000000u
#define WEFT__DEFAULT_QUANTUM_US 10000u /* seed 004: "assume each quantum is 10ms" */
#define WEFT__MAX_LEVELS         64u
#define WEFT__DEFAULT_LEVELS     4u /* seed 004's NUMPRIO */
#define WEFT__DEFAULT_BOOST_US   100000u

/* ------------------------------------------------------------ task state */

/* weft_task.state_ holds a weft_task_state in the low bits and, above them,
 * WAITER: weft_wait callers are on the task's waiters_ list and must be
 * woken when it finishes; LOCKED: the list is being changed (see task.c). */
#define WEFT__STATE_MASK 0x7u
#define WEFT__WAITER     0x8u
#define WEFT__LOCKED     0x10u
/* While a task is queued or running, the bits above hold the fork
 * generation of the process that posted it (weft_wait in a forked child
 * refuses to wait for a task of its parent's, which never finishes there)
 * and a signature, so that weft_task_init can refuse an in-flight task
 * without mistaking uninitialised memory for one (21 bits). The signature
 * depends on the object's address: a copy of a live task's state word
 * that a function left on its stack (a local, a spill) is not taken for a
 * task in flight by a weft_task_init that later finds it there. */
#define WEFT__FORK_SHIFT 5
#define WEFT__FORK_BITS  0x1e0u
/* CANCEL: weft_cancel asked for it (a queued task then completes as
 * cancelled when a worker takes it; a running one may look). */
#define WEFT__CANCEL     0x200u
/* DELAYED: held by weft_post_at until its time (core/deferred.c). */
#define WEFT__DELAYED    0x400u
#define WEFT__IN_FLIGHT  (0x17bde9u << 11)
#define WEFT__SIGN_MASK  0xfffff800u

/* Bumped in the child of every fork (runtime.c): runtimes and tasks of the
 * parent carry an older generation. */
extern _Atomic unsigned weft__fork_gen;

/* Adds n to a counter only one thread writes (a worker's own statistics):
 * a plain load and store, no locked instruction; readers sum with relaxed
 * loads. */
static inline void weft__count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
	                      memory_order_relaxed);
}

/* The signature of a task or group at obj while it is in flight. */
static inline uint32_t weft__in_flight_sign(const void *obj)
{
	uint64_t h = ((uint64_t)(uintptr_t)obj >> 3) * 0x9e3779b97f4a7c15ull;
	return (WEFT__IN_FLIGHT ^ (uint32_t)(h >> 32)) & WEFT__SIGN_MASK;
}

static inline uint32_t weft__in_flight_bits(const void *obj)
{
	return weft__in_flight_sign(obj) |
	       ((atomic_load_explicit(&weft__fork_gen, memory_order_relaxed) << WEFT__FORK_SHIFT) &
	        WEFT__FORK_BITS);
}

/* A group into which tasks were posted since its last successful wait
 * carries its own address, scrambled, in reserved_[0]: leftover bytes
 * match it only where such a group lived and was never waited for. */
static inline void *weft__group_mark(const weft_group *g)
{
	return (void *)((uintptr_t)g ^ (uintptr_t)0x5ef7a3c1d2b49e87ull);
}

static inline _Atomic(void *) *weft__group_mark_word(weft_group *g)
{
	return (_Atomic(void *) *)&g->reserved_[0];
}

/* weft_group.pending_ counts unfinished tasks in units of GROUP_ONE; bit 0
 * says weft_group_wait callers are on the group's waiters_ list, bit 1 that
 * the list is being changed. One word, so that the last finisher publishes
 * zero and takes the list in steps nobody else can interleave with, and
 * then never touches the group again (a waiter may free it at once). */
#define WEFT__GROUP_WAITER 1u
#define WEFT__GROUP_LOCKED 2u
#define WEFT__GROUP_ONE    4u

/* ------------------------------------------------------------ completion */

/* What every model with workers shares to answer "has everything posted
 * finished?" without a shared counter on the post/run path (completion.h):
 * posts from outside the workers (workers count their own) and wait_all
 * sleepers. It lives in the runtime, not in a model's state, because an
 * outside poster counts itself here before it looks at anything else: the
 * count is also what destroy waits on before it frees anything. */
typedef struct weft__completion {
	/* Written only by posters from outside the workers: lines of their
	 * own, so counting a post does not take a line from a worker. */
	WEFT__ALIGNED _Atomic uint64_t external_posted; /* entered post */
	_Atomic uint64_t external_refused;              /* entered, then refused: no task */
	_Atomic uint64_t external_left;                 /* returned from post */

	/* wait_all sleepers: all_seq changes when quiescence is seen. */
	WEFT__ALIGNED _Atomic uint32_t all_seq;
	_Atomic int all_waiters;

	/* Posted by and finished on stand-ins (core/standin.c) of a model
	 * that counts them here (threads): a stand-in has no line of its
	 * own, and it runs only while workers are blocked. */
	WEFT__ALIGNED _Atomic uint64_t standin_posted;
	_Atomic uint64_t standin_finished; /* run or cancelled */
	_Atomic uint64_t standin_cancelled;
} weft__completion;

/* ------------------------------------------------------------ policies */

typedef struct weft__readyq weft__readyq;

/* A ready-queue discipline. The operations see a queue under the owner's
 * lock; pop is never called on an empty queue. None allocates: links live
 * in the task. */
typedef struct weft__policy_ops {
	const char *name;
	void (*push)(weft__readyq *q, weft_task *t);
	weft_task *(*pop)(weft__readyq *q);
	/* Undoes the pop of t (t keeps its seq_), putting it back in front of
	 * tasks that were behind it. */
	void (*unpop)(weft__readyq *q, weft_task *t);
	/* A task that arrives later may have to run before tasks already
	 * taken (true for priority, not for fifo): models that take tasks in
	 * batches must give the rest of a batch back when tasks arrive. */
	bool ordered;
	/* Ordered policies: whether a (running) must keep the worker rather
	 * than let b (just popped) run; a yield then returns at once. */
	bool (*more_urgent)(const weft__readyq *q, const weft_task *a, const weft_task *b);
	/* Optional. The running task t used up a quantum (psjf, mlfq). */
	void (*charge)(weft__readyq *q, weft_task *t);
	/* Optional. The periodic boost (mlfq): every task back to the top. */
	void (*boost)(weft__readyq *q);
} weft__policy_ops;

/* Priorities 0 .. WEFT__BUCKETS-1 get a FIFO bucket each under the
 * priority policy; the rest go to a pairing heap. */
#define WEFT__BUCKETS 64

struct weft__readyq {
	const weft__policy_ops *ops;
	weft_task *head, *tail; /* fifo */
	weft_task *root;        /* priority: pairing heap of out-of-bucket priorities */
	uint64_t nonempty;      /* priority: bit b set when bucket b has tasks */
	weft_task *bucket_head[WEFT__BUCKETS], *bucket_tail[WEFT__BUCKETS];
	size_t len;
	uint64_t next_seq; /* stamped into seq_ at push: post order */
	uint64_t rng;      /* random: PRNG state */
	unsigned levels;   /* mlfq: levels in use (bucket_head/tail 0 .. levels-1) */
	uint16_t epoch;    /* mlfq: boosts so far, never 0 (a task's 0 means new) */
};

extern const weft__policy_ops weft__policy_priority;
extern const weft__policy_ops weft__policy_fifo;
extern const weft__policy_ops weft__policy_random;
extern const weft__policy_ops weft__policy_psjf;
extern const weft__policy_ops weft__policy_mlfq;

/* cfg: the effective configuration (policy, seed, mlfq levels). */
void weft__readyq_init(weft__readyq *q, const weft_config *cfg);

static inline void weft__readyq_push(weft__readyq *q, weft_task *t)
{
	t->seq_ = q->next_seq++;
	q->ops->push(q, t);
	q->len++;
}

static inline void weft__readyq_unpop(weft__readyq *q, weft_task *t)
{
	q->ops->unpop(q, t);
	q->len++;
}

static inline weft_task *weft__readyq_pop(weft__readyq *q)
{
	if (q->len == 0)
		return NULL;
	q->len--;
	return q->ops->pop(q);
}

/* ------------------------------------------------------------ models */

/* How tasks become execution. The core validates arguments, task state and
 * capacity; the model only moves tasks to workers and runs them through
 * weft__run_task. */
typedef struct weft__model_ops {
	const char *name;
	/* Optional. Adjusts rt->cfg to what the model really runs (its worker
	 * count) and refuses settings it cannot honour, saying why on stderr
	 * (WEFT_EINVAL). Runs before anything is allocated for rt. */
	int (*configure)(weft_rt *rt);
	/* Allocates the model's state into rt->model_state and starts its
	 * workers. On failure releases everything it acquired. */
	int (*start)(weft_rt *rt);
	/* Queues t (already QUEUED, capacity already reserved). from_task: the
	 * caller is one of this runtime's workers. May fail only with
	 * WEFT_ESHUTDOWN (external post while closing) or WEFT_EAGAIN; on
	 * failure it releases the capacity itself and must not touch rt once
	 * destroy could free it. */
	int (*submit)(weft_rt *rt, weft_task *t, bool from_task);
	/* Blocks until every posted task has finished. */
	void (*wait_all)(weft_rt *rt);
	/* Waits for quiescence (rt->closing is set) and joins every thread. */
	void (*stop)(weft_rt *rt);
	/* Frees rt->model_state; called after stop, or by start's failure path. */
	void (*release)(weft_rt *rt);
	/* Adds the model's counters into *s. */
	void (*stats)(weft_rt *rt, weft_stats *s);
	/* Optional. Prints the model's own statistics lines. */
	void (*print_stats)(const weft_stats *s, FILE *out);
	/* Optional. Prints a line per worker (wake-ups, steals, sleeps). */
	void (*print_workers)(weft_rt *rt, FILE *out);
	/* Optional, kernel-thread models. Called on one of rt's workers that
	 * waits (weft_wait, weft_group_wait) for something unfinished: runs
	 * one queued task on the calling thread and returns true, or returns
	 * false when there is none it may take. */
	bool (*help)(weft_rt *rt);
	/* Optional. Called on the thread that just posted t, which may be
	 * any thread (a worker of rt or not): removes t if it is still
	 * unstarted among that worker's own newest posts, counts it as
	 * finished (the caller runs it as a plain call) and returns true;
	 * false when it is not there or the caller is no worker of rt. */
	bool (*take_back)(weft_rt *rt, weft_task *t);
	/* Optional. Whether tasks are queued that no worker has taken (for
	 * compensation and the "every worker is blocked" diagnosis). */
	bool (*has_queued)(weft_rt *rt);
	/* Optional, models whose tasks block their kernel thread (threads,
	 * spawn); its presence turns compensation on (core/standin.c), and
	 * then help and has_queued must be there too. Called on a worker or
	 * stand-in of rt whose weft wait outlasted the grace period and goes
	 * on: the model makes the tasks only this thread would take (threads:
	 * its batch, its own posts) takeable by others. Stand-ins run help
	 * with weft__tls.standin set: help, submit and take_back must then
	 * use nothing that belongs to the worker whose index they carry. */
	void (*block_begin)(weft_rt *rt);
} weft__model_ops;

extern const weft__model_ops weft__model_threads;
extern const weft__model_ops weft__model_spawn;
extern const weft__model_ops weft__model_fibers;
extern const weft__model_ops weft__model_mn;

/* ------------------------------------------------------------ runtime */

/* The most stand-ins a runtime runs at once (WEFT_STANDINS), and the
 * default. */
#define WEFT__MAX_STANDINS     256
#define WEFT__DEFAULT_GRACE_US 0

/* A stand-in thread's place in its runtime (core/standin.c): FREE, ALIVE
 * (standing in), SPARE (its thread waits to be called again), LEAVING (its
 * thread on its way out), EXITED (to be joined). */
typedef struct weft__standin_slot {
	_Atomic int state;
	_Atomic uint32_t call; /* futex word of a spare: called or dismissed */
	int index;             /* the worker index it carries */
	pthread_t thread;
	struct weft_rt *rt;
} weft__standin_slot;

#define WEFT__RT_MAGIC 0x77656674u /* "weft" */
#define WEFT__RT_DEAD  0x64656164u /* "dead": destroyed, memory kept */
enum { WEFT__CLOSING = 1, WEFT__RELEASING = 2 };

struct weft_rt {
	_Atomic uint32_t magic; /* WEFT__RT_MAGIC while alive; catches stale handles */
	weft_config cfg;        /* effective: defaults < code < environment */
	weft_workers_source workers_source;
	bool seed_given; /* cfg.seed came from the code or WEFT_SEED, not picked */
	/* Which settings came from the environment (they win over code): a
	 * model chosen by WEFT_MODEL may replace a policy the code chose for
	 * another model (see the models' configure). */
	bool model_from_env, policy_from_env;
	int cpus_affinity, cpus_cgroup;
	/* Why cfg.workers is what it is, after workers_source, for the
	 * statistics header: the CPUs and the cgroup limit seen, and what the
	 * model changed (config.c). */
	char workers_detail[256];
	const weft__model_ops *model;
	void *model_state;

	/* Statistics: latency histograms (NULL when statistics are off) and
	 * the counters' values at the last weft_stats_reset. */
	struct weft__latency *latency;
	weft_stats stats_base;
	struct weft__trace *trace; /* NULL when tracing is off */

	/* Set by destroy: CLOSING when it begins (posts from outside are
	 * refused), RELEASING once every task finished (every other call
	 * from outside is refused, and destroy waits for `callers` to leave
	 * before it frees the model). */
	_Atomic int closing;
	_Atomic int cancelling;
	unsigned fork_gen; /* weft__fork_gen when created */
	/* The signal mask of the thread that created rt: the one its workers
	 * run tasks with (weft__worker_create). Written once, at create. */
	sigset_t sigmask;
	weft_rt *next_shell; /* free list of runtime memory (runtime.c) */

	weft__completion done;
	/* Deferred tasks (core/deferred.c): posted, held until a time or
	 * until their predecessors finish. */
	WEFT__ALIGNED _Atomic int deferred;
	_Atomic uint64_t deferred_cancelled; /* never reached the model */
	struct weft__delays *_Atomic delays;
	/* Calls from outside other than posts (wait_all, statistics) inside
	 * the runtime now. */
	WEFT__ALIGNED _Atomic int callers;

	/* Threads that are not rt's workers running a parallel loop of rt's
	 * (core/parallel.c) right now: each keeps a CPU busy that the model
	 * need not wake a worker for. Written per loop call, not per chunk. */
	WEFT__ALIGNED _Atomic int outside_helpers;

	/* Compensation (core/standin.c). blocked: workers and stand-ins in a
	 * weft wait that outlasted the grace period (written when such a wait
	 * becomes long and when it ends; never for a shorter one); alive:
	 * stand-ins started and not retired. When blocked reaches the workers
	 * plus alive while tasks are queued, a stand-in starts, up to cap;
	 * after a second of that weft says why it cannot cure it. */
	WEFT__ALIGNED _Atomic int blocked;
	_Atomic int standins_alive;
	_Atomic int deadlock_reported;
	_Atomic int standin_refused; /* a stand-in thread could not be created */
	_Atomic uint64_t standins_started;
	int standin_cap;          /* WEFT_STANDINS, read at create */
	int64_t standin_grace_ns; /* WEFT_STANDIN_GRACE_US, read at create */
	weft__lock standin_lock;  /* slot states, spares' calls, and joins */
	bool standins_closing;    /* destroy: spares are dismissed, none lingers */
	weft__standin_slot standin[WEFT__MAX_STANDINS];

	/* Capacity accounting, touched only when cfg.queue_capacity > 0:
	 * tasks posted and not yet taken by a worker. */
	WEFT__ALIGNED _Atomic long queued;
	_Atomic uint64_t rejected;
	/* weft_post_wait sleepers: room_seq changes when room appears. */
	WEFT__ALIGNED _Atomic uint32_t room_seq;
	_Atomic int room_waiters;

	/* Files and weft_blocking (src/io/files.h): WEFT_IO as read at create
	 * (a weft__io_want), whether the fiber workers' file calls use
	 * io_uring, the errno its probe failed with, and the blocking pool
	 * (made by the first call that needs it; io/pool.c). */
	int io_want;
	int blocking_max; /* WEFT_BLOCKING_THREADS: the pool's most threads */
	bool io_uring;
	int io_refused;
	struct weft__pool *_Atomic pool;
};

/* The CPUs rt may use: its affinity mask, or a lower cgroup limit (its
 * worker count when neither is known). */
static inline int weft__rt_cpus(const weft_rt *rt)
{
	int cpus = rt->cpus_affinity > 0 ? rt->cpus_affinity : rt->cfg.workers;
	if (rt->cpus_cgroup > 0 && rt->cpus_cgroup < cpus)
		cpus = rt->cpus_cgroup;
	return cpus;
}

/* How many workers of rt may be awake at once without time-sharing CPUs
 * beyond what the program asked for: its workers, or its CPUs if more. */
static inline int weft__awake_cap(const weft_rt *rt)
{
	int n = rt->cfg.workers, cpus = weft__rt_cpus(rt);
	return n > cpus ? n : cpus;
}

/* Whether `awake` workers may be awake while outside threads run loops of
 * rt's (outside_helpers, each keeping a CPU busy) within cap: always when
 * none does. */
static inline bool weft__room_beside_helpers(weft_rt *rt, int awake, int cap)
{
	int helpers = atomic_load_explicit(&rt->outside_helpers, memory_order_relaxed);
	return helpers == 0 || awake + helpers <= cap;
}

/* What the current thread is doing for weft. Set by a model's workers. */
typedef struct weft__thread_ctx {
	weft_rt *rt;     /* runtime whose worker this thread is, or NULL */
	int index;       /* worker index, -1 outside workers */
	weft_task *task; /* task running now, or NULL */
	/* The running task's task-local values (core/local.c), or the
	 * thread's own outside tasks; saved and restored with task. */
	struct weft__locals *locals;
	void *fiber; /* the running weft__fiber under a fiber model, or NULL */
	/* Non-zero while weft is in a critical section a preemption tick
	 * must not interrupt (src/fiber/preempt.h); a plain int because only
	 * this thread and its own signal handler touch it. */
	int nopreempt;
	/* weft_mutexes the running fiber holds: a tick defers preempting it a
	 * little, so a preempted holder does not make the others queue up
	 * behind it (a convoy: FIFO hand-off then costs a switch per lock). */
	int mutexes_held;
	unsigned mutex_locks; /* acquisitions so far: tells one hold from the next */
	/* The lowest address of the thread's stack: a kernel-thread worker
	 * runs queued tasks while it waits (task.c) and hands over to a fresh
	 * stack when it gets near; found on the first wait (0: not yet). */
	uintptr_t stack_low;
	/* Set around a post that offers work the poster will not wait for at
	 * once (weft_fork_join's b, a loop's half: the poster runs the other
	 * part first), so a model that leaves a lone post to its poster
	 * (mn) may wake a sleeper for it. */
	bool offering;
	/* A compensation stand-in (core/standin.c): it carries its worker's
	 * index but owns none of that worker's queues, and writes the shared
	 * statistics slot. */
	bool standin;
} weft__thread_ctx;

/* initial-exec: a fixed offset from the thread pointer, also from
 * libweft.so; the struct is small enough for the static TLS space glibc
 * keeps for dlopen. Reached only through weft__tls. */
extern _Thread_local weft__thread_ctx weft__tls_storage __attribute__((tls_model("initial-exec")));

/* The calling thread's weft__thread_ctx, its address computed afresh at
 * every use. A fiber that parks may resume on another thread (fibers that
 * move, engine.h), but compilers treat the thread pointer as constant
 * within a function (GCC PR 26461): an address of a thread-local computed
 * before a park and kept in a register after it is the old thread's. On
 * aarch64 GCC keeps tpidr_el0 across calls whenever it can, and on x86-64
 * a sanitizer's instrumentation or any &thread_local does the same with
 * %fs:0. A volatile asm that reads the thread pointer cannot be reused
 * across the switch; the offset is the initial-exec one the compiler
 * would load (relaxed to a constant by the linker in executables). Two
 * instructions and an add, as the compiler's own access. */
#if !((defined(__x86_64__) || defined(__aarch64__)) && defined(__ELF__))
__attribute__((noinline)) weft__thread_ctx *weft__tls_address(void);
#endif

static inline __attribute__((always_inline)) weft__thread_ctx *weft__tls_self(void)
{
	weft__thread_ctx *self;
#if defined(__x86_64__) && defined(__ELF__)
	__asm__ volatile("movq weft__tls_storage@gottpoff(%%rip), %0\n\t"
	                 "addq %%fs:0, %0"
	                 : "=r"(self));
#elif defined(__aarch64__) && defined(__ELF__)
	uintptr_t tp;
	__asm__ volatile("adrp %0, :gottprel:weft__tls_storage\n\t"
	                 "ldr %0, [%0, #:gottprel_lo12:weft__tls_storage]\n\t"
	                 "mrs %1, tpidr_el0\n\t"
	                 "add %0, %0, %1"
	                 : "=&r"(self), "=r"(tp));
#else
	/* Elsewhere an opaque step the compiler cannot see through or keep:
	 * the address passes through a volatile asm, and the function is out
	 * of line so the thread pointer is read in a frame that ends. */
	self = weft__tls_address();
#endif
	return self;
}

#define weft__tls (*weft__tls_self())

/* errno of the thread running the caller now. glibc declares the function
 * behind errno const, so a compiler may keep one thread's errno address
 * across a call that parked a fiber, which under mn may resume on another
 * thread (docs/fibers.md tells users the same): weft's own code that may
 * have waited (the I/O calls, whose fibers move) reads and writes errno
 * through this out-of-line call, which no compiler can merge with an
 * earlier one. */
int *weft__errno_now(void);
#define WEFT__ERRNO (*weft__errno_now())

/* The per-worker slot of rt that the calling thread writes to: its worker
 * index when it is one of rt's workers, else `shared` (statistics and
 * traces keep one extra slot for every other thread). */
static inline int weft__slot_of(const weft_rt *rt, int shared)
{
	int i = weft__tls.index;
	return weft__tls.rt == rt && i >= 0 && i < shared && !weft__tls.standin ? i : shared;
}

/* weft__run_task runs t on the calling worker (or, when the runtime is
 * cancelling, discards it), then publishes its completion to weft_wait and
 * its group. Returns false when the task was discarded. After it returns the
 * task belongs to its owner again and must not be touched. */
bool weft__run_task(weft_rt *rt, weft_task *t);

/* Task-local values (core/local.c): destroys the running task's table
 * (weft__tls.locals: its destructors run with it still current, and may
 * set values again) once its function returned, and clears it. */
void weft__locals_end(void);

/* Publishes t's end (WEFT_TASK_DONE or WEFT_TASK_CANCELLED) to its waiters
 * and group; after it t belongs to its owner again. */
void weft__task_finish(weft_task *t, weft_task_state end);

struct weft__waiter;

/* Puts w on t's waiter list, to be unparked (or notified) when t finishes:
 * returns WEFT_TASK_QUEUED, or the state t already ended in (w unused). */
weft_task_state weft__task_add_waiter(weft_task *t, struct weft__waiter *w);

/* weft_cancel's first step: 0 (queued: it will not run), WEFT_EBUSY
 * (running: asked), WEFT_EINVAL (not in flight); *was: the state word it
 * saw last. */
int weft__task_request_cancel(weft_task *t, uint32_t *was);

/* Whether weft_group_cancel was called on g (NULL: no group). */
static inline bool weft__group_cancelled(const weft_group *g)
{
	return g &&
	       atomic_load_explicit((_Atomic uintptr_t *)&g->reserved_[1], memory_order_relaxed);
}

/* Deferred tasks (deferred.c), admitted and counted in rt->deferred by the
 * caller: held until deadline_ns, or until every task of after[0..n) has
 * finished. 0, or WEFT_ENOMEM / WEFT_EAGAIN (nothing held). */
int weft__defer_until(weft_rt *rt, weft_task *t, int64_t deadline_ns);
int weft__defer_after(weft_rt *rt, weft_task *t, weft_task *const *after, size_t n);
/* The function of a weft_post_every run (core/periodic.c): the delay heap
 * knows periodic runs by it. Destroy cancels the held ones, and once the
 * runtime is closing the heap refuses to hold more (WEFT_ESHUTDOWN). */
void weft__periodic_run(void *arg);
/* Whether t is queued or running, telling a task from leftover bytes by
 * its in-flight signature (as weft_task_init does). */
bool weft__task_posted_unfinished(const weft_task *t);
void weft__deferred_cancel_periodic(weft_rt *rt);
/* weft_cancel of a task held until a time (DELAYED): ends it now. */
void weft__deferred_cancel(weft_task *t);
/* Destroy: cancels every delayed task; waits until none is held; stops
 * the timer thread and frees the heap. */
void weft__deferred_cancel_all(weft_rt *rt);
void weft__deferred_wait(weft_rt *rt);
void weft__deferred_release(weft_rt *rt);

/* fork(2) with any of weft's process-wide locks held by another thread
 * would leave the child a lock nobody unlocks. runtime.c's atfork handler
 * takes every one of them before fork, in this order, and lets go after
 * it in the parent and in the child: the delay heaps' list and every heap
 * (deferred.c), the log hook's writer (log.c), then its own shells lock.
 * In the child, weft__thread_fork_child frees the start slots of threads
 * that were being created (they exist only in the parent). */
void weft__deferred_fork_prepare(void);
void weft__deferred_fork_done(void);
void weft__log_fork_prepare(void);
void weft__log_fork_done(void);
void weft__thread_fork_child(void);
/* Tests (core/testing.h): takes or lets go of the heaps' list (rt NULL)
 * or of rt's heap. */
void weft__deferred_testing_lock(weft_rt *rt, bool take);
/* Installs that handler (once); weft_rt_create and weft_set_log call it. */
void weft__fork_hook_install(void);

/* Asks the mlfq policy to move t, which may be queued or running, to queue
 * level `level` (0 is the top) the next time it enters the ready queue
 * (seed 004's worker_setschedprio). Any thread; other policies ignore it. */
void weft__task_request_level(weft_task *t, int level);

/* Frees n places of the bounded queue and wakes weft_post_wait sleepers. */
void weft__release_capacity(weft_rt *rt, long n);

/* weft__dequeued tells the core that n tasks left the ready queue, so their
 * capacity is free. Models call it when a worker takes tasks. */
static inline void weft__dequeued(weft_rt *rt, long n)
{
	if (rt->cfg.queue_capacity > 0 && n > 0)
		weft__release_capacity(rt, n);
}

/* ------------------------------------------------------------ services */

/* pthread_create with a fault-injection hook for tests; returns 0 or
 * WEFT_EAGAIN. A helper thread named weft-<kind> (at most 10 bytes of
 * kind). One that runs program code (weft_blocking's) keeps the signal mask
 * of the thread that creates it; one that runs weft's code only (quiet:
 * the delay timer) blocks every signal but the faults, so that a
 * process-directed signal never lands there. */
WEFT__WARN_UNUSED int weft__thread_create(pthread_t *thread, void *(*fn)(void *), void *arg,
                                          const char *kind, bool quiet);
/* weft__thread_create for the index-th worker of rt (a spawn task thread:
 * its slot): named weft-<model>-<index>, pinned as rt->cfg.pin says, and
 * running rt->cfg.worker_hook before and after fn. It runs tasks with the
 * signal mask of the thread that created rt (rt->sigmask), the faults
 * unblocked (docs/process.md). */
WEFT__WARN_UNUSED int weft__worker_create(pthread_t *thread, void *(*fn)(void *), void *arg,
                                          const weft_rt *rt, int index);
/* The calling thread's stack: its lowest usable address, its size and the
 * guard below it. False where the system cannot say (POSIX has no call for
 * it: the portable build), and then callers assume no room to spare and no
 * guard to name. */
bool weft__thread_stack_bounds(uintptr_t *low, size_t *size, size_t *guard);

/* Environment and machine defaults applied to cfg (see config.c). Prints
 * the reason to stderr and returns WEFT_EINVAL for a bad value. */
WEFT__WARN_UNUSED int weft__config_resolve(weft_rt *rt, const weft_config *in);
/* Runs rt->model's configure on the resolved rt->cfg and says once on
 * stderr what the model did not honour (WEFT_WORKERS, preemption, the
 * policy); the configure's error, or 0. */
WEFT__WARN_UNUSED int weft__config_model(weft_rt *rt);

/* The configure of a model whose tasks run to completion on kernel threads
 * (threads, spawn): nothing charges quanta or switches a task out, so
 * preemption is off, and psjf and mlfq, which order by quanta used, become
 * fifo (said once on stderr when the program chose them). */
int weft__config_run_to_completion(weft_rt *rt);

/* weft__rt_check says whether a caller may use rt: 0, or WEFT_EINVAL for
 * NULL, a destroyed runtime, or one inherited from the parent across fork
 * (said once on stderr). */
int weft__rt_check(const weft_rt *rt);

/* weft_post for a task nobody else can see yet (core's own record, just
 * initialised): the same, without the compare-and-swap that catches two
 * threads posting one task; an offer (weft__tls.offering): the caller goes
 * on with other work before it waits for t. */
int weft__post_private(weft_rt *rt, weft_task *t);

/* Takes t, which the caller posted with weft__post_private, back from the
 * model if no worker started it (the model's take_back), leaving it DONE:
 * the caller then runs it as a plain call. */
bool weft__take_back(weft_rt *rt, weft_task *t);

/* Says once on stderr that `what` belongs to the process this one was
 * forked from. */
void weft__report_fork_use(const char *what);

/* weft__rt_enter admits a call from outside the workers that reads the
 * model's state (wait_all, statistics): 0, or WEFT_ESHUTDOWN once destroy
 * is about to free it. Pair with weft__rt_leave. */
int weft__rt_enter(weft_rt *rt);
void weft__rt_leave(weft_rt *rt);

/* Number of live runtimes: weft_set_allocator refuses to switch while > 0. */
extern _Atomic int weft__live_runtimes;

#endif
