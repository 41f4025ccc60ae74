/* The fiber engine (engine.h): fibers, the worker loop, and the blocking
 * calls of the fiber models.
 *
 * The worker loop runs on whichever fiber the worker is on. It picks the
 * next task from the model; an unstarted task runs right there, on the
 * loop's own fiber, so a task that never waits costs no switch. A task
 * that parks, yields or is preempted keeps its fiber; the worker then goes
 * on (switch_away) with the next fiber to resume, or else a loop fiber: a
 * spare, a new one, or the thread's own stack (main), which is always
 * there because it never runs a task. When the loop picks a started task,
 * the loop fiber has nothing on it: it becomes a spare (or ends) and the
 * worker switches to the task's fiber. A fiber that ends cannot free its
 * own stack; the next one to run does (reap).
 *
 * Per-thread state that belongs to the running task (weft__tls.task, the
 * preemption guard, the weft_mutex hold count, errno) is saved across
 * every switch by the fiber that switches (switch_away), and restored on
 * whichever worker resumes it (engine.h: fibers that move). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <weft/progress.h>

#include "core/clock.h"
#include "core/observe.h"
#include "core/spin.h"
#include "fiber/engine.h"
#include "io/uring.h"
#include "obs/probes.h"

#define STACK_CACHE       1024 /* free stacks a worker keeps for reuse */
#define MAX_SPARES        8    /* loop fibers kept ready to go on */
/* Quanta a fiber holding a weft_mutex may overrun before it is preempted
 * anyway: enough to get out of an ordinary critical section, bounded so a
 * fiber that keeps a mutex locked cannot keep the worker. */
#define MUTEX_GRACE_TICKS 2
/* Stack lines a resume reads above its saved stack pointer: the switch's,
 * weft__fiber_park's and an I/O call's frames (prefetch_resume). */
#define RESUME_LINES      5

/* After a switch a fiber may run on another thread (fibers that move):
 * weft__tls reads the thread pointer afresh at every use (core/internal.h),
 * so what touches it on both sides of a switch needs no care here. */

static inline void nopreempt_add(int d)
{
	weft__tls.nopreempt += d;
}

static int64_t clock_now(const weft__fworker *w)
{
	return weft__fworker_now(w);
}

/* Tracing is decided once per runtime: a worker-local flag spares the hot
 * paths a load through the runtime. */
static inline void trace(const weft__fworker *w, weft__trace_kind kind, const weft_task *t,
                         bool first)
{
	if (__builtin_expect(w->tracing, 0))
		weft__trace_record(w->rt, kind, t, first);
}

static bool on_worker(const weft__fworker *w)
{
	return weft__tls.rt == w->rt && weft__tls.index == w->index;
}

/* ------------------------------------------------------------ fibers */

static void loop_entry(void *arg);

/* Cache colouring. A fiber's record and the frames under it are the lines
 * a wake-up and a resume touch. Stacks are whole pages apart (and an odd
 * number of pages: stack.c), so without it they would sit at the same
 * offset of a page in every stack: in one of a level-1 cache's 64 sets,
 * and in 16 of a 1 MiB 16-way level 2's 1,024, so that a server's
 * thousand parked fibers competed for a sliver of each cache while the
 * rest stood empty. Each fiber's top moves down by one of up to 46
 * line-sized steps, picked by a hash of its stack's address: at most
 * 2,880 bytes, so that a parked fiber's record and first kilobyte of
 * frames stay in its top page (RSS per parked fiber unchanged), and at
 * most a sixteenth of a small stack. cachegrind with this CPU's caches,
 * echo server, 1,000 connections, L2 misses an echo (bench/io/cache.sh):
 * 6.4 with 32 steps on 8 pages (stacks an even number of pages apart),
 * 0.7 with 46 on all 16, Tokio's 1.0. */
static size_t color_of(const weft__stack *s)
{
	size_t colors = s->size / 1024 < 46 ? s->size / 1024 : 46;
	uint64_t h = (uint64_t)((uintptr_t)s->base >> 12) * 0x9E3779B97F4A7C15ull;
	return colors ? (size_t)((h >> 32) % colors) * 64 : 0;
}

