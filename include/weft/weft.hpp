/* weft for C++: a header-only C++17 layer over the C API of weft.h.
 *
 *   #include <weft/weft.hpp>
 *
 *   weft::runtime rt;                          // model, workers from WEFT_*
 *   weft::task_group g;
 *   g.run([&] { ... });                         // any callable
 *   g.wait();
 *   weft::future<int> f = weft::async([] { return 42; });
 *   int v = f.get();                            // parks a fiber, helps on threads
 *
 * Every waiting call here waits as the C call under it does (weft_wait,
 * weft_group_wait, weft_mutex_lock, ...): a fiber parks and its worker runs
 * other tasks; a kernel thread blocks, and a task waiting for a task
 * (future::get, task_group::wait) runs queued tasks meanwhile on the
 * kernel-thread models. docs/cpp.md is the guide.
 *
 * weft itself throws nothing. Exceptions thrown by user code inside a task
 * are captured (std::exception_ptr) and rethrown where the result is taken:
 * future::get, task_group::wait, or the algorithm that ran the code. Built
 * with -fno-exceptions this header compiles and works; an exception then
 * cannot be thrown, and the few misuses that would throw
 * std::future_error (get() on an empty future, a promise destroyed without
 * a value) print a message and abort instead. */
#ifndef WEFT_WEFT_HPP
#define WEFT_WEFT_HPP

#if __cplusplus < 201703L
#error "weft/weft.hpp needs C++17 (-std=c++17)"
#endif

#include "weft.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <iterator>
#include <mutex>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
/** Defined to 1 when this header transports exceptions (the translation
 * unit is compiled with exceptions enabled). */
#define WEFT_CPP_EXCEPTIONS 1
#else
#define WEFT_CPP_EXCEPTIONS 0
#endif

/** The C++ layer of weft: runtime, task groups, futures, algorithms and
 * synchronisation built on the C API. */
namespace weft
{

/* ------------------------------------------------------------------ detail */

/// @cond WEFT_DETAIL
namespace detail
{

[[noreturn]] inline void fatal(const char *what) noexcept
{
	std::fprintf(stderr, "weft: %s\n", what);
	std::fflush(stderr);
	std::abort();
}

/* Task storage. Nodes (a task group's task, a future's state) come from a
 * per-thread free list per size class, so that in steady state run() and
 * async() allocate nothing: a node freed on a thread goes to that thread's
 * list, up to pool_keep_bytes of nodes per class (4096 nodes of 64 bytes
 * ... 512 of 512); beyond that and for nodes larger than 512 bytes,
 * operator new/delete. A task group's nodes are freed by wait(), so a group
 * that holds more than that many tasks at once allocates for the rest. The list is reached through a call that is
 * not inlined: a fiber may move to another worker at any blocking call, and
 * a thread-local address computed before it must not be used after it. */
inline constexpr std::size_t pool_classes = 4; /* 64, 128, 256, 512 bytes */
inline constexpr std::size_t pool_keep_bytes = 256 * 1024;

struct pool_block {
	pool_block *next;
};

struct pool_cache {
	pool_block *head[pool_classes] = {};
	std::size_t count[pool_classes] = {};
	pool_cache() = default;
	pool_cache(const pool_cache &) = delete;
	pool_cache &operator=(const pool_cache &) = delete;
	~pool_cache()
	{
		for (std::size_t c = 0; c < pool_classes; c++) {
			while (pool_block *b = head[c]) {
				head[c] = b->next;
				::operator delete(static_cast<void *>(b));
			}
		}
	}
};

/* Tests define WEFT_CPP_NO_POOL so that every node is new'd and deleted:
 * AddressSanitizer then sees a node used after it was given back. */
#ifdef WEFT_CPP_COUNT_NODES
/* Tests define WEFT_CPP_COUNT_NODES to count the nodes in use. */
inline std::atomic<long> &nodes_in_use() noexcept
{
	static std::atomic<long> n{0};
	return n;
}
#endif

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
inline pool_cache *
pool_here() noexcept
{
	static thread_local pool_cache cache;
	pool_cache *here = &cache;
#if defined(__GNUC__) || defined(__clang__)
	/* Not a const function to the optimiser: a caller that parks between
	 * two calls (a fiber may resume on another thread under mn) gets the
	 * new thread's cache, not the first call's result again. */
	__asm__ volatile("" : "+r"(here));
#endif
	return here;
}

constexpr int pool_class(std::size_t n) noexcept
{
	return n <= 64 ? 0 : n <= 128 ? 1 : n <= 256 ? 2 : n <= 512 ? 3 : -1;
}

template <class T> T *pool_new_raw() noexcept
{
	static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
	              "weft: over-aligned task state");
#ifdef WEFT_CPP_COUNT_NODES
	nodes_in_use().fetch_add(1, std::memory_order_relaxed);
#endif
#ifdef WEFT_CPP_NO_POOL
	constexpr int c = -1;
#else
	constexpr int c = pool_class(sizeof(T));
#endif
	if constexpr (c < 0) {
		return static_cast<T *>(::operator new(sizeof(T)));
	} else {
		pool_cache *pc = pool_here();
		if (pool_block *b = pc->head[c]) {
			pc->head[c] = b->next;
			pc->count[c]--;
			return reinterpret_cast<T *>(b);
		}
		return static_cast<T *>(::operator new (std::size_t{64} << (c < 0 ? 0 : c)));
	}
}

inline void pool_free(void *p, std::size_t size) noexcept
{
#ifdef WEFT_CPP_COUNT_NODES
	nodes_in_use().fetch_sub(1, std::memory_order_relaxed);
#endif
#ifdef WEFT_CPP_NO_POOL
	int c = -1;
	(void)size;
#else
	int c = pool_class(size);
#endif
	if (c >= 0) {
		pool_cache *pc = pool_here();
		if (pc->count[c] < (pool_keep_bytes >> 6 >> c)) {
			pool_block *b = static_cast<pool_block *>(p);
			b->next = pc->head[c];
			pc->head[c] = b;
			pc->count[c]++;
			return;
		}
	}
	::operator delete(p);
}

/* The runtime a call without one uses: the caller's (inside a task), else
 * the first weft::runtime still alive. */
inline std::atomic<weft_rt *> &default_rt() noexcept
{
	static std::atomic<weft_rt *> rt{nullptr};
	return rt;
}

inline weft_rt *current_rt() noexcept
{
	weft_rt *rt = weft_rt_current();
	return rt ? rt : default_rt().load(std::memory_order_acquire);
}

/* Deadlines: any clock's time point becomes a CLOCK_MONOTONIC nanosecond
 * deadline as weft_clock_ns() reads it. */
template <class Clock, class Dur>
std::int64_t deadline_ns(const std::chrono::time_point<Clock, Dur> &tp) noexcept
{
	auto now = Clock::now();
	std::int64_t base = weft_clock_ns();
	if (tp <= now)
		return base;
	auto rel = tp - now;
	if (rel >= std::chrono::hours(24 * 365 * 100))
		return INT64_MAX;
	return base + std::chrono::duration_cast<std::chrono::nanoseconds>(rel).count();
}

template <class Rep, class Period>
std::int64_t timeout_ns(const std::chrono::duration<Rep, Period> &d) noexcept
{
	if (d <= d.zero())
		return 0;
	if (d >= std::chrono::hours(24 * 365 * 100))
		return INT64_MAX / 2;
	return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

/* The first exception of several concurrent callers, rethrown by one. */
struct first_error {
#if WEFT_CPP_EXCEPTIONS
	std::atomic<bool> set{false};
	std::exception_ptr e;
	void capture() noexcept
	{
		if (!set.exchange(true, std::memory_order_acq_rel))
			e = std::current_exception();
	}
	bool failed() const noexcept
	{
		return set.load(std::memory_order_relaxed);
	}
	void rethrow()
	{
		if (set.load(std::memory_order_acquire) && e) {
			std::exception_ptr x = std::move(e);
			e = nullptr;
			set.store(false, std::memory_order_relaxed);
			std::rethrow_exception(x);
		}
	}
#else
	bool failed() const noexcept
	{
		return false;
	}
	void rethrow() noexcept
	{
	}
#endif
};

[[noreturn]] inline void future_error(std::future_errc code, const char *what)
{
#if WEFT_CPP_EXCEPTIONS
	(void)what;
	throw std::future_error(code);
#else
	(void)code;
	fatal(what);
#endif
}

/* fork2 runs a and b as weft_fork_join does; an exception of either is
 * rethrown after both returned (a's first). A small trivially copyable
 * callable (a lambda capturing a few references, what a recursion passes)
 * is copied into its slot: one load less per call than through a pointer
 * (a fib tree ran 4-5% faster). */
template <class F> struct fork_slot {
	static constexpr bool by_value =
	        std::is_trivially_copyable_v<F> && sizeof(F) <= 4 * sizeof(void *);
	std::conditional_t<by_value, std::remove_const_t<F>, F *> f;
#if WEFT_CPP_EXCEPTIONS
	std::exception_ptr *e = nullptr;
#endif
	explicit fork_slot(F &fn) noexcept : f(hold(fn))
	{
	}
	static auto hold(F &fn) noexcept
	{
		if constexpr (by_value)
			return fn;
		else
			return &fn;
	}
	decltype(auto) fn() noexcept
	{
		if constexpr (by_value)
			return (f);
		else
			return *f;
	}
	static void call(void *p) noexcept
	{
		fork_slot *s = static_cast<fork_slot *>(p);
#if WEFT_CPP_EXCEPTIONS
		try {
			s->fn()();
		} catch (...) {
			s->e = new std::exception_ptr(std::current_exception());
		}
#else
		s->fn()();
#endif
	}
};

#if WEFT_CPP_EXCEPTIONS
inline void rethrow_slots(std::exception_ptr *ea, std::exception_ptr *eb)
{
	std::exception_ptr x = ea ? *ea : *eb;
	delete ea;
	delete eb;
	std::rethrow_exception(x);
}
#endif

/* weft_fork_join refused: a NULL rt outside any task goes to the default
 * runtime, and without one (or refused again) both run here. Out of line,
 * so that the common path keeps nothing live across its call. */
template <class A, class B>
__attribute__((noinline, cold)) void fork2_refused(weft_rt *rt, fork_slot<A> *sa,
                                                   fork_slot<B> *sb) noexcept
{
	if (rt || !(rt = default_rt().load(std::memory_order_acquire)) ||
	    weft_fork_join(rt, &fork_slot<A>::call, sa, &fork_slot<B>::call, sb) != 0) {
		fork_slot<A>::call(sa);
		fork_slot<B>::call(sb);
	}
}

/* rt NULL: the calling task's runtime (weft_fork_join looks it up, which
 * costs less than weft_rt_current here), else the default runtime. */
template <class A, class B> inline void fork2(weft_rt *rt, A &a, B &b)
{
	fork_slot<A> sa(a);
	fork_slot<B> sb(b);
	if (weft_fork_join(rt, &fork_slot<A>::call, &sa, &fork_slot<B>::call, &sb) != 0)
		fork2_refused(rt, &sa, &sb);
#if WEFT_CPP_EXCEPTIONS
	if (__builtin_expect((sa.e != nullptr) | (sb.e != nullptr), 0))
		rethrow_slots(sa.e, sb.e);
#endif
}

} // namespace detail
/// @endcond

/* ------------------------------------------------------------------ runtime */

/** weft::config is weft_config with its defaults filled in
 * (weft_config_init): set the fields you want (model, workers, policy,
 * ...), then build a weft::runtime from it. WEFT_* environment variables
 * still win over fields set here, as in C. */
struct config : weft_config {
	/** The defaults of weft_config_init. */
	config() noexcept : weft_config()
	{
		weft_config_init(this);
	}
};

/** weft::runtime owns a weft_rt: its constructor creates it (weft_rt_create)
 * and its destructor destroys it (weft_rt_destroy: every queued task runs
 * first). Move-only. A failed creation leaves an empty runtime:
 * `!rt` is true and error() says why (a WEFT_E* code); calls that need a
 * runtime then run their work on the calling thread.
 *
 * The first runtime created (and still alive) is the default: the
 * functions that take no runtime (weft::async, weft::parallel_for, a
 * task_group built without one, ...) use the runtime of the task calling
 * them, or else the default. */
class runtime
{
      public:
	/** Creates a runtime configured from the environment (WEFT_MODEL,
	 * WEFT_WORKERS, ...) and the defaults. */
	runtime() noexcept
	{
		create(nullptr);
	}
	/** Creates a runtime configured by cfg (environment variables win). */
	explicit runtime(const config &cfg) noexcept
	{
		create(&cfg);
	}
	/** Destroys an owned runtime after draining its tasks. */
	~runtime()
	{
		reset();
	}
	runtime(const runtime &) = delete;
	runtime &operator=(const runtime &) = delete;
	/** Moves the ownership; o becomes empty. */
	runtime(runtime &&o) noexcept : rt_(o.rt_), err_(o.err_), owned_(o.owned_)
	{
		o.rt_ = nullptr;
		o.owned_ = false;
	}
	/** Destroys what this owned, then takes o's runtime. */
	runtime &operator=(runtime &&o) noexcept
	{
		if (this != &o) {
			reset();
			rt_ = o.rt_;
			err_ = o.err_;
			owned_ = o.owned_;
			o.rt_ = nullptr;
			o.owned_ = false;
		}
		return *this;
	}

