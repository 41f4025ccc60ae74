/* weft/cpp/prims.hpp: the C++ shapes of weft_rwlock, weft_latch, weft_once,
 * weft_chan_select, task-local storage and weft_post_every. Included by
 * weft/weft.hpp (its last line); including it alone includes weft.hpp.
 *
 *   weft::shared_mutex       std::shared_timed_mutex's interface (works with
 *                            std::shared_lock and std::unique_lock)
 *   weft::latch              C++20's std::latch
 *   weft::once_flag,
 *   weft::call_once          std::once_flag and std::call_once
 *   weft::select, select_for, select_until, try_select
 *                            Go's select over weft::channel<T> cases
 *                            (weft::on_recv, weft::on_send)
 *   weft::task_local<T>      a T per task (weft/local.h)
 *   weft::periodic           a callable run every period (weft/periodic.h)
 *
 * Each waits as its C primitive does: a fiber parks, a kernel thread
 * blocks. */
#ifndef WEFT_CPP_PRIMS_HPP
#define WEFT_CPP_PRIMS_HPP

#include "../weft.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace weft
{

/* ---------------------------------------------------------- shared_mutex */

/** weft::shared_mutex: weft_rwlock with std::shared_timed_mutex's
 * interface, so std::shared_lock (readers) and std::unique_lock or
 * std::lock_guard (writers) work with it. Barging with a starvation rule:
 * neither readers nor writers starve (weft/sync.h). Not recursive. */
class shared_mutex
{
      public:
	/** An unlocked shared_mutex. */
	shared_mutex() noexcept
	{
		weft_rwlock_init(&l_);
	}
	shared_mutex(const shared_mutex &) = delete;
	shared_mutex &operator=(const shared_mutex &) = delete;

	/** Takes it exclusively, waiting for every holder to leave. */
	void lock() noexcept
	{
		weft_rwlock_wrlock(&l_);
	}
	/** Takes it exclusively if nobody holds it. */
	bool try_lock() noexcept
	{
		return weft_rwlock_trywrlock(&l_) == 0;
	}
	/** Takes it exclusively, waiting at most until tp. */
	template <class Clock, class Dur>
	bool try_lock_until(const std::chrono::time_point<Clock, Dur> &tp) noexcept
	{
		return weft_rwlock_wrlock_until(&l_, detail::deadline_ns(tp)) == 0;
	}
	/** Takes it exclusively, waiting at most d. */
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &d) noexcept
	{
		return weft_rwlock_wrlock_until(&l_, weft_clock_ns() + detail::timeout_ns(d)) == 0;
	}
	/** Releases the exclusive hold. */
	void unlock() noexcept
	{
		weft_rwlock_unlock(&l_);
	}
	/** Takes it shared, waiting while a writer holds it. */
	void lock_shared() noexcept
	{
		weft_rwlock_rdlock(&l_);
	}
	/** Takes it shared if that needs no wait. */
	bool try_lock_shared() noexcept
	{
		return weft_rwlock_tryrdlock(&l_) == 0;
	}
	/** Takes it shared, waiting at most until tp. */
	template <class Clock, class Dur>
	bool try_lock_shared_until(const std::chrono::time_point<Clock, Dur> &tp) noexcept
	{
		return weft_rwlock_rdlock_until(&l_, detail::deadline_ns(tp)) == 0;
	}
	/** Takes it shared, waiting at most d. */
	template <class Rep, class Period>
	bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) noexcept
	{
		return weft_rwlock_rdlock_until(&l_, weft_clock_ns() + detail::timeout_ns(d)) == 0;
	}
	/** Releases a shared hold. */
	void unlock_shared() noexcept
	{
		weft_rwlock_unlock(&l_);
	}
	/** The C lock. */
	weft_rwlock *native_handle() noexcept
	{
		return &l_;
	}

      private:
	weft_rwlock l_;
};

/* ---------------------------------------------------------- latch */

/** weft::latch: std::latch (C++20) over weft_latch: a single-use count
 * down that waiters block on until it reaches zero. */