static weft__fiber *fiber_new(weft__fworker *w)
{
	weft__stack *s = weft__stack_get(&w->stacks);
	if (!s) {
		w->stack_refused = true;
		return NULL;
	}
	uintptr_t top = (uintptr_t)s->base + s->size - color_of(s);
	weft__fiber *f = (weft__fiber *)((top - sizeof(weft__fiber)) & ~(uintptr_t)63);
	memset(f, 0, sizeof(*f));
	f->stack = s;
	atomic_init(&f->home, w);
	f->wait_fd = -1;
	f->due = INT64_MAX;
	size_t usable = ((uintptr_t)f - (uintptr_t)s->base) & ~(size_t)15;
	weft__context_make(&f->ctx, s->base, usable, loop_entry, f);
	return f;
}

static void fiber_free(weft__fworker *w, weft__fiber *f)
{
	weft__context_release(&f->ctx);
	weft__stack_put(&w->stacks, f->stack);
}

/* Stacks that moved away with their fibers leave w's count (see
 * engine.h); before w's pool is used. */
static void settle_stacks(weft__fworker *w)
{
	if (atomic_load_explicit(&w->stacks_out, memory_order_relaxed))
		w->stacks.live -= atomic_exchange_explicit(&w->stacks_out, 0, memory_order_relaxed);
}

/* Right after every switch, on the fiber switched to, with w the worker
 * it now runs on: the fiber switched away from is saved (on_cpu), and one
 * that ended is freed. */
static void reap(weft__fworker *w)
{
	if (w->prev) {
		atomic_store_explicit(&w->prev->on_cpu, 0, memory_order_release);
		w->prev = NULL;
	}
	if (w->zombie) {
		settle_stacks(w);
		fiber_free(w, w->zombie);
		w->zombie = NULL;
	}
}

/* The worker the calling fiber runs on now, after a switch that may have
 * moved it. */
static weft__fworker *here(weft__fiber *f)
{
	return atomic_load_explicit(&f->home, memory_order_relaxed);
}

/* A loop fiber with a stack of its own: a spare, or a new one; NULL when
 * the system refuses a stack. */
static weft__fiber *spare_or_new(weft__fworker *w)
{
	weft__fiber *f = w->spares;
	if (!f) {
		settle_stacks(w);
		return fiber_new(w);
	}
	w->spares = f->next_spare;
	w->nspares--;
	return f;
}

bool weft__fworker_can_start(weft__fworker *w)
{
	if (!w->stack_refused)
		return true;
	const weft__fiber *c = w->current;
	if ((c != &w->main && !c->task) || w->spares)
		return true;
	weft__fiber *f = fiber_new(w);
	if (!f)
		return false;
	f->next_spare = NULL;
	w->spares = f;
	w->nspares = 1;
	w->stack_refused = false;
	return true;
}

/* A fiber to go on with the loop: a spare, a new one, or the thread's own. */
static weft__fiber *loop_fiber(weft__fworker *w)
{
	weft__fiber *f = spare_or_new(w);
	return f ? f : &w->main;
}

/* Bookkeeping for g becoming the running fiber, just before the switch. */
static inline void enter(weft__fworker *w, weft__fiber *g)
{
	weft__fworker *from = atomic_load_explicit(&g->home, memory_order_relaxed);
	if (__builtin_expect(from != w, 0)) {
		/* Taken from another worker's queue: its switch away there may
		 * not be done yet (engine.h). Its stack is counted here now. */
		while (atomic_load_explicit(&g->on_cpu, memory_order_acquire))
			weft__cpu_relax();
		atomic_fetch_add_explicit(&from->stacks_out, 1, memory_order_relaxed);
		w->stacks.live++;
		weft__count(&w->moved_in, 1);
		atomic_store_explicit(&g->home, w, memory_order_relaxed);
	}
	atomic_store_explicit(&g->on_cpu, 1, memory_order_relaxed);
	/* Only a fiber preempted between queueing itself as a waiter and
	 * parking can be woken while READY: everyone else takes the plain
	 * store, no locked instruction. */
	if (g->rewakable) {
		g->rewakable = false;
		if (atomic_exchange(&g->state, WEFT__FIBER_RUNNING) == WEFT__FIBER_READY_WOKEN)
			atomic_store(&g->state, WEFT__FIBER_WOKEN); /* for its next park */
	} else {
		atomic_store_explicit(&g->state, WEFT__FIBER_RUNNING, memory_order_relaxed);
	}
	g->joining = false;
	if (g->task) {
		trace(w, WEFT__TRACE_BEGIN, g->task, false);
		WEFT__PROBE2(fiber__switch, weft__tls.task, g->task);
	}
	w->current = g;
	weft__tls.fiber = g;
	weft__stack_set_current(g->stack, g->task);
	weft__count(&w->switches, 1);
}