	/** The runtime whose task calls it, as a handle that does not own it
	 * (destroying the handle leaves the runtime alone); empty outside
	 * tasks. */
	static runtime current() noexcept
	{
		runtime r(weft_rt_current(), false);
		return r;
	}

	/** Whether this holds a runtime. */
	explicit operator bool() const noexcept
	{
		return rt_ != nullptr;
	}
	/** Why creation failed (a WEFT_E* code), or 0. */
	int error() const noexcept
	{
		return err_;
	}
	/** The C handle, for the C API. */
	weft_rt *native_handle() const noexcept
	{
		return rt_;
	}
	/** The effective configuration (weft_rt_config); the defaults when
	 * empty. */
	config effective_config() const noexcept
	{
		config c;
		if (rt_)
			weft_rt_config(rt_, &c);
		return c;
	}
	/** The number of workers the runtime really has; 1 when empty. */
	int workers() const noexcept
	{
		config c = effective_config();
		return rt_ && c.workers > 0 ? c.workers : 1;
	}
	/** The model it runs (WEFT_MODEL_THREADS, ..._MN, ...). */
	weft_model model() const noexcept
	{
		return effective_config().model;
	}
	/** weft_wait_all: waits until every task posted so far finished.
	 * Returns 0 or a WEFT_E* code (WEFT_EDEADLK from one of its tasks). */
	int wait_all() noexcept
	{
		return rt_ ? weft_wait_all(rt_) : 0;
	}

      private:
	runtime(weft_rt *rt, bool owned) noexcept : rt_(rt), owned_(owned)
	{
	}
	void create(const weft_config *cfg) noexcept
	{
		err_ = weft_rt_create(&rt_, cfg);
		if (err_ != 0) {
			rt_ = nullptr;
			return;
		}
		owned_ = true;
		weft_rt *none = nullptr;
		detail::default_rt().compare_exchange_strong(none, rt_);
	}
	void reset() noexcept
	{
		if (rt_ && owned_) {
			weft_rt *me = rt_;
			detail::default_rt().compare_exchange_strong(me, nullptr);
			weft_rt_destroy(rt_);
		}
		rt_ = nullptr;
		owned_ = false;
	}

	weft_rt *rt_ = nullptr;
	int err_ = 0;
	bool owned_ = false;
};

/* ------------------------------------------------------------- task group */

/** What task_group::wait reports. */
enum class task_group_status {
	complete, /**< every task ran */
	canceled, /**< cancel() was called, or a task threw: some may not have run */
};

class task_group;

/// @cond WEFT_DETAIL
namespace detail
{
struct group_node {
	weft_task task;
	group_node *next;
	task_group *group;
	void (*run)(group_node *) noexcept;
	void (*drop)(group_node *) noexcept; /* destroys the callable (if not run) and frees */
	bool consumed;
};
} // namespace detail
/// @endcond

/** weft::task_group runs callables as tasks and waits for them all, as
 * oneTBB's task_group does: run(f) with any callable (capturing lambdas,
 * move-only callables, std::function), wait(), cancel(). Built on a
 * weft_group; the task storage is weft's, taken from a per-thread pool (no
 * allocation per task once warm), and released by wait(). The callable is
 * moved into the task and destroyed right after it ran.
 *
 * A callable that throws cancels the group (tasks not started are dropped)
 * and wait() rethrows the first exception. The destructor waits for tasks
 * still unfinished and says so on stderr, as a missing wait() is a bug.
 * run() and cancel() may be called from any thread, also from the group's
 * own tasks; wait() from one thread at a time. */
class task_group
{
      public:
	/** A group on the caller's runtime (inside a task) or the default one. */
	task_group() noexcept : task_group(detail::current_rt())
	{
	}
	/** A group whose tasks run on rt. */
	explicit task_group(const runtime &rt) noexcept : task_group(rt.native_handle())
	{
	}
	/** A group whose tasks run on rt (C handle; NULL: run() runs inline). */
	explicit task_group(weft_rt *rt) noexcept : rt_(rt), g_()
	{
		/* Zeroed first (g_()): weft_group_init refuses bytes left by a
		 * group that had tasks posted and was never waited for. */
		weft_group_init(&g_);
	}
	task_group(const task_group &) = delete;
	task_group &operator=(const task_group &) = delete;
	/** Waits for unfinished tasks (saying so on stderr when there were
	 * any), then releases their storage. Never throws: an exception not
	 * collected by wait() is dropped. */
	~task_group()
	{
		long pending = weft_group_pending(&g_);
		if (pending > 0)
			std::fprintf(
			        stderr,
			        "weft: task_group destroyed with %ld unfinished tasks: waiting "
			        "for them (call wait() first)\n",
			        pending);
		finish();
	}