class latch
{
      public:
	/** A latch that opens after expected count-downs. */
	explicit latch(std::ptrdiff_t expected) noexcept
	{
		weft_latch_init(&l_, expected > 0 ? static_cast<std::size_t>(expected) : 0);
	}
	latch(const latch &) = delete;
	latch &operator=(const latch &) = delete;
	/** Lowers the count by n (more than what is left is ignored, as the
	 * C call refuses it). */
	void count_down(std::ptrdiff_t n = 1) noexcept
	{
		weft_latch_count_down(&l_, static_cast<std::size_t>(n));
	}
	/** Whether the count reached zero. */
	bool try_wait() const noexcept
	{
		return weft_latch_try_wait(&l_) == 0;
	}
	/** Waits until the count reaches zero. */
	void wait() const noexcept
	{
		weft_latch_wait(const_cast<weft_latch *>(&l_));
	}
	/** count_down(n), then wait(). */
	void arrive_and_wait(std::ptrdiff_t n = 1) noexcept
	{
		weft_latch_arrive_and_wait(&l_, static_cast<std::size_t>(n));
	}
	/** Waits at most d: whether the count reached zero (a weft extension). */
	template <class Rep, class Period>
	bool wait_for(const std::chrono::duration<Rep, Period> &d) const noexcept
	{
		return weft_latch_wait_until(const_cast<weft_latch *>(&l_),
		                             weft_clock_ns() + detail::timeout_ns(d)) == 0;
	}
	/** The largest count the latch takes. */
	static constexpr std::ptrdiff_t max() noexcept
	{
		return PTRDIFF_MAX;
	}

      private:
	weft_latch l_;
};

/* ---------------------------------------------------------- call_once */

/** weft::once_flag: std::once_flag over weft_once. */
class once_flag
{
      public:
	/** A flag whose function has not run. */
	constexpr once_flag() noexcept : o_{}
	{
	}
	once_flag(const once_flag &) = delete;
	once_flag &operator=(const once_flag &) = delete;
	/** The C once. */
	weft_once *native_handle() noexcept
	{
		return &o_;
	}

      private:
	weft_once o_;
};

/** weft::call_once: runs f(args...) once per flag whoever calls, as
 * std::call_once; callers that come meanwhile wait (a fiber parks). One
 * difference: an exception thrown by f propagates to the caller that ran
 * it, but the flag counts as done (std::call_once would let the next caller
 * try again). */
template <class F, class... Args> void call_once(once_flag &flag, F &&f, Args &&...args)
{
	auto call = [&] { std::invoke(std::forward<F>(f), std::forward<Args>(args)...); };
	struct ctx {
		decltype(call) *fn;
#if WEFT_CPP_EXCEPTIONS
		std::exception_ptr e{};
#endif
	} c;
	c.fn = &call;
	weft_once_call(
	        flag.native_handle(),
	        [](void *p) {
		        ctx *x = static_cast<ctx *>(p);
#if WEFT_CPP_EXCEPTIONS
		        try {
			        (*x->fn)();
		        } catch (...) {
			        x->e = std::current_exception();
		        }
#else
		        (*x->fn)();
#endif
	        },
	        &c);
#if WEFT_CPP_EXCEPTIONS
	if (c.e)
		std::rethrow_exception(c.e);
#endif
}

/* ---------------------------------------------------------- select */

namespace detail
{
/* weft::channel<T> starts with its weft_chan (a standard-layout class whose
 * first member is the C channel): the address of one is the address of
 * the other. */
template <class T> weft_chan *chan_of(channel<T> &ch) noexcept
{
	static_assert(std::is_standard_layout_v<channel<T>>, "channel<T> starts with its weft_chan");
	return reinterpret_cast<weft_chan *>(&ch);
}

template <class T, class F> struct recv_case {
	channel<T> &ch;
	F f;
	T slot{};
	void fill(weft_chan_case &c) noexcept
	{
		c = weft_chan_case{chan_of(ch), WEFT_CHAN_RECV, &slot, 0};
	}
	void done(const weft_chan_case &c)
	{
		f(c.result == 0 ? std::optional<T>(std::move(slot)) : std::nullopt);
	}
};

template <class T, class F> struct send_case {
	channel<T> &ch;
	T value;
	F f;
	void fill(weft_chan_case &c) noexcept
	{
		c = weft_chan_case{chan_of(ch), WEFT_CHAN_SEND, &value, 0};
	}
	void done(const weft_chan_case &c)
	{
		f(c.result == 0);
	}
};

template <class Tuple, std::size_t... I>
int select_impl(Tuple &cases, std::int64_t deadline, std::index_sequence<I...>)
{
	weft_chan_case c[sizeof...(I)];
	(std::get<I>(cases).fill(c[I]), ...);
	int k = weft_chan_select(c, sizeof...(I), deadline);
	if (k >= 0)
		((k == static_cast<int>(I) ? std::get<I>(cases).done(c[I]) : void()), ...);
	return k;
}

template <class... Cases> int select_at(std::int64_t deadline, Cases &&...cases)
{
	auto t = std::forward_as_tuple(cases...);
	return select_impl(t, deadline, std::index_sequence_for<Cases...>{});
}
} // namespace detail