/* The next task to start or resume: wake-ups from other threads, expired
 * timers and the periodic boost first, then the model's choice. */
static void maybe_boost(weft__fworker *w);

static inline __attribute__((always_inline)) weft_task *pick(weft__fworker *w)
{
	for (weft_task *t = weft__inbox_take(&w->inbox); t;) {
		weft_task *next = t->next_;
		w->ops->ready(w, t, WEFT__READY_ARRIVED);
		t = next;
	}
	weft__ring_poll(w->ring); /* file completions: their fibers wake */
	weft__fworker_poll_if_due(w);
	weft__fworker_expire_timers(w);
	maybe_boost(w);
	weft_task *t = w->ops->next(w);
	/* Busy (this runs between any two tasks, also when a fiber parks or
	 * yields): now and then, the progress duty. */
	if (t && weft__progress_on())
		weft__progress_busy(&w->progress);
	return t;
}

/* Runs t, just taken from the model's queues, on the running fiber f, and
 * counts it. The task may park and resume meanwhile: f is still the
 * running fiber when it returns (fibers never change under a task). The
 * caller puts back what f ran before (nothing, or the task that waited). */
static void run_on(weft__fworker *w, weft__fiber *f, weft_task *t)
{
	weft__dequeued(w->rt, 1);
	f->task = t;
	t->fiber_ = f;
	weft__stack_set_current(f->stack, t);
	trace(w, WEFT__TRACE_BEGIN, t, true);
	bool ran = weft__run_task(w->rt, t);
	w = here(f); /* it may have parked and moved */
	weft__fiber_timer_drop(w, f);
	trace(w, WEFT__TRACE_END, NULL, false);
	weft__count(&w->cancelled, !ran);
	atomic_store_explicit(&w->finished, w->finished + 1, memory_order_release);
}

/* After a task run on loop fiber f, which may have moved meanwhile. */
static inline void inline_run_done(weft__fiber *f)
{
	weft__tls.nopreempt = 1;
	f->task = NULL;
	weft__stack_set_current(f->stack, NULL);
}

/* Runs an unstarted task on the calling loop fiber f. */
static void run_inline(weft__fworker *w, weft__fiber *f, weft_task *t)
{
	/* A loop fiber runs no task of its own: whatever weft__tls.task says
	 * now is left from the fiber that ran before (maybe a task since
	 * freed), and run_task would restore it when t ends, where a tick
	 * would charge it. */
	weft__tls.task = NULL;
	weft__tls.locals = NULL;
	weft__tls.nopreempt = 0;
	weft__tls.mutexes_held = 0;
	run_on(w, f, t);
	inline_run_done(f);
}

/* On main, which never runs tasks: hands t to a loop fiber.
 *
 * When no stack can be had (the address space or the mapping limit, said
 * on stderr once), the worker's own fibers hold every stack it has, and
 * there is at least one (the pool never gives back its last: stack.h).
 * They go first: the unstarted tasks are set aside until a started one
 * turns up, put back in the order they came, and that one resumes; when it
 * ends its task its fiber runs the next task itself. The worker sleeps
 * only when none is runnable, in the poller, until a wake-up, a timer or
 * an fd event makes one runnable: never while something could run. Under
 * mn the tasks set aside go back where other workers can steal them. */