	/** run posts f as a task of the group. f is moved (or copied) into
	 * task storage the group owns. Where the post is refused (a full
	 * bounded queue, a destroy under way, no runtime), f runs right here
	 * instead, so no task is lost. */
	template <class F> void run(F &&f)
	{
		using Fn = std::decay_t<F>;
		struct node : detail::group_node {
			Fn fn;
		};
		node *n = detail::pool_new_raw<node>();
		/* A node's bytes are another node's leftovers: zeroed, they cannot
		 * look like a task in flight to weft_task_init. */
		std::memset(static_cast<void *>(&n->task), 0, sizeof(n->task));
#if WEFT_CPP_EXCEPTIONS
		try {
			::new (static_cast<void *>(&n->fn)) Fn(std::forward<F>(f));
		} catch (...) {
			detail::pool_free(n, sizeof(node)); /* f's move or copy threw */
			throw;
		}
#else
		::new (static_cast<void *>(&n->fn)) Fn(std::forward<F>(f));
#endif
		n->group = this;
		n->consumed = false;
		n->run = [](detail::group_node *b) noexcept {
			node *self = static_cast<node *>(b);
#if WEFT_CPP_EXCEPTIONS
			try {
				self->fn();
			} catch (...) {
				self->group->err_.capture();
				self->group->cancel();
			}
#else
			self->fn();
#endif
			self->fn.~Fn();
			self->consumed = true;
		};
		n->drop = [](detail::group_node *b) noexcept {
			node *self = static_cast<node *>(b);
			if (!self->consumed)
				self->fn.~Fn();
			detail::pool_free(self, sizeof(node));
		};
		detail::group_node *head = nodes_.load(std::memory_order_relaxed);
		do
			n->next = head;
		while (!nodes_.compare_exchange_weak(head, n, std::memory_order_release,
		                                     std::memory_order_relaxed));
		if (!rt_ || weft_task_init(&n->task, &task_group::trampoline, n) != 0 ||
		    weft_post_in(rt_, &g_, &n->task) != 0)
			n->run(n);
	}

	/** wait blocks until every task of the group finished (also tasks
	 * they run() meanwhile), then releases their storage and makes the
	 * group ready for reuse. From inside a task it waits as weft_wait
	 * does: a fiber parks; on kernel-thread models the worker runs queued
	 * tasks meanwhile. Rethrows the first exception a task threw. */
	task_group_status wait()
	{
		weft_group_wait(&g_);
		return finish_and_rethrow();
	}

	/** wait_until is wait() with a deadline: false when tasks were still
	 * unfinished at tp (the group is unaffected: wait again later); true
	 * when all finished (then as wait(): the first exception is
	 * rethrown). Never runs other tasks while it waits. */
	template <class Clock, class Dur>
	bool wait_until(const std::chrono::time_point<Clock, Dur> &tp)
	{
		if (weft_group_wait_until(&g_, detail::deadline_ns(tp)) == WEFT_ETIMEDOUT)
			return false;
		finish_and_rethrow();
		return true;
	}
	/** wait_for(d) is wait_until(steady_clock::now() + d). */
	template <class Rep, class Period>
	bool wait_for(const std::chrono::duration<Rep, Period> &d)
	{
		if (weft_group_wait_until(&g_, weft_clock_ns() + detail::timeout_ns(d)) ==
		    WEFT_ETIMEDOUT)
			return false;
		finish_and_rethrow();
		return true;
	}

	/** cancel drops the tasks of the group that have not started (their
	 * callables are destroyed without running) and every task run() posts
	 * until the next wait() returns; running tasks finish, and may ask
	 * weft::this_task::cancel_requested(). */
	void cancel() noexcept
	{
		canceled_.store(true, std::memory_order_relaxed);
		weft_group_cancel(&g_);
	}
	/** Whether cancel() was called since the last wait(). */
	bool is_canceling() const noexcept
	{
		return canceled_.load(std::memory_order_relaxed);
	}
	/** The C group, for weft_post_in and friends. */
	weft_group *native_handle() noexcept
	{
		return &g_;
	}

      private:
	static void trampoline(void *arg) noexcept
	{
		detail::group_node *n = static_cast<detail::group_node *>(arg);
		n->run(n);
	}
	/* Every task finished: free the nodes, re-arm a cancelled group. */
	task_group_status finish() noexcept
	{
		weft_group_wait(&g_);
		/* Loads first: an atomic exchange costs more, and usually there
		 * is nothing (the destructor after wait) or no cancel. */
		detail::group_node *n = nodes_.load(std::memory_order_acquire);
		if (n)
			n = nodes_.exchange(nullptr, std::memory_order_acquire);
		while (n) {
			detail::group_node *next = n->next;
			n->drop(n);
			n = next;
		}
		if (canceled_.load(std::memory_order_relaxed)) {
			canceled_.store(false, std::memory_order_relaxed);
			std::memset(static_cast<void *>(&g_), 0, sizeof(g_));
			weft_group_init(&g_);
			return task_group_status::canceled;
		}
		return task_group_status::complete;
	}
	task_group_status finish_and_rethrow()
	{
		task_group_status st = finish();
		err_.rethrow();
		return st;
	}

	weft_rt *rt_;
	weft_group g_;
	std::atomic<detail::group_node *> nodes_{nullptr};
	std::atomic<bool> canceled_{false};
	detail::first_error err_;
};

/* ------------------------------------------------------------------ futures */

template <class T> class future;
template <class T> class promise;

/// @cond WEFT_DETAIL
namespace detail
{

/* The shared state of a future. Two kinds:
 *
 * - task: made by async, then and when_all; the producing task is the
 *   weft_task inside it. The future owns it alone: get() is weft_wait on that
 *   task (a fiber parks, a kernel-thread worker helps), and the future's
 *   destructor waits for the task before freeing it, so nothing outlives
 *   its storage. A continuation of a future made by a promise is posted
 *   only when the promise is set: until then waiters use the flag below.
 * - promise: a promise and its future share it (a count of two); readiness
 *   is a flag under a weft_mutex, waited for on a weft_cond (a fiber parks).
 *
 * A continuation of a promise (or of such a continuation) is both: a task,
 * posted by whoever makes its predecessor ready. Its waiters wait for the
 * post (launched), then weft_wait the task, so that a kernel-thread worker
 * helps run it: blocking that worker until the value is there would
 * deadlock when the continuation is queued behind it (threads, 1 worker).
 * Until the post, a waiter first waits for the predecessor itself (pred),
 * helping in turn, so a chain of them runs on a worker that waits for its
 * end. Such states count references (their owner, the poster while it
 * posts, a waiter helping the predecessor). */
struct state_base {
	weft_task task{}; /* zeroed: leftover bytes never look like a task in flight */
	void (*destroy)(state_base *) noexcept;
	void (*run_fn)(state_base *) noexcept; /* the task's body, for running it inline */
	weft_rt *rt = nullptr;
	bool posted = false;   /* task posted at creation: weft_wait tells when it ends */
	bool flagged = false;  /* readiness through ready/mu/cv */
	bool consumed = false; /* the task ran (or cannot run any more) */
	bool has_value = false;
	bool is_task = false; /* made by a task (async, then, when_all), not a promise */
	std::atomic<bool> ready{false};
	std::atomic<int> refs{1};
	weft_mutex mu;
	weft_cond cv;
	state_base *cont = nullptr; /* a promise's continuation, posted at set */
	state_base *pred = nullptr; /* flagged task: its predecessor, until posted */
	bool launched = false;      /* flagged task: posted (or run); under mu */
#if WEFT_CPP_EXCEPTIONS
	std::exception_ptr exc;
#endif