/** weft::on_recv: a select case receiving from ch; f(std::optional<T>)
 * runs if it is the case done (std::nullopt: ch is closed and empty).
 * T must be trivially copyable (values travel in the channel's buffer). */
template <class T, class F> detail::recv_case<T, std::decay_t<F>> on_recv(channel<T> &ch, F &&f)
{
	static_assert(std::is_trivially_copyable_v<T>,
	              "weft::select moves trivially copyable values only");
	return {ch, std::forward<F>(f)};
}

/** weft::on_send: a select case sending v on ch; f(bool) runs if it is the
 * case done (false: ch is closed, nothing was sent). T must be trivially
 * copyable. */
template <class T, class F>
detail::send_case<T, std::decay_t<F>> on_send(channel<T> &ch, T v, F &&f)
{
	static_assert(std::is_trivially_copyable_v<T>,
	              "weft::select moves trivially copyable values only");
	return {ch, std::move(v), std::forward<F>(f)};
}

/** weft::select: waits until one of the cases can go, does it and runs
 * its callable; returns the case's index. Among several ready cases the
 * one done is chosen at random (weft_chan_select). Each channel at most
 * once per select. */
template <class... Cases> std::size_t select(Cases &&...cases)
{
	return static_cast<std::size_t>(detail::select_at(INT64_MAX, cases...));
}

/** weft::try_select: select without waiting: the index of the case done,
 * or std::nullopt when none was ready (Go's select with a default). */
template <class... Cases> std::optional<std::size_t> try_select(Cases &&...cases)
{
	int k = detail::select_at(0, cases...);
	return k >= 0 ? std::optional<std::size_t>(static_cast<std::size_t>(k)) : std::nullopt;
}

/** weft::select_for: select waiting at most d; std::nullopt on timeout. */
template <class Rep, class Period, class... Cases>
std::optional<std::size_t> select_for(const std::chrono::duration<Rep, Period> &d,
                                      Cases &&...cases)
{
	int k = detail::select_at(weft_clock_ns() + detail::timeout_ns(d), cases...);
	return k >= 0 ? std::optional<std::size_t>(static_cast<std::size_t>(k)) : std::nullopt;
}

/** weft::select_until: select waiting at most until tp. */
template <class Clock, class Dur, class... Cases>
std::optional<std::size_t> select_until(const std::chrono::time_point<Clock, Dur> &tp,
                                        Cases &&...cases)
{
	int k = detail::select_at(detail::deadline_ns(tp), cases...);
	return k >= 0 ? std::optional<std::size_t>(static_cast<std::size_t>(k)) : std::nullopt;
}

/* ---------------------------------------------------------- task_local */

/** weft::task_local<T>: a T per task (weft/local.h): get() is the running
 * task's (the thread's, outside tasks), made with T{} on first use and
 * destroyed when the task ends; it follows the task across parks and
 * workers. Up to WEFT_TLS_KEYS_MAX task_local objects (with the C keys) at
 * once; a task_local must outlive the tasks that use it. */
template <class T> class task_local
{
      public:
	/** A key with no value in any task. Without a key left, get()
	 * returns nullptr (valid() is false). */
	task_local() noexcept : ok_(weft_tls_key_create(&k_, destroy) == 0)
	{
	}
	task_local(const task_local &) = delete;
	task_local &operator=(const task_local &) = delete;
	/** Retires the key (values still set are not destroyed: let the
	 * tasks end first). */
	~task_local()
	{
		if (ok_)
			weft_tls_key_delete(k_);
	}
	/** Whether a key could be made. */
	bool valid() const noexcept
	{
		return ok_;
	}
	/** The running task's value, made with T{} if it has none (nullptr
	 * when no key or no memory). */
	T *get()
	{
		if (!ok_)
			return nullptr;
		T *v = static_cast<T *>(weft_tls_get(k_));
		if (v)
			return v;
		v = new T{};
		if (weft_tls_set(k_, v) != 0) {
			delete v;
			return nullptr;
		}
		return v;
	}
	/** *get(). */
	T &operator*()
	{
		return *get();
	}
	/** get(). */
	T *operator->()
	{
		return get();
	}
	/** Whether the running task has a value yet. */
	bool has_value() const noexcept
	{
		return ok_ && weft_tls_get(k_) != nullptr;
	}
	/** Destroys the running task's value now (the next get() makes a
	 * fresh one). */
	void reset() noexcept
	{
		if (!ok_)
			return;
		T *v = static_cast<T *>(weft_tls_get(k_));
		weft_tls_set(k_, nullptr);
		delete v;
	}

      private:
	static void destroy(void *v)
	{
		delete static_cast<T *>(v);
	}
	weft_tls_key k_{};
	bool ok_;
};