static void start_elsewhere(weft__fworker *w, weft_task *t)
{
	weft__fiber *g = spare_or_new(w);
	if (g) {
		g->first = t;
		enter(w, g);
		weft__context_switch(&w->main.ctx, &g->ctx);
		reap(w);
		return;
	}
	weft_task *aside = t, *last = t, *x;
	t->next_ = NULL;
	while ((x = pick(w)) && !x->fiber_) {
		x->next_ = NULL;
		last->next_ = x;
		last = x;
	}
	while (aside) {
		weft_task *next = aside->next_;
		w->ops->ready(w, aside, WEFT__READY_POSTED);
		aside = next;
	}
	if (x) {
		weft__fiber *f = x->fiber_;
		enter(w, f);
		weft__context_switch(&w->main.ctx, &f->ctx);
		reap(w);
		return;
	}
	settle_stacks(w);
	if (w->stacks.live == 0) { /* cannot happen (the reserve): never spin */
		nanosleep(&(struct timespec){0, 1000000}, NULL);
		return;
	}
	static atomic_flag told = ATOMIC_FLAG_INIT;
	if (!atomic_flag_test_and_set(&told))
		weft__log(WEFT_LOG_WARN,
		          "weft: worker %d has no stack for a new fiber and its %zu fibers "
		          "with a stack are all parked: new tasks wait until one of them "
		          "ends (if those wait for the new tasks, it never will: use smaller "
		          "stacks or raise the limit named above)\n",
		          w->index, w->stacks.live);
	weft__fworker_sleep(w);
}

/* From a loop fiber with nothing on it: go to g, a started task's fiber. */
static void resume_from_loop(weft__fworker *w, weft__fiber *self, weft__fiber *g)
{
	enter(w, g);
	if (self == &w->main) {
		weft__context_switch(&self->ctx, &g->ctx);
	} else if (w->nspares < MAX_SPARES) {
		self->next_spare = w->spares;
		w->spares = self;
		w->nspares++;
		weft__context_switch(&self->ctx, &g->ctx);
	} else {
		w->zombie = self;
		weft__context_switch(NULL, &g->ctx); /* never returns */
	}
	reap(w);
}

/* Nothing to run while a progress function is registered: take the duty
 * (core/progress.h) before the model's idle op; true when that readied
 * work. The sleep that may follow is capped (weft__fworker_sleep_for). */
static bool progress_before_idle(weft__fworker *w)
{
	w->progress_unparks = atomic_load_explicit(&w->unparks, memory_order_relaxed);
	return weft__progress_idle(&w->progress, weft__fworker_progress_came, w,
	                           &w->progress_sleep_ns);
}

/* The worker loop, on the current fiber; returns (on main) when the model
 * says stop. */
static void loop(weft__fiber *self)
{
	for (;;) {
		weft__fworker *w = here(self); /* a task run here may have moved it */
		weft_task *t = self->first;
		self->first = NULL;
		if (!t)
			t = pick(w);
		if (!t && weft__progress_on() && progress_before_idle(w))
			continue;
		if (!t) {
			if (w->ops->idle(w))
				continue;
			if (self == &w->main)
				return;
			w->zombie = self; /* main ends the worker */
			enter(w, &w->main);
			weft__context_switch(NULL, &w->main.ctx);
		}
		if (t->fiber_)
			resume_from_loop(w, self, t->fiber_);
		else if (self == &w->main)
			start_elsewhere(w, t);
		else
			run_inline(w, self, t);
	}
}

static void loop_entry(void *arg)
{
	weft__fiber *f = arg;
	reap(here(f));
	loop(f);
}

/* Out of line, so the thread pointer is read anew on the worker that
 * resumed the fiber (a compiler may keep it across the switch). */
__attribute__((noinline)) static void restore_thread_state(const weft__fiber *f)
{
	weft__tls.mutexes_held = f->saved_mutexes_held;
	weft__tls.nopreempt = f->saved_nopreempt;
	weft__tls.task = f->saved_task;
	weft__tls.locals = f->saved_locals;
	/* Carried across: a moved fiber's thread is another (internal.h). */
	WEFT__ERRNO = f->saved_errno;
}

/* The running fiber f (with a task) is parked or queued: go on with the
 * next fiber, and return when f runs again, with the per-task thread state
 * restored. That state waits in f's record, on the line the resume reads
 * anyway, rather than in registers the switch would push on f's stack;
 * and this is inlined into each caller: each frame and each line less on
 * the stack a parked fiber resumes on is a cold line less per wake-up
 * (io/iowait.h). */