	void init_flag() noexcept
	{
		flagged = true;
		weft_mutex_init(&mu);
		weft_cond_init(&cv);
	}
	/* Flagged states: publish readiness and hand back the continuation. */
	state_base *mark_ready() noexcept
	{
		weft_mutex_lock(&mu);
		ready.store(true, std::memory_order_release);
		state_base *c = cont;
		cont = nullptr;
		weft_cond_broadcast(&cv);
		weft_mutex_unlock(&mu);
		return c;
	}
	void wait_flag() noexcept
	{
		if (ready.load(std::memory_order_acquire))
			return;
		weft_mutex_lock(&mu);
		while (!ready.load(std::memory_order_relaxed))
			weft_cond_wait(&cv, &mu);
		weft_mutex_unlock(&mu);
	}
	bool wait_flag_until(std::int64_t deadline) noexcept
	{
		if (ready.load(std::memory_order_acquire))
			return true;
		weft_mutex_lock(&mu);
		while (!ready.load(std::memory_order_relaxed))
			if (weft_cond_wait_until(&cv, &mu, deadline) == WEFT_ETIMEDOUT)
				break;
		bool r = ready.load(std::memory_order_relaxed);
		weft_mutex_unlock(&mu);
		return r;
	}

	/* A flagged task: waits until it was posted, helping its predecessor
	 * finish meanwhile (see the top). */
	void wait_launched() noexcept;

	/* Waits until the value (or exception) is there. */
	void wait() noexcept
	{
		if (flagged && is_task)
			wait_launched();
		else if (flagged)
			wait_flag();
		/* A posted task: weft_wait also tells that weft no longer touches
		 * it (after the flag, too), so the storage may be freed. */
		if (posted || (flagged && is_task))
			weft_wait(&task);
	}
	bool wait_until(std::int64_t deadline) noexcept
	{
		if (flagged && !wait_flag_until(deadline))
			return false;
		if (posted || (flagged && is_task))
			return weft_wait_until(&task, deadline) != WEFT_ETIMEDOUT;
		return true;
	}