/* ---------------------------------------------------------- periodic */

/** What weft::periodic does after a run overran the next deadline. */
enum class overrun {
	skip = WEFT_EVERY_SKIP,        /**< skip the periods missed */
	catch_up = WEFT_EVERY_CATCH_UP /**< run once per period missed, back to back */
};

/** weft::periodic: owns a callable run every period on a runtime
 * (weft_post_every), the first run one period from now, until cancel() or
 * destruction (which cancels and waits for a run in progress). Runs never
 * overlap; deadlines are start + k * period (no drift). Not movable: the
 * runs refer to it. */
class periodic
{
      public:
	/** Runs f() every period on the runtime the caller's task runs on
	 * (or the default runtime); started() says whether it could start. */
	template <class Rep, class Period, class F>
	periodic(const std::chrono::duration<Rep, Period> &period, F &&f, overrun o = overrun::skip)
	    : periodic(detail::current_rt(), period, std::forward<F>(f), o)
	{
	}
	/** Runs f() every period on rt. */
	template <class Rep, class Period, class F>
	periodic(const runtime &rt, const std::chrono::duration<Rep, Period> &period, F &&f,
	         overrun o = overrun::skip)
	    : periodic(rt.native_handle(), period, std::forward<F>(f), o)
	{
	}
	/** Runs f() every period on the C runtime rt. */
	template <class Rep, class Period, class F>
	periodic(weft_rt *rt, const std::chrono::duration<Rep, Period> &period, F &&f,
	         overrun o = overrun::skip)
	    : fn_(new holder<std::decay_t<F>>(std::forward<F>(f)))
	{
		std::int64_t ns = detail::timeout_ns(period);
		rc_ = rt ? weft_post_every(rt, &p_, trampoline, fn_.get(), weft_clock_ns() + ns,
		                           ns > 0 ? ns : 1, static_cast<unsigned>(o))
		         : WEFT_EINVAL;
	}
	periodic(const periodic &) = delete;
	periodic &operator=(const periodic &) = delete;
	/** Cancels and waits for a run in progress (unless called from the
	 * callable itself: destroy it elsewhere). */
	~periodic()
	{
		cancel();
	}
	/** Whether the first run was posted (0 from weft_post_every). */
	bool started() const noexcept
	{
		return rc_ == 0;
	}
	/** Stops it: no run starts after this returns; a run in progress is
	 * waited for, unless cancel() is called from the callable itself. */
	void cancel() noexcept
	{
		if (rc_ == 0)
			weft_periodic_cancel(&p_);
	}
	/** Runs that returned so far. */
	std::uint64_t runs() const noexcept
	{
		return weft_periodic_runs(&p_);
	}
	/** Periods skipped after overruns (overrun::skip). */
	std::uint64_t skipped() const noexcept
	{
		return weft_periodic_skipped(&p_);
	}
	/** The C periodic task. */
	weft_periodic *native_handle() noexcept
	{
		return &p_;
	}

      private:
	struct holder_base {
		virtual ~holder_base() = default;
		virtual void run() = 0;
	};
	template <class F> struct holder final : holder_base {
		template <class G> explicit holder(G &&g) : f(std::forward<G>(g))
		{
		}
		void run() override
		{
#if WEFT_CPP_EXCEPTIONS
			try {
				f();
			} catch (...) {
				std::terminate(); /* a periodic run has no one to rethrow to */
			}
#else
			f();
#endif
		}
		F f;
	};
	static void trampoline(void *arg)
	{
		static_cast<holder_base *>(arg)->run();
	}
	std::unique_ptr<holder_base> fn_;
	weft_periodic p_{};
	int rc_ = WEFT_EINVAL;
};

} // namespace weft

#endif