static inline __attribute__((always_inline)) void switch_away(weft__fworker *w, weft__fiber *f)
{
	f->saved_task = weft__tls.task;
	f->saved_locals = weft__tls.locals;
	f->saved_nopreempt = weft__tls.nopreempt;
	f->saved_mutexes_held = weft__tls.mutexes_held;
	f->saved_errno = errno;
	trace(w, WEFT__TRACE_END, NULL, false);
	weft_task *next = pick(w);
	weft__fiber *g;
	if (next && next->fiber_ == f) { /* woken already, or alone */
		enter(w, f);
		return;
	}
	if (next && next->fiber_) {
		g = next->fiber_;
	} else {
		g = loop_fiber(w);
		g->first = next;
	}
	enter(w, g);
	w->prev = f;
	weft__context_switch(&f->ctx, &g->ctx);
	reap(here(f));
	restore_thread_state(f);
}

/* ------------------------------------------------------------ blocking */

#define INLINE_STACK_RESERVE 16384 /* bytes a fiber keeps free for what it runs inline */

static inline void awaited_run_done(weft__fiber *f)
{
	weft__stack_set_current(f->stack, f->task);
}

bool weft__fiber_run_awaited(const weft_task *t, const weft_group *g)
{
	weft__fiber *f = weft__fiber_current();
	if (!f || !f->task || !f->stack || weft__tls.mutexes_held > 0)
		return false;
	weft__fworker *w = here(f);
	if (!w->ops->take_awaited ||
	    (uintptr_t)__builtin_frame_address(0) - (uintptr_t)f->stack->base <
	            INLINE_STACK_RESERVE)
		return false;
	weft__tls.nopreempt++;
	weft_task *x = w->ops->take_awaited(w, t, g);
	weft__tls.nopreempt--;
	if (!x)
		return false;
	weft_task *outer = f->task;
	run_on(w, f, x);
	f->task = outer;
	awaited_run_done(f);
	return true;
}

bool weft__fiber_take_back(weft_rt *rt, weft_task *t)
{
	weft__fiber *f = weft__fiber_current();
	if (!f || weft__tls.rt != rt)
		return false;
	weft__fworker *w = here(f);
	if (!w->ops->take_awaited)
		return false;
	weft__tls.nopreempt++;
	weft_task *x = w->ops->take_awaited(w, t, NULL);
	if (x) {
		weft__dequeued(rt, 1);
		atomic_store_explicit(&w->finished, w->finished + 1, memory_order_release);
	}
	weft__tls.nopreempt--;
	return x != NULL;
}

static inline __attribute__((always_inline)) void park(weft__fworker *w, weft__fiber *f,
                                                       weft__wait_reason why)
{
	weft__tls.nopreempt++;
	int running = WEFT__FIBER_RUNNING;
	if (!atomic_compare_exchange_strong(&f->state, &running, WEFT__FIBER_PARKED)) {
		/* woken before it could park */
		atomic_store_explicit(&f->state, WEFT__FIBER_RUNNING, memory_order_relaxed);
		weft__tls.nopreempt--;
		return;
	}
	if (why == WEFT__WAIT_JOIN) {
		f->joining = true;
		if (w->ops->join)
			w->ops->join(w);
	}
	weft__count(&w->parks, 1);
	trace(w, WEFT__TRACE_PARK, NULL, false);
	WEFT__PROBE1(fiber__park, f->task);
	switch_away(w, f);
	nopreempt_add(-1);
}

void weft__fiber_park(weft__fiber *f, weft__wait_reason why)
{
	weft__fworker *w = here(f);
	weft__fiber_timer_drop(w, f);
	park(w, f, why);
}