	/* Posts this state's task on rt, after `after` (a state whose task
	 * was posted) when given; runs it here when weft refuses. */
	void post(weft_rt *on, state_base *after) noexcept
	{
		/* A flagged state is posted by whoever makes its predecessor
		 * ready, while its owner may read these: write only what
		 * changes. And once weft has the task it may run, and the
		 * owner free this state, before weft_post returns: nothing
		 * here touches it after a successful post, but a flagged
		 * state, which a reference keeps. */
		if (rt != on)
			rt = on;
		bool by_owner = !flagged;
		if (by_owner) {
			posted = true;
		} else {
			/* Held across the post: launched is written after it. And
			 * pred is dropped before it (the task, once it runs,
			 * releases pred). */
			refs.fetch_add(1, std::memory_order_relaxed);
			weft_mutex_lock(&mu);
			pred = nullptr;
			weft_mutex_unlock(&mu);
		}
		int rc = WEFT_EINVAL;
		if (on) {
			if (after && after->posted) {
				weft_task *t = &after->task;
				rc = weft_post_when(on, nullptr, &task, &t, 1);
			} else {
				rc = weft_post(on, &task);
			}
		}
		if (rc != 0) {
			if (by_owner)
				posted = false;
			if (after)
				after->wait();
			run_fn(this);
		}
		if (!by_owner)
			launch_done();
	}
	void launch_done() noexcept;
};

inline void release(state_base *s) noexcept
{
	/* A task's state has one owner, its future: no atomic to count. */
	if ((s->is_task && !s->flagged) || s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
		s->destroy(s);
}

inline void state_base::launch_done() noexcept
{
	weft_mutex_lock(&mu);
	launched = true;
	weft_cond_broadcast(&cv);
	weft_mutex_unlock(&mu);
	release(this); /* the poster's hold */
}

inline void state_base::wait_launched() noexcept
{
	bool helped = false;
	weft_mutex_lock(&mu);
	while (!launched) {
		state_base *p = helped ? nullptr : pred;
		if (p) {
			/* Alive: this task, not yet posted, holds p's future. */
			p->refs.fetch_add(1, std::memory_order_relaxed);
			weft_mutex_unlock(&mu);
			p->wait();
			release(p);
			helped = true;
			weft_mutex_lock(&mu);
			continue;
		}
		weft_cond_wait(&cv, &mu);
	}
	weft_mutex_unlock(&mu);
}

template <class T> struct value_state : state_base {
	alignas(T) unsigned char val[sizeof(T)];
	T *value() noexcept
	{
		return std::launder(reinterpret_cast<T *>(val));
	}
	~value_state()
	{
		if (has_value)
			value()->~T();
	}
};
template <> struct value_state<void> : state_base {
};

/* Stores what f() returns (or throws) into s. */
template <class T, class F> void fill(value_state<T> *s, F &f) noexcept
{
#if WEFT_CPP_EXCEPTIONS
	try {
#endif
		if constexpr (std::is_void_v<T>) {
			f();
		} else {
			::new (static_cast<void *>(s->val)) T(f());
		}
		s->has_value = true;
#if WEFT_CPP_EXCEPTIONS
	} catch (...) {
		s->exc = std::current_exception();
	}
#endif
}

template <class T, class F> struct task_state : value_state<T> {
	alignas(F) unsigned char fbuf[sizeof(F)];
	F *fn() noexcept
	{
		return std::launder(reinterpret_cast<F *>(fbuf));
	}

	static void run(state_base *b) noexcept
	{
		task_state *s = static_cast<task_state *>(b);
		fill<T>(s, *s->fn());
		s->fn()->~F();
		s->consumed = true;
		if (s->flagged) {
			if (state_base *c = s->mark_ready())
				c->post(c->rt, nullptr);
		}
	}
	static void run_c(void *arg) noexcept
	{
		run(static_cast<state_base *>(arg));
	}
	static void destroy_it(state_base *b) noexcept
	{
		task_state *s = static_cast<task_state *>(b);
		if (!s->consumed)
			s->fn()->~F();
		s->~task_state();
		pool_free(s, sizeof(task_state));
	}
	/* Throws what moving (or copying) g into the state throws, after
	 * freeing the state. */
	template <class G> static task_state *make(G &&g)
	{
		task_state *s = pool_new_raw<task_state>();
		::new (static_cast<void *>(s)) task_state;
#if WEFT_CPP_EXCEPTIONS
		try {
			::new (static_cast<void *>(s->fbuf)) F(std::forward<G>(g));
		} catch (...) {
			s->~task_state();
			pool_free(s, sizeof(task_state));
			throw;
		}
#else
		::new (static_cast<void *>(s->fbuf)) F(std::forward<G>(g));
#endif
		s->destroy = &destroy_it;
		s->run_fn = &run;
		s->is_task = true;
		weft_task_init(&s->task, &run_c, static_cast<state_base *>(s));
		return s;
	}
};

template <class T> struct promise_state : value_state<T> {
	static void destroy_it(state_base *b) noexcept
	{
		promise_state *s = static_cast<promise_state *>(b);
		s->~promise_state();
		pool_free(s, sizeof(promise_state));
	}
	static promise_state *make() noexcept
	{
		promise_state *s = pool_new_raw<promise_state>();
		::new (static_cast<void *>(s)) promise_state;
		s->destroy = &destroy_it;
		s->refs.store(2, std::memory_order_relaxed);
		s->init_flag();
		return s;
	}
};

/* Publishes a promise's result and posts the continuation waiting on it. */
inline void promise_ready(state_base *s) noexcept
{
	if (state_base *c = s->mark_ready())
		c->post(c->rt, nullptr);
}

template <class T> struct is_future : std::false_type {
};
template <class T> struct is_future<future<T>> : std::true_type {
};

template <class T> future<T> make_future(state_base *s) noexcept;
template <class T> state_base *state_of(future<T> &f) noexcept;

} // namespace detail
/// @endcond

/** weft::future<T> is the result of weft::async, future::then,
 * weft::when_all or a weft::promise: a value of type T (or void) that is
 * ready once its task ran. Move-only, as std::future. get() waits and
 * returns the value (or rethrows the task's exception) once; the future is
 * then empty (valid() false).
 *
 * Waiting waits as weft_wait does: inside a task a fiber parks (fibers,
 * mn) and a kernel-thread worker runs queued tasks meanwhile (threads,
 * spawn), so a task may get() the futures of tasks it started without
 * deadlock at any worker count. The destructor of a future whose task has
 * not finished waits for it (as a std::async future's does): drop a future
 * only when you mean to wait. */
template <class T> class future
{
	static_assert(!std::is_reference_v<T>, "weft::future<T&> is not supported");

      public:
	/** An empty future (valid() is false). */
	future() noexcept = default;
	/** Waits for an unfinished task, then frees the state. */
	~future()
	{
		reset();
	}
	future(const future &) = delete;
	future &operator=(const future &) = delete;
	/** Takes o's state; o becomes empty. */
	future(future &&o) noexcept : s_(o.s_)
	{
		o.s_ = nullptr;
	}
	/** Releases this state (waiting as the destructor does), takes o's. */
	future &operator=(future &&o) noexcept
	{
		if (this != &o) {
			reset();
			s_ = o.s_;
			o.s_ = nullptr;
		}
		return *this;
	}

	/** Whether this future has a state (not empty, not yet got). */
	bool valid() const noexcept
	{
		return s_ != nullptr;
	}
	/** Whether the value is there (get() would not wait). */
	bool is_ready() const noexcept
	{
		if (!s_)
			return false;
		if (s_->flagged)
			return s_->ready.load(std::memory_order_acquire);
		return !s_->posted || weft_task_state_of(&s_->task) >= WEFT_TASK_DONE;
	}
	/** wait blocks until the value is there (see the class comment). */
	void wait() const noexcept
	{
		if (s_)
			s_->wait();
	}
	/** wait_until waits up to tp: std::future_status::ready, or timeout.
	 * Never runs other tasks while it waits. */
	template <class Clock, class Dur>
	std::future_status wait_until(const std::chrono::time_point<Clock, Dur> &tp) const noexcept
	{
		if (!s_)
			return std::future_status::ready;
		return s_->wait_until(detail::deadline_ns(tp)) ? std::future_status::ready
		                                               : std::future_status::timeout;
	}
	/** wait_for(d) is wait_until(now + d). */
	template <class Rep, class Period>
	std::future_status wait_for(const std::chrono::duration<Rep, Period> &d) const noexcept
	{
		if (!s_)
			return std::future_status::ready;
		return s_->wait_until(weft_clock_ns() + detail::timeout_ns(d))
		               ? std::future_status::ready
		               : std::future_status::timeout;
	}

	/** get waits for the value and returns it (moved out), or rethrows the
	 * exception the task threw; the future is empty afterwards. On an
	 * empty future it throws std::future_error (no_state); without
	 * exceptions it aborts, saying so. */
	T get()
	{
		if (!s_)
			detail::future_error(std::future_errc::no_state,
			                     "weft::future::get on an empty future");
		s_->wait();
		detail::state_base *s = s_;
		s_ = nullptr;
		struct releaser {
			detail::state_base *s;
			~releaser()
			{
				detail::release(s);
			}
		} r{s};
#if WEFT_CPP_EXCEPTIONS
		if (s->exc)
			std::rethrow_exception(s->exc);
#endif
		if (!s->has_value)
			detail::future_error(std::future_errc::broken_promise,
			                     "weft::future::get: the promise or task was dropped "
			                     "without a value");
		if constexpr (!std::is_void_v<T>)
			return std::move(*static_cast<detail::value_state<T> *>(s)->value());
	}

	/** then(g) returns the future of g run as a task once this future's
	 * value is ready, consuming this future (it becomes empty). The task is
	 * posted at once with weft_post_when, so no worker waits for the
	 * value meanwhile. g is called with this future (ready) when it can
	 * take a weft::future<T>; otherwise with the value (nothing for T =
	 * void), and an exception of this future skips g and goes to the
	 * returned one. */
	template <class G> auto then(G &&g);

      private:
	void reset() noexcept
	{
		if (s_) {
			s_->wait();
			detail::release(s_);
			s_ = nullptr;
		}
	}
	explicit future(detail::state_base *s) noexcept : s_(s)
	{
	}
	template <class U> friend future<U> detail::make_future(detail::state_base *s) noexcept;
	template <class U> friend detail::state_base *detail::state_of(future<U> &f) noexcept;

	detail::state_base *s_ = nullptr;
};

/// @cond WEFT_DETAIL
namespace detail
{
template <class T> future<T> make_future(state_base *s) noexcept
{
	return future<T>(s);
}
template <class T> state_base *state_of(future<T> &f) noexcept
{
	return f.s_;
}

/* Starts fn as a task on rt after pred (or at once), returns its future. */
template <class T, class F> future<T> start(weft_rt *rt, F &&fn)
{
	using S = task_state<T, std::decay_t<F>>;
	S *s = S::make(std::forward<F>(fn));
	s->post(rt, nullptr);
	return make_future<T>(s);
}
} // namespace detail
/// @endcond

/** async runs f(args...) as a task and returns the future of its result.
 * f and args are moved (or copied) into the task's storage. Runs on the
 * caller's runtime (inside a task) or the default one (see
 * weft::runtime); with none, or where the post is refused, it runs right
 * here and the future is ready on return. */
template <class F, class... Args,
          class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, runtime>>>
auto async(F &&f, Args &&...args)
{
	using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>;
	return detail::start<R>(detail::current_rt(),
	                        [fn = std::forward<F>(f), tup = std::make_tuple(std::forward<Args>(
	                                                          args)...)]() mutable -> R {
		                        return std::apply(std::move(fn), std::move(tup));
	                        });
}

/** async on a given runtime (instead of the caller's or the default). */
template <class F, class... Args> auto async(const runtime &rt, F &&f, Args &&...args)
{
	using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>;
	return detail::start<R>(rt.native_handle(),
	                        [fn = std::forward<F>(f), tup = std::make_tuple(std::forward<Args>(
	                                                          args)...)]() mutable -> R {
		                        return std::apply(std::move(fn), std::move(tup));
	                        });
}

template <class T> template <class G> auto future<T>::then(G &&g)
{
	if (!s_)
		detail::future_error(std::future_errc::no_state,
		                     "weft::future::then on an empty future");
	using Gd = std::decay_t<G>;
	constexpr bool takes_future = std::is_invocable_v<Gd, future<T>>;
	detail::state_base *pred = s_; /* moves into the lambda with its future */
	auto call = [gg = std::forward<G>(g), prev = std::move(*this)]() mutable -> decltype(auto) {
		if constexpr (takes_future) {
			return std::invoke(std::move(gg), std::move(prev));
		} else if constexpr (std::is_void_v<T>) {
			prev.get();
			return std::invoke(std::move(gg));
		} else {
			return std::invoke(std::move(gg), prev.get());
		}
	};
	using R = decltype(call());
	static_assert(!std::is_reference_v<R>, "weft::future::then: g returns a reference");
	using S = detail::task_state<R, decltype(call)>;
	weft_rt *rt = pred->rt ? pred->rt : detail::current_rt();
	S *s = S::make(std::move(call));
	if (pred->flagged) {
		/* A promise (or a continuation of one): the continuation is
		 * posted when it is ready. */
		s->init_flag();
		s->rt = rt;
		s->pred = pred;
		weft_mutex_lock(&pred->mu);
		bool now = pred->ready.load(std::memory_order_relaxed);
		if (!now)
			pred->cont = s;
		weft_mutex_unlock(&pred->mu);
		if (now)
			s->post(rt, nullptr);
	} else {
		s->post(rt, pred);
	}
	return detail::make_future<R>(s);
}

/** weft::promise<T> makes a future whose value is produced outside any
 * task (a callback, another thread): set_value / set_exception make it
 * ready once. get() on its future waits on a weft_cond (a fiber parks, a
 * thread blocks). A promise destroyed without a value makes its future
 * throw std::future_error (broken_promise) from get(). Move-only. */
template <class T> class promise
{
      public:
	/** A promise with a fresh state. */
	promise() : s_(detail::promise_state<T>::make())
	{
	}
	/** Breaks the promise if it was never set. */
	~promise()
	{
		abandon();
	}
	promise(const promise &) = delete;
	promise &operator=(const promise &) = delete;
	/** Takes o's state. */
	promise(promise &&o) noexcept : s_(o.s_), got_(o.got_), set_(o.set_)
	{
		o.s_ = nullptr;
	}
	/** Breaks this promise if unset, takes o's state. */
	promise &operator=(promise &&o) noexcept
	{
		if (this != &o) {
			abandon();
			s_ = o.s_;
			got_ = o.got_;
			set_ = o.set_;
			o.s_ = nullptr;
		}
		return *this;
	}

	/** get_future returns the future of this promise (once). */
	future<T> get_future()
	{
		if (!s_ || got_)
			detail::future_error(std::future_errc::future_already_retrieved,
			                     "weft::promise::get_future called twice");
		got_ = true;
		return detail::make_future<T>(s_);
	}
	/** set_value makes the future ready with v (T = void: no argument). */
	template <class... V> void set_value(V &&...v)
	{
		auto *s = claim();
		if constexpr (std::is_void_v<T>) {
			static_assert(sizeof...(V) == 0, "promise<void>::set_value takes no value");
		} else {
			::new (static_cast<void *>(s->val)) T(std::forward<V>(v)...);
		}
		s->has_value = true;
		detail::promise_ready(s);
	}
#if WEFT_CPP_EXCEPTIONS
	/** set_exception makes the future ready with an exception. */
	void set_exception(std::exception_ptr e)
	{
		auto *s = claim();
		s->exc = std::move(e);
		detail::promise_ready(s);
	}
#endif

      private:
	detail::promise_state<T> *claim()
	{
		if (!s_ || set_)
			detail::future_error(std::future_errc::promise_already_satisfied,
			                     "weft::promise set twice");
		set_ = true;
		return s_;
	}
	void abandon() noexcept
	{
		if (!s_)
			return;
		if (!set_) {
#if WEFT_CPP_EXCEPTIONS
			s_->exc = std::make_exception_ptr(
			        std::future_error(std::future_errc::broken_promise));
#endif
			detail::promise_ready(s_);
		}
		if (!got_)
			detail::release(s_);
		detail::release(s_);
		s_ = nullptr;
	}

	detail::promise_state<T> *s_;
	bool got_ = false;
	bool set_ = false;
};

/// @cond WEFT_DETAIL
namespace detail
{
/* Predecessors of a when_all: the futures' tasks that weft can wait for
 * (those posted); the others (promises, tasks that ran inline) are waited
 * for inside the when_all task. */
inline void when_all_post(state_base *s, weft_rt *rt, std::vector<weft_task *> &after) noexcept
{
	s->rt = rt;
	int rc = rt ? weft_post_when(rt, nullptr, &s->task, after.data(), after.size())
	            : WEFT_EINVAL;
	if (rc == 0) {
		s->posted = true;
		return;
	}
	s->run_fn(s);
}
} // namespace detail
/// @endcond

/** when_all(first, last) returns a future of the futures in [first,
 * last) (moved out of the range) that is ready when every one of them is:
 * one task posted with weft_post_when after all of theirs, so no worker
 * waits meanwhile. Each element is then ready: get() it for its value or
 * exception. Futures of a weft::promise among them are waited for inside
 * that task (a fiber parks; on threads and spawn a worker blocks until the
 * promise is set). */
template <class It, class = std::enable_if_t<!detail::is_future<It>::value>>
auto when_all(It first, It last)
{
	using Fut = typename std::iterator_traits<It>::value_type;
	static_assert(detail::is_future<Fut>::value, "weft::when_all: not a range of futures");
	std::vector<Fut> v;
	v.reserve(static_cast<std::size_t>(std::distance(first, last)));
	for (; first != last; ++first)
		v.push_back(std::move(*first));
	std::vector<weft_task *> after;
	after.reserve(v.size());
	for (Fut &f : v) {
		detail::state_base *p = detail::state_of(f);
		if (p && p->posted)
			after.push_back(&p->task);
	}
	auto call = [all = std::move(v)]() mutable {
		for (Fut &f : all)
			f.wait();
		return std::move(all);
	};
	using S = detail::task_state<std::vector<Fut>, decltype(call)>;
	S *s = S::make(std::move(call));
	detail::when_all_post(s, detail::current_rt(), after);
	return detail::make_future<std::vector<Fut>>(s);
}

/** when_all(std::move(vector)) is when_all over the whole vector. */
template <class T> future<std::vector<future<T>>> when_all(std::vector<future<T>> &&v)
{
	return when_all(v.begin(), v.end());
}

/** when_all(f1, f2, ...) returns a future of std::tuple<future<T1>,
 * future<T2>, ...>, ready when all are (as the range form). */
template <class... Fs,
          class = std::enable_if_t<(detail::is_future<std::decay_t<Fs>>::value && ...)>>
auto when_all(Fs &&...fs)
{
	std::vector<weft_task *> after;
	after.reserve(sizeof...(Fs));
	for (detail::state_base *p : {detail::state_of(fs)...})
		if (p && p->posted)
			after.push_back(&p->task);
	auto call = [all = std::make_tuple(std::move(fs)...)]() mutable {
		std::apply([](auto &...f) { (f.wait(), ...); }, all);
		return std::move(all);
	};
	using R = std::tuple<std::decay_t<Fs>...>;
	using S = detail::task_state<R, decltype(call)>;
	S *s = S::make(std::move(call));
	detail::when_all_post(s, detail::current_rt(), after);
	return detail::make_future<R>(s);
}

/* --------------------------------------------------------------- algorithms */

/// @cond WEFT_DETAIL
namespace detail
{
template <class It>
using if_random_access =
        std::enable_if_t<std::is_base_of_v<std::random_access_iterator_tag,
                                           typename std::iterator_traits<It>::iterator_category>>;

template <class Get, class F> struct for_ctx {
	Get get;
	F *f;
	first_error err;
	static void body(std::size_t lo, std::size_t hi, void *arg) noexcept
	{
		for_ctx *c = static_cast<for_ctx *>(arg);
#if WEFT_CPP_EXCEPTIONS
		if (c->err.failed())
			return;
		try {
#endif
			c->get.each(lo, hi, *c->f);
#if WEFT_CPP_EXCEPTIONS
		} catch (...) {
			c->err.capture();
		}
#endif
	}
};

template <class Get, class F> void run_for(std::size_t n, std::size_t grain, Get get, F &f)
{
	for_ctx<Get, F> c{get, &f, {}};
	weft_rt *rt = current_rt();
	if (!rt || weft_parallel_for(rt, 0, n, grain, &for_ctx<Get, F>::body, &c) != 0)
		for_ctx<Get, F>::body(0, n, &c);
	c.err.rethrow();
}

template <class T, class Get, class Op, class F> struct reduce_ctx {
	Get get;
	Op *op;
	F *f;
	std::size_t grain;
	weft_rt *rt;

	std::optional<T> fold(std::size_t lo, std::size_t hi)
	{
		if (hi - lo <= grain) {
			std::optional<T> acc(std::in_place, (*f)(get(lo)));
			for (std::size_t i = lo + 1; i < hi; i++)
				*acc = (*op)(std::move(*acc), (*f)(get(i)));
			return acc;
		}
		std::size_t mid = lo + (hi - lo) / 2;
		std::optional<T> l, r;
		auto left = [&] { l = fold(lo, mid); };
		auto right = [&] { r = fold(mid, hi); };
		fork2(rt, left, right);
		return std::optional<T>(std::in_place, (*op)(std::move(*l), std::move(*r)));
	}
};

template <class T, class Get, class Op, class F>
T run_reduce(std::size_t n, std::size_t grain, Get get, T init, Op &op, F &f)
{
	if (n == 0)
		return init;
	weft_rt *rt = current_rt();
	if (grain == 0) {
		std::size_t w = 1;
		if (rt) {
			weft_config c;
			if (weft_rt_config(rt, &c) == 0 && c.workers > 0)
				w = static_cast<std::size_t>(c.workers);
		}
		grain = (n + 8 * w - 1) / (8 * w);
	}
	reduce_ctx<T, Get, Op, F> c{get, &op, &f, grain, rt};
	std::optional<T> total = c.fold(0, n);
	return op(std::move(init), std::move(*total));
}

/* How a loop reaches item i of its range: get(i) for the reduction, and
 * each(lo, hi, f), the loop of a parallel_for chunk, which steps the index
 * or the iterator itself as a hand-written loop does (an offset added to
 * every index cost 1.2-1.5x on a loop of a[i] = a[i] * 3 + 1). */
template <class I> struct index_get {
	I first;
	I operator()(std::size_t i) const noexcept
	{
		return static_cast<I>(first + static_cast<I>(i));
	}
	template <class F> void each(std::size_t lo, std::size_t hi, F &f) const
	{
		I end = (*this)(hi);
		for (I i = (*this)(lo); i != end; ++i)
			f(i);
	}
};
template <class It> struct iter_get {
	It first;
	decltype(auto) operator()(std::size_t i) const
	{
		return first[static_cast<typename std::iterator_traits<It>::difference_type>(i)];
	}
	template <class F> void each(std::size_t lo, std::size_t hi, F &f) const
	{
		using D = typename std::iterator_traits<It>::difference_type;
		It end = first + static_cast<D>(hi);
		for (It it = first + static_cast<D>(lo); it != end; ++it)
			f(*it);
	}
};
} // namespace detail
/// @endcond

/** parallel_for(first, last, f[, grain]) over indices: calls f(i) for
 * every i in [first, last) on the runtime's workers and the calling thread
 * (weft_parallel_for: recursive halving; grain 0 adapts, a grain > 0 is
 * the most iterations one chunk holds). first and last may be of different
 * integer types (0 and v.size()): i has their common type. Returns when
 * every call returned; an exception stops chunks not yet started and the
 * first one is rethrown. With no runtime it is a plain loop. */
template <class I1, class I2, class F,
          class = std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>>>
void parallel_for(I1 first, I2 last, F &&f, std::size_t grain = 0)
{
	using I = std::common_type_t<I1, I2>;
	I a = static_cast<I>(first), b = static_cast<I>(last);
	if (!(a < b))
		return;
	detail::run_for(static_cast<std::size_t>(b - a), grain, detail::index_get<I>{a}, f);
}

/** parallel_for(first, last, f[, grain]) over random-access iterators
 * (v.begin(), v.end()): calls f(*it) for every element, as std::for_each
 * does, in parallel (see the index form). */
template <class It, class F, class = detail::if_random_access<It>, class = void>
void parallel_for(It first, It last, F &&f, std::size_t grain = 0)
{
	auto n = last - first;
	if (n <= 0)
		return;
	detail::run_for(static_cast<std::size_t>(n), grain, detail::iter_get<It>{first}, f);
}

/** parallel_reduce(first, last, init, op, f[, grain]) returns
 * op(init, f(x0) op f(x1) op ... ), as std::transform_reduce does, where the
 * x are the indices in [first, last) or the elements of a random-access
 * range, folded in parallel by recursive halving (weft_fork_join) down to
 * chunks of grain (0: about eight chunks per worker). op need only be
 * associative: operands keep their order. Deterministic: the grouping
 * depends only on the range, the grain and the worker count, so a
 * floating-point sum gives the same bits on every run. An empty range
 * returns init. The result type is that of init; it may be any movable
 * type. */
template <class I1, class I2, class T, class Op, class F,
          class = std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>>>
T parallel_reduce(I1 first, I2 last, T init, Op op, F f, std::size_t grain = 0)
{
	using I = std::common_type_t<I1, I2>;
	I a = static_cast<I>(first), b = static_cast<I>(last);
	std::size_t n = a < b ? static_cast<std::size_t>(b - a) : 0;
	return detail::run_reduce<T>(n, grain, detail::index_get<I>{a}, std::move(init), op, f);
}

/** parallel_reduce over a random-access range: f is called with each
 * element (see the index form). */
template <class It, class T, class Op, class F, class = detail::if_random_access<It>, class = void>
T parallel_reduce(It first, It last, T init, Op op, F f, std::size_t grain = 0)
{
	auto n = last - first;
	return detail::run_reduce<T>(n > 0 ? static_cast<std::size_t>(n) : 0, grain,
	                             detail::iter_get<It>{first}, std::move(init), op, f);
}

/** parallel_invoke(f1, f2, ...) calls every fi(), possibly at the same
 * time, and returns when all returned: weft_fork_join, the cheapest path
 * weft has (nothing allocated; an fi no other worker took runs on the
 * caller's stack as a plain call), nested for more than two. Recursion is
 * the intended use (a fib or a quicksort with parallel_invoke at every
 * level). The first exception thrown (in argument order) is rethrown after
 * all returned. A small trivially copyable fi (a lambda capturing a few
 * references) is called through a copy, so, as with oneTBB's, state that
 * a call leaves in the callable itself is not seen afterwards. */
template <class F1, class F2, class... Fs> void parallel_invoke(F1 &&f1, F2 &&f2, Fs &&...fs)
{
	if constexpr (sizeof...(Fs) == 0) {
		detail::fork2(nullptr, f1, f2);
	} else {
		auto rest = [&] { parallel_invoke(std::forward<F2>(f2), std::forward<Fs>(fs)...); };
		detail::fork2(nullptr, f1, rest);
	}
}

/* ---------------------------------------------------------- synchronisation */

/** weft::mutex: weft_mutex as a standard Lockable (and TimedLockable):
 * std::lock_guard, std::unique_lock and std::scoped_lock work with it.
 * Waiting parks a fiber and blocks a kernel thread (see weft/sync.h). Not
 * recursive. */
class mutex
{
      public:
	/** An unlocked mutex. */
	mutex() noexcept
	{
		weft_mutex_init(&m_);
	}
	mutex(const mutex &) = delete;
	mutex &operator=(const mutex &) = delete;
	/** Takes the mutex, waiting while another holder has it. */
	void lock() noexcept
	{
		weft_mutex_lock(&m_);
	}
	/** Takes the mutex if free. */
	bool try_lock() noexcept
	{
		return weft_mutex_trylock(&m_) == 0;
	}
	/** Takes the mutex, waiting at most until tp. */
	template <class Clock, class Dur>
	bool try_lock_until(const std::chrono::time_point<Clock, Dur> &tp) noexcept
	{
		return weft_mutex_lock_until(&m_, detail::deadline_ns(tp)) == 0;
	}
	/** Takes the mutex, waiting at most d. */
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &d) noexcept
	{
		return weft_mutex_lock_until(&m_, weft_clock_ns() + detail::timeout_ns(d)) == 0;
	}
	/** Frees the mutex. */
	void unlock() noexcept
	{
		weft_mutex_unlock(&m_);
	}
	/** The C mutex. */
	weft_mutex *native_handle() noexcept
	{
		return &m_;
	}

      private:
	weft_mutex m_;
};

/** weft::condition_variable: weft_cond with the interface of
 * std::condition_variable, over std::unique_lock<weft::mutex>. As with any
 * condition variable, wait in a loop or with a predicate. */
class condition_variable
{
      public:
	/** A condition variable nobody waits on. */
	condition_variable() noexcept
	{
		weft_cond_init(&c_);
	}
	condition_variable(const condition_variable &) = delete;
	condition_variable &operator=(const condition_variable &) = delete;
	/** Wakes the longest waiter. */
	void notify_one() noexcept
	{
		weft_cond_signal(&c_);
	}
	/** Wakes every waiter. */
	void notify_all() noexcept
	{
		weft_cond_broadcast(&c_);
	}
	/** Releases lk's mutex, waits for a notify, takes it again. */
	void wait(std::unique_lock<mutex> &lk) noexcept
	{
		weft_cond_wait(&c_, lk.mutex()->native_handle());
	}
	/** Waits until pred() holds (checked under the lock). */
	template <class Pred> void wait(std::unique_lock<mutex> &lk, Pred pred)
	{
		while (!pred())
			wait(lk);
	}
	/** Waits for a notify until tp: std::cv_status::timeout when none came. */
	template <class Clock, class Dur>
	std::cv_status wait_until(std::unique_lock<mutex> &lk,
	                          const std::chrono::time_point<Clock, Dur> &tp) noexcept
	{
		return weft_cond_wait_until(&c_, lk.mutex()->native_handle(),
		                            detail::deadline_ns(tp)) == WEFT_ETIMEDOUT
		               ? std::cv_status::timeout
		               : std::cv_status::no_timeout;
	}
	/** Waits until pred() holds or tp passes; returns pred(). */
	template <class Clock, class Dur, class Pred>
	bool wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Dur> &tp,
	                Pred pred)
	{
		std::int64_t d = detail::deadline_ns(tp);
		while (!pred())
			if (weft_cond_wait_until(&c_, lk.mutex()->native_handle(), d) ==
			    WEFT_ETIMEDOUT)
				return pred();
		return true;
	}
	/** wait_until(lk, now + d). */
	template <class Rep, class Period>
	std::cv_status wait_for(std::unique_lock<mutex> &lk,
	                        const std::chrono::duration<Rep, Period> &d) noexcept
	{
		return weft_cond_wait_until(&c_, lk.mutex()->native_handle(),
		                            weft_clock_ns() + detail::timeout_ns(d)) ==
		                       WEFT_ETIMEDOUT
		               ? std::cv_status::timeout
		               : std::cv_status::no_timeout;
	}
	/** wait_until(lk, now + d, pred). */
	template <class Rep, class Period, class Pred>
	bool wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &d,
	              Pred pred)
	{
		std::int64_t dl = weft_clock_ns() + detail::timeout_ns(d);
		while (!pred())
			if (weft_cond_wait_until(&c_, lk.mutex()->native_handle(), dl) ==
			    WEFT_ETIMEDOUT)
				return pred();
		return true;
	}
	/** The C condition variable. */
	weft_cond *native_handle() noexcept
	{
		return &c_;
	}

      private:
	weft_cond c_;
};