bool weft__fiber_park_until(weft__fiber *f, weft__wait_reason why, int64_t deadline_ns)
{
	weft__fworker *w = here(f);
	weft__tls.nopreempt++;
	/* The deadline is on the real clock; only a virtual clock needs it
	 * moved, since the clock read twice may differ by a preemption. */
	int64_t due = w->virtual_time && deadline_ns != INT64_MAX
	                      ? weft__sat_add(w->vnow, weft__sat_sub(deadline_ns, weft__now_ns()))
	                      : deadline_ns;
	f->wait_result = 0;
	weft__fiber_timer_arm(w, f, due);
	/* The timer and the waker may both unpark it: the second wake-up
	 * lands while it is queued (READY_WOKEN) and must be kept. */
	f->rewakable = true;
	weft__fiber_pin_set(f, true); /* its timer is w's */
	park(w, f, why);
	bool woken = f->wait_result != WEFT_ETIMEDOUT;
	weft__fiber_timer_done(w, f);
	weft__fiber_pin_set(f, false);
	nopreempt_add(-1);
	return woken;
}

/* A parked fiber resumes on its switch line and the frames just above its
 * saved stack pointer, all cold after a park among thousands: when it is
 * woken on its own worker (a poller's report, a wake-up from a fiber
 * there), where it will resume, those loads start, so that they overlap
 * each other and the work queued before it rather than stalling its
 * resume one line after another. Not from another thread: it resumes
 * there, and reading its switch line here would only pull that line
 * away from the worker about to write it. */
static inline void prefetch_resume(const weft__fiber *f)
{
	const char *sp = __atomic_load_n(&f->ctx.sp, __ATOMIC_RELAXED);
	for (int i = 0; i < RESUME_LINES; i++)
		__builtin_prefetch(sp + 64 * i, 1, 3);
}

void weft__fiber_unpark(weft__fiber *f)
{
	weft__tls.nopreempt++; /* ready may push to this worker's queue */
	int s = atomic_load(&f->state);
	for (;;) {
		if (s == WEFT__FIBER_PARKED) {
			/* Read once it parked (its worker wrote home before) and
			 * before the fiber can run and end. */
			weft__fworker *w = here(f);
			weft_task *t = f->task;
			if (atomic_compare_exchange_weak(&f->state, &s, WEFT__FIBER_READY)) {
				trace(w, WEFT__TRACE_WAKE, NULL, false);
				atomic_fetch_add_explicit(&w->unparks, 1, memory_order_relaxed);
				WEFT__PROBE1(fiber__wake, t);
				if (on_worker(w)) {
					prefetch_resume(f);
					w->ops->ready(w, t, WEFT__READY_WOKEN);
				} else if (w->ops->wake) {
					w->ops->wake(w, t);
				} else {
					weft__fworker_push_remote(w, t);
				}
				break;
			}
		} else if (s == WEFT__FIBER_RUNNING) {
			/* Not switched out yet: its park will see WOKEN. */
			if (atomic_compare_exchange_weak(&f->state, &s, WEFT__FIBER_WOKEN))
				break;
		} else if (s == WEFT__FIBER_READY) {
			/* Queued already (preempted after it queued itself as a
			 * waiter): its next park returns at once. */
			if (atomic_compare_exchange_weak(&f->state, &s, WEFT__FIBER_READY_WOKEN))
				break;
		} else {
			break; /* already woken */
		}
	}
	weft__tls.nopreempt--;
}

void weft__fiber_yield(void)
{
	weft__fiber *f = weft__fiber_current();
	weft__fworker *w = here(f);
	weft__tls.nopreempt++;
	weft__fiber_timer_drop(w, f);
	trace(w, WEFT__TRACE_YIELD, NULL, false);
	/* A fiber that yields is in no wait queue (weft queues a waiter only
	 * right before parking it), so nobody can wake it meanwhile. */
	atomic_store_explicit(&f->state, WEFT__FIBER_READY, memory_order_relaxed);
	w->ops->ready(w, f->task, WEFT__READY_YIELDED);
	switch_away(w, f);
	nopreempt_add(-1);
}

void weft__fiber_sleep(int64_t ns)
{
	weft__fiber *f = weft__fiber_current();
	weft__fworker *w = here(f);
	weft__tls.nopreempt++;
	weft__fiber_timer_arm(w, f, weft__sat_add(clock_now(w), ns));
	weft__fiber_pin_set(f, true); /* its timer is w's until it fires (on w) */
	park(w, f, WEFT__WAIT_SLEEP);
	weft__fiber_timer_done(w, f);
	nopreempt_add(-1);
}

int weft__fiber_wait_fd(int fd, short events, int64_t timeout_ns)
{
	weft__fiber *f = weft__fiber_current();
	weft__fworker *w = here(f);
	weft__tls.nopreempt++;
	if (weft__poller_arm(&w->poller, fd, events, f) != 0) {
		weft__tls.nopreempt--;
		return WEFT_EINVAL;
	}
	f->wait_fd = fd;
	f->wait_result = 0;
	if (timeout_ns >= 0)
		weft__fiber_timer_arm(w, f, weft__sat_add(clock_now(w), timeout_ns));
	else
		weft__fiber_timer_drop(w, f);
	weft__fworker_fd_waits_add(w, 1);
	/* Its fd interest and timer are w's until fd_ready or the timer
	 * (on w) took both away: then it may move. */
	weft__fiber_pin_set(f, true);
	park(w, f, WEFT__WAIT_FD);
	weft__fiber_timer_done(w, f); /* fd_ready took the timer, or it fired */
	nopreempt_add(-1);
	return f->wait_result;
}

/* ------------------------------------------------------------ queues */

void weft__fworker_post_local(weft__fworker *w, weft_task *t)
{
	t->fiber_ = NULL;
	weft__count(&w->posted, 1);
	weft__tls.nopreempt++;
	w->ops->ready(w, t, WEFT__READY_POSTED);
	weft__tls.nopreempt--;
}

weft__fworker *weft__fworker_self(weft_rt *rt)
{
	weft__fiber *f = weft__fiber_current();
	return f && weft__tls.rt == rt ? here(f) : NULL;
}

/* ------------------------------------------------------------ quanta */

/* Runs in the signal handler of the worker's quantum clock (preempt.h),
 * interrupting whatever the worker was doing. Every tick charges the
 * running task a quantum (psjf, mlfq); under WEFT_PREEMPT=timer a fiber
 * that has run through a whole tick interval is switched out if the
 * interrupted code is a safe point, else at a later tick. */