/** weft::semaphore: a counting semaphore (weft_sem), shaped as
 * std::counting_semaphore. */
class semaphore
{
      public:
	/** A semaphore holding count units (count >= 0). */
	explicit semaphore(long count = 0) noexcept
	{
		weft_sem_init(&s_, count < 0 ? 0 : count);
	}
	semaphore(const semaphore &) = delete;
	semaphore &operator=(const semaphore &) = delete;
	/** Takes a unit, waiting while there is none. */
	void acquire() noexcept
	{
		weft_sem_wait(&s_);
	}
	/** Takes a unit if there is one. */
	bool try_acquire() noexcept
	{
		return weft_sem_trywait(&s_) == 0;
	}
	/** Takes a unit, waiting at most until tp. */
	template <class Clock, class Dur>
	bool try_acquire_until(const std::chrono::time_point<Clock, Dur> &tp) noexcept
	{
		return weft_sem_wait_until(&s_, detail::deadline_ns(tp)) == 0;
	}
	/** Takes a unit, waiting at most d. */
	template <class Rep, class Period>
	bool try_acquire_for(const std::chrono::duration<Rep, Period> &d) noexcept
	{
		return weft_sem_wait_until(&s_, weft_clock_ns() + detail::timeout_ns(d)) == 0;
	}
	/** Adds n units, waking as many waiters. */
	void release(long n = 1) noexcept
	{
		while (n-- > 0)
			weft_sem_post(&s_);
	}
	/** The units there now (a snapshot). */
	long value() const noexcept
	{
		return weft_sem_value(&s_);
	}

      private:
	weft_sem s_;
};

/** weft::barrier: parties callers meet at arrive_and_wait, round after
 * round (weft_barrier). */
class barrier
{
      public:
	/** A barrier for parties callers (parties >= 1). */
	explicit barrier(unsigned parties) noexcept
	{
		weft_barrier_init(&b_, parties ? parties : 1);
	}
	barrier(const barrier &) = delete;
	barrier &operator=(const barrier &) = delete;
	/** Waits until parties callers arrived; true for exactly one caller
	 * per round (the last to arrive). */
	bool arrive_and_wait() noexcept
	{
		return weft_barrier_wait(&b_) == WEFT_BARRIER_LAST;
	}

      private:
	weft_barrier b_;
};

/** weft::channel<T>: a bounded FIFO channel of T (weft_chan) between tasks
 * and threads; capacity 0 makes every send meet a receive. Values are
 * moved through it, so T may be move-only (std::unique_ptr,
 * std::string, ...). A trivially copyable T travels in the channel's
 * buffer; any other T in a node from weft's per-thread pool. close() makes
 * later sends fail; receivers drain what is buffered, then get nothing.
 * The destructor closes the channel and destroys values still in it; no
 * one may be waiting on it then. */
template <class T> class channel
{
	static constexpr bool inline_ = std::is_trivially_copyable_v<T>;
	struct box {
		T v;
	};
	using slot = std::conditional_t<inline_, T, box *>;

      public:
	/** A channel with room for capacity values. */
	explicit channel(std::size_t capacity = 0)
	    : buf_(capacity ? ::operator new(capacity * sizeof(slot)) : nullptr)
	{
		weft_chan_init(&c_, sizeof(slot), capacity, buf_);
	}
	channel(const channel &) = delete;
	channel &operator=(const channel &) = delete;
	/** Closes and destroys what is left in the channel. */
	~channel()
	{
		weft_chan_close(&c_);
		alignas(slot) unsigned char raw[sizeof(slot)];
		while (weft_chan_recv(&c_, raw) == 0)
			drop(*std::launder(reinterpret_cast<slot *>(raw)));
		::operator delete(buf_);
	}

	/** send moves v into the channel, waiting while it is full. false
	 * when the channel is closed: then v keeps its value. */
	bool send(T &&v)
	{
		return send_impl(v, INT64_MIN);
	}
	/** send a copy of v. */
	bool send(const T &v)
	{
		T copy(v);
		return send_impl(copy, INT64_MIN);
	}
	/** send with a deadline: false when closed or still full at tp (v
	 * then keeps its value). */
	template <class Clock, class Dur>
	bool send_until(T &&v, const std::chrono::time_point<Clock, Dur> &tp)
	{
		return send_impl(v, detail::deadline_ns(tp));
	}
	/** send_until(v, now + d). */
	template <class Rep, class Period>
	bool send_for(T &&v, const std::chrono::duration<Rep, Period> &d)
	{
		return send_impl(v, weft_clock_ns() + detail::timeout_ns(d));
	}

	/** recv takes the oldest value, waiting while the channel is empty;
	 * std::nullopt once it is closed and empty. */
	std::optional<T> recv()
	{
		return recv_impl(INT64_MIN);
	}
	/** recv with a deadline: std::nullopt also when still empty at tp. */
	template <class Clock, class Dur>
	std::optional<T> recv_until(const std::chrono::time_point<Clock, Dur> &tp)
	{
		return recv_impl(detail::deadline_ns(tp));
	}
	/** recv_until(now + d). */
	template <class Rep, class Period>
	std::optional<T> recv_for(const std::chrono::duration<Rep, Period> &d)
	{
		return recv_impl(weft_clock_ns() + detail::timeout_ns(d));
	}
	/** close: later sends fail, waiters wake; false if already closed. */
	bool close() noexcept
	{
		return weft_chan_close(&c_) == 0;
	}

      private:
	static void drop(slot &s) noexcept
	{
		if constexpr (!inline_) {
			s->~box();
			detail::pool_free(s, sizeof(box));
		} else {
			(void)s;
		}
	}
	bool send_impl(T &v, std::int64_t deadline)
	{
		if constexpr (inline_) {
			int rc = deadline == INT64_MIN ? weft_chan_send(&c_, &v)
			                               : weft_chan_send_until(&c_, &v, deadline);
			return rc == 0;
		} else {
			box *b = detail::pool_new_raw<box>();
#if WEFT_CPP_EXCEPTIONS
			try {
				::new (static_cast<void *>(b)) box{std::move(v)};
			} catch (...) {
				detail::pool_free(b, sizeof(box)); /* a move that throws: no node kept */
				throw;
			}
#else
			::new (static_cast<void *>(b)) box{std::move(v)};
#endif
			int rc = deadline == INT64_MIN ? weft_chan_send(&c_, &b)
			                               : weft_chan_send_until(&c_, &b, deadline);
			if (rc == 0)
				return true;
			dropper d{b}; /* freed also when the move back throws */
			v = std::move(b->v);
			return false;
		}
	}
	/* Drops a boxed slot when it leaves scope, however it leaves. */
	struct dropper {
		slot s;
		~dropper()
		{
			drop(s);
		}
	};
	std::optional<T> recv_impl(std::int64_t deadline)
	{
		alignas(slot) unsigned char raw[sizeof(slot)];
		int rc = deadline == INT64_MIN ? weft_chan_recv(&c_, raw)
		                               : weft_chan_recv_until(&c_, raw, deadline);
		if (rc != 0)
			return std::nullopt;
		slot &s = *std::launder(reinterpret_cast<slot *>(raw));
		if constexpr (inline_) {
			return std::optional<T>(std::move(s));
		} else {
			dropper d{s}; /* freed also when the move out throws */
			return std::optional<T>(std::in_place, std::move(s->v));
		}
	}

	weft_chan c_;
	void *buf_;
};

/** Calls for the running task (or thread, outside tasks). */
namespace this_task
{
/** yield lets other work run before the caller continues (weft_yield). */
inline void yield() noexcept
{
	weft_yield();
}
/** sleep_for waits at least d: a fiber parks on its worker's timer, a
 * thread sleeps (weft_sleep_ns). */
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period> &d) noexcept
{
	weft_sleep_ns(detail::timeout_ns(d));
}
/** sleep_until waits until tp has passed. */
template <class Clock, class Dur>
void sleep_until(const std::chrono::time_point<Clock, Dur> &tp) noexcept
{
	std::int64_t d = detail::deadline_ns(tp) - weft_clock_ns();
	if (d > 0)
		weft_sleep_ns(d);
}
/** cancel_requested: whether the running task's cancellation was asked
 * (its group's cancel()); false outside tasks. */
inline bool cancel_requested() noexcept
{
	return weft_cancel_requested();
}
/** worker_index: the index of the worker running the caller, or -1. */
inline int worker_index() noexcept
{
	return weft_worker_index();
}
} // namespace this_task

} // namespace weft

#include "cpp/algorithm.hpp" // parallel_sort, parallel_scan, combinable<T>
#include "cpp/prims.hpp" /* shared_mutex, latch, call_once, select, task_local, periodic */

#endif