static void on_tick(void *ctx, uintptr_t pc)
{
	weft__fworker *w = ctx;
	atomic_store_explicit(&w->ticks, atomic_load_explicit(&w->ticks, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	/* The task whose code runs is weft__tls.task, not f->task: core
	 * clears the former before it publishes completion (after which the
	 * owner may free the task), the engine the latter only after. */
	weft__fiber *f = weft__fiber_current();
	weft_task *t = weft__tls.task;
	if (!f || !t || weft__tls.nopreempt)
		return; /* the loop, or weft's own critical section */
	if (w->charges)
		w->ops->charge(w, t);
	uint64_t switches = atomic_load_explicit(&w->switches, memory_order_relaxed) +
	                    atomic_load_explicit(&w->finished, memory_order_relaxed);
	bool whole_quantum = switches == w->tick_switches;
	w->tick_switches = switches;
	if (!w->preempt || !whole_quantum)
		return;
	if (!weft__pc_in_app(pc)) {
		weft__count(&w->deferred, 1); /* in libc or another library: next tick */
		return;
	}
	if (weft__tls.mutexes_held) {
		/* Grace is per hold: a fiber that locks and unlocks all the time
		 * is caught holding at many ticks, each time a new hold. */
		if (weft__tls.mutex_locks != w->held_lock_id) {
			w->held_lock_id = weft__tls.mutex_locks;
			w->held_ticks = 0;
		}
		if (w->held_ticks < MUTEX_GRACE_TICKS) {
			w->held_ticks++;
			weft__count(&w->deferred, 1);
			return;
		}
	}
	w->held_ticks = 0;
	weft__count(&w->preemptions, 1);
	weft__tls.nopreempt++;
	trace(w, WEFT__TRACE_PREEMPT, NULL, false);
	WEFT__PROBE1(fiber__preempt, t);
	weft__ticker_unblock(); /* nopreempt is raised: ticks return at once */
	/* A wake-up that came while it ran (WOKEN) or comes while it is
	 * queued (READY_WOKEN, see unpark) is kept for its next park. */
	if (atomic_exchange(&f->state, WEFT__FIBER_READY) == WEFT__FIBER_WOKEN)
		atomic_store(&f->state, WEFT__FIBER_READY_WOKEN);
	f->rewakable = true;
	f->task = t; /* an awaited task it ran inline may have just ended */
	/* It returns through this signal handler's frame: it resumes on
	 * this worker (pinned), not another. */
	weft__fiber_pin_set(f, true);
	w->ops->ready(w, t, WEFT__READY_YIELDED);
	switch_away(w, f);
	weft__fiber_pin_set(f, false);
	weft__tls.nopreempt--;
}

static void start_quantum_clock(weft__fworker *w)
{
	const weft_config *cfg = &w->rt->cfg;
	w->preempt = cfg->preempt == WEFT_PREEMPT_TIMER;
	if (!w->preempt && !w->charges)
		return;
	int64_t quantum = (int64_t)cfg->quantum_us * 1000;
	int rc = weft__ticker_start(&w->ticker, quantum, on_tick, w);
	if (rc) {
		/* The ticker said why (the call and errno). */
		weft__log(WEFT_LOG_WARN, "weft: no quantum clock: fibers run cooperatively\n");
		w->preempt = false;
		return;
	}
	if (w->boosts) {
		w->boost_every = cfg->mlfq_boost_us / cfg->quantum_us;
		w->boost_every += w->boost_every == 0;
		w->next_boost = w->boost_every;
	}
}

/* mlfq's periodic boost, in quanta of busy worker time: a worker that idles
 * has nobody to starve. */
static void maybe_boost(weft__fworker *w)
{
	if (!w->boost_every)
		return;
	uint64_t ticks = atomic_load_explicit(&w->ticks, memory_order_relaxed);
	if (ticks < w->next_boost)
		return;
	w->ops->boost(w);
	w->next_boost = ticks + w->boost_every;
}

/* ------------------------------------------------------------ worker */

static void *worker_main(void *arg)
{
	weft__fworker *w = arg;
	weft__tls.rt = w->rt;
	weft__tls.index = w->index;
	weft__tls.nopreempt = 1; /* the loop is never preempted */
	weft__worker_started(w->rt, w->index);
	weft__context_init_thread(&w->main.ctx);
	weft__stack_overflow_handler_install();
	start_quantum_clock(w);
	w->current = &w->main;
	weft__tls.fiber = &w->main;
	loop(&w->main);
	reap(w);
	while (w->spares) {
		weft__fiber *f = w->spares;
		w->spares = f->next_spare;
		fiber_free(w, f);
	}
	w->nspares = 0;
	weft__ticker_stop(&w->ticker);
	weft__worker_stopped(w->rt, w->index);
	weft__context_release(&w->main.ctx);
	weft__stack_set_current(NULL, NULL);
	weft__tls.fiber = NULL;
	weft__tls.nopreempt = 0;
	weft__tls.rt = NULL;
	weft__tls.index = -1;
	return NULL;
}

int weft__fworker_init(weft__fworker *w, weft_rt *rt, const weft__fiber_ops *ops, void *model,
                       int index)
{
	w->rt = rt;
	w->ops = ops;
	w->model = model;
	w->index = index;
	atomic_init(&w->main.home, w);
	w->main.wait_fd = -1;
	w->main.due = INT64_MAX;
	weft__timers_init(&w->timers);
	w->progress_sleep_ns = -1;
	w->poll_every = POLL_EVERY_PICKS;
	w->virtual_time = rt->cfg.policy == WEFT_POLICY_RANDOM && rt->seed_given;
	w->tracing = rt->trace != NULL;
	int rc = weft__stack_pool_init(&w->stacks, rt->cfg.stack_size, STACK_CACHE);
	if (rc)
		return rc;
	if ((rc = weft__poller_init(&w->poller)) != 0) {
		weft__stack_pool_destroy(&w->stacks);
		return rc;
	}
	w->poller_ok = true;
	return 0;
}

int weft__fworker_start(weft__fworker *w)
{
	return weft__worker_create(&w->thread, worker_main, w, w->rt, w->index);
}

void weft__fworker_join(weft__fworker *w)
{
	pthread_join(w->thread, NULL);
}

void weft__fworker_release(weft__fworker *w)
{
	if (!w->poller_ok)
		return;
	weft__ring_destroy(w);
	weft__stack_pool_destroy(&w->stacks);
	weft__poller_destroy(&w->poller);
	w->poller_ok = false;
}
