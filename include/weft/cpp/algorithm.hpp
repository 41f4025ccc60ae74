/** @file
 * weft::parallel_sort, weft::parallel_scan (inclusive and exclusive) and
 * weft::combinable<T>: the C++ shapes of weft/algo.h and
 * weft/combinable.h. Included by weft.hpp (its last line); not meant to be
 * included alone.
 *
 * Like the rest of the layer, they run on the runtime of the calling task,
 * else the first weft::runtime alive, and as plain sequential code when
 * there is none. */
#ifndef WEFT_CPP_ALGORITHM_HPP
#define WEFT_CPP_ALGORITHM_HPP

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft
{

/// @cond WEFT_DETAIL
namespace detail
{

/* The weft_type of a value type the radix sort takes (4- and 8-byte
 * integers, float, double), or 0. */
template <class T> constexpr weft_type radix_type() noexcept
{
	if constexpr (std::is_floating_point_v<T> && sizeof(T) == 4)
		return WEFT_TYPE_F32;
	else if constexpr (std::is_floating_point_v<T> && sizeof(T) == 8)
		return WEFT_TYPE_F64;
	else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) == 4)
		return std::is_signed_v<T> ? WEFT_TYPE_I32 : WEFT_TYPE_U32;
	else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) == 8)
		return std::is_signed_v<T> ? WEFT_TYPE_I64 : WEFT_TYPE_U64;
	else
		return static_cast<weft_type>(0);
}

/* Iterators whose elements are contiguous in memory (C++17 has no concept
 * for it): pointers and the iterators of vector, array and string. */
template <class It, class T = typename std::iterator_traits<It>::value_type>
constexpr bool contiguous_v =
        std::is_pointer_v<It> || std::is_same_v<It, typename std::vector<T>::iterator>;

/* Whether comp is the natural order of T, for which the radix sort gives a
 * valid answer: std::less<T> or std::less<>. */
template <class T, class C>
constexpr bool natural_order_v = std::is_same_v<C, std::less<T>> || std::is_same_v<C, std::less<>>;

/* The comparison path: a parallel quicksort (three-way partition around
 * the median of three, both sides forked), std::sort below a cut-off or
 * past a depth limit (so the worst case stays n log n). Not stable, as
 * std::sort and tbb::parallel_sort are not. */
template <class It, class C> struct quicksort {
	C *comp;
	weft_rt *rt;
	std::ptrdiff_t cutoff;

	void operator()(It first, It last, int depth) const
	{
		auto n = last - first;
		if (n <= cutoff || depth <= 0) {
			std::sort(first, last, *comp);
			return;
		}
		It mid = first + n / 2, back = last - 1;
		/* Median of three to *first. */
		if ((*comp)(*mid, *first))
			std::iter_swap(mid, first);
		if ((*comp)(*back, *mid)) {
			std::iter_swap(back, mid);
			if ((*comp)(*mid, *first))
				std::iter_swap(mid, first);
		}
		std::iter_swap(first, mid);
		auto &pivot = *first;
		It lt = std::partition(first + 1, last, [&](const auto &x) { return (*comp)(x, pivot); });
		/* Keys equal to the pivot are done: only the sides recurse. */
		It eq = std::partition(lt, last, [&](const auto &x) { return !(*comp)(pivot, x); });
		std::iter_swap(first, lt - 1);
		It l_end = lt - 1;
		auto left = [&] { (*this)(first, l_end, depth - 1); };
		auto right = [&] { (*this)(eq, last, depth - 1); };
		fork2(rt, left, right);
	}
};

template <class It, class C> void sort_compare(weft_rt *rt, It first, It last, C &comp)
{
	auto n = last - first;
	if (!rt) {
		std::sort(first, last, comp);
		return;
	}
	weft_config cfg;
	std::ptrdiff_t w = weft_rt_config(rt, &cfg) == 0 && cfg.workers > 0 ? cfg.workers : 1;
	std::ptrdiff_t cut = n / (16 * w);
	int depth = 2;
	for (auto m = n; m > 1; m /= 2)
		depth += 2;
	quicksort<It, C>{&comp, rt, cut > 4096 ? cut : 4096}(first, last, depth);
}

} // namespace detail
/// @endcond

/** parallel_sort(first, last[, comp]) sorts [first, last) of a
 * random-access range by comp (default std::less<>) on the runtime's
 * workers and the calling thread. Keys of 4- and 8-byte integer or
 * floating-point type in contiguous storage (a pointer, a vector's
 * iterators, not const) under std::less take weft_parallel_sort's radix sort, which
 * needs a second buffer as large as the range (std::bad_alloc when it
 * cannot be had, or, built without exceptions, the comparison path runs
 * instead); floating-point keys then follow IEEE totalOrder (-0.0 before
 * +0.0, NaNs at the ends: a valid order under std::less, which leaves
 * them unordered). Anything else takes a parallel quicksort with std::sort
 * at the leaves: in place, no allocation, not stable, as std::sort and
 * tbb::parallel_sort. comp must be a strict weak order and may run on
 * several threads at once; an exception from it or from a move is
 * rethrown after every part stopped (the range is then in an unspecified
 * order). With no runtime it is std::sort. */
template <class It, class Compare, class = detail::if_random_access<It>>
void parallel_sort(It first, It last, Compare comp)
{
	using T = typename std::iterator_traits<It>::value_type;
	if (last - first < 2)
		return;
	weft_rt *rt = detail::current_rt();
	if constexpr (detail::radix_type<T>() != 0 && detail::contiguous_v<It> &&
	              detail::natural_order_v<T, Compare>) {
		if (rt) {
			int rc = weft_parallel_sort(rt, std::addressof(*first),
			                            static_cast<std::size_t>(last - first),
			                            detail::radix_type<T>(), nullptr);
			if (rc == 0)
				return;
#if WEFT_CPP_EXCEPTIONS
			if (rc == WEFT_ENOMEM)
				throw std::bad_alloc();
#endif
		}
	}
	detail::sort_compare(rt, first, last, comp);
}

/** parallel_sort(first, last) sorts by std::less<>. */
template <class It, class = detail::if_random_access<It>> void parallel_sort(It first, It last)
{
	parallel_sort(first, last, std::less<>());
}

/** parallel_sort(range[, comp]) sorts a whole container (anything with
 * random-access begin() and end()). */
template <class Range, class Compare = std::less<>,
          class = detail::if_random_access<decltype(std::begin(std::declval<Range &>()))>>
void parallel_sort(Range &range, Compare comp = Compare())
{
	parallel_sort(std::begin(range), std::end(range), comp);
}

/// @cond WEFT_DETAIL
namespace detail
{

/* The blocked three-phase scan of weft_parallel_scan (src/algo/scan.c),
 * over C++ values: blocks from the length only (at least 16,384 elements,
 * at most WEFT_SCAN_MAX_BLOCKS), so the order of every op is a function of
 * the length alone, on every model and worker count. */
template <class InIt, class OutIt, class T, class Op> struct scan_ctx {
	InIt in;
	OutIt out;
	std::size_t n, grain, blocks;
	Op *op;
	std::optional<T> init; /* exclusive: the first output; inclusive: folded first */
	bool exclusive;
	std::vector<std::optional<T>> sums; /* block summaries, then prefixes */
	first_error err;

	using D = typename std::iterator_traits<InIt>::difference_type;
	using OD = typename std::iterator_traits<OutIt>::difference_type;

	static void summarise(std::size_t b0, std::size_t b1, void *arg) noexcept
	{
		auto *c = static_cast<scan_ctx *>(arg);
		c->guard([&] {
			for (std::size_t b = b0; b < b1; b++) {
				std::size_t lo = b * c->grain, hi = std::min(c->n, lo + c->grain);
				InIt it = c->in + static_cast<D>(lo);
				T acc = *it;
				for (std::size_t i = lo + 1; i < hi; i++)
					acc = (*c->op)(std::move(acc), *++it);
				c->sums[b].emplace(std::move(acc));
			}
		});
	}

	static void finish(std::size_t b0, std::size_t b1, void *arg) noexcept
	{
		auto *c = static_cast<scan_ctx *>(arg);
		c->guard([&] {
			for (std::size_t b = b0; b < b1; b++)
				c->finish_block(b);
		});
	}

	void finish_block(std::size_t b)
	{
		std::size_t lo = b * grain, hi = std::min(n, lo + grain);
		InIt it = in + static_cast<D>(lo);
		OutIt o = out + static_cast<OD>(lo);
		std::optional<T> acc = std::move(sums[b]);
		for (std::size_t i = lo; i < hi; i++, ++it, ++o) {
			/* Read before writing: in and out may be the same range. */
			T x = *it;
			if (exclusive) {
				*o = *acc;
				acc.emplace((*op)(std::move(*acc), std::move(x)));
			} else {
				if (acc)
					acc.emplace((*op)(std::move(*acc), std::move(x)));
				else
					acc.emplace(std::move(x));
				*o = *acc;
			}
		}
	}

	template <class F> void guard(F &&f) noexcept
	{
#if WEFT_CPP_EXCEPTIONS
		if (err.failed())
			return;
		try {
			f();
		} catch (...) {
			err.capture();
		}
#else
		f();
#endif
	}

	void run(weft_rt *rt)
	{
		if (blocks > 1 && (!rt || weft_parallel_for(rt, 0, blocks - 1, 1, &summarise, this) != 0))
			summarise(0, blocks - 1, this);
		err.rethrow();
		/* Prefixes, left to right: sums[b] becomes the fold before block b. */
		std::optional<T> run = init;
		for (std::size_t b = 0; b < blocks; b++) {
			std::optional<T> s = std::move(sums[b]);
			sums[b] = run;
			if (b + 1 < blocks)
				run = run ? std::optional<T>((*op)(std::move(*run), std::move(*s))) : std::move(s);
		}
		if (!rt || weft_parallel_for(rt, 0, blocks, 1, &finish, this) != 0)
			finish(0, blocks, this);
		err.rethrow();
	}
};

template <class T, class InIt, class OutIt, class Op>
OutIt scan(InIt first, InIt last, OutIt d_first, Op &op, std::optional<T> init, bool exclusive)
{
	auto len = last - first;
	if (len <= 0)
		return d_first;
	std::size_t n = static_cast<std::size_t>(len);
	std::size_t grain = std::max<std::size_t>(16384, (n + WEFT_SCAN_MAX_BLOCKS - 1) /
	                                                         WEFT_SCAN_MAX_BLOCKS);
	scan_ctx<InIt, OutIt, T, Op> c{first, d_first, n, grain, (n - 1) / grain + 1,
	                               &op,   std::move(init), exclusive, {}, {}};
	c.sums.resize(c.blocks);
	c.run(current_rt());
	return d_first + static_cast<typename std::iterator_traits<OutIt>::difference_type>(n);
}

} // namespace detail
/// @endcond

/** parallel_scan(first, last, d_first[, op]) writes the inclusive prefix
 * folds of [first, last) to d_first (d_first[i] = x0 op ... op xi), as
 * std::inclusive_scan does, in parallel: the blocked three-phase scan of
 * weft_parallel_scan, whose blocks depend on the length only, so the
 * grouping of op (and a floating-point result, bit for bit) is the same
 * on every model, worker count and run. op need only be associative.
 * Both ranges are random-access; d_first may be first (in place). Returns
 * the end of the output. The first exception of op is rethrown once the
 * phase it happened in stopped. With no runtime it runs on the calling
 * thread, in the same order. */
template <class InIt, class OutIt, class Op = std::plus<>, class = detail::if_random_access<InIt>,
          class = detail::if_random_access<OutIt>>
OutIt parallel_scan(InIt first, InIt last, OutIt d_first, Op op = Op())
{
	using T = typename std::iterator_traits<InIt>::value_type;
	return detail::scan<T>(first, last, d_first, op, std::nullopt, false);
}

/** parallel_inclusive_scan(first, last, d_first, op, init): the inclusive
 * scan starting from init (d_first[i] = init op x0 op ... op xi), as
 * std::inclusive_scan's form with init. */
template <class InIt, class OutIt, class Op, class T, class = detail::if_random_access<InIt>,
          class = detail::if_random_access<OutIt>>
OutIt parallel_inclusive_scan(InIt first, InIt last, OutIt d_first, Op op, T init)
{
	return detail::scan<T>(first, last, d_first, op, std::optional<T>(std::move(init)), false);
}

/** parallel_exclusive_scan(first, last, d_first, init[, op]) writes the
 * exclusive prefix folds (d_first[0] = init, d_first[i] = init op x0 op
 * ... op x(i-1)), as std::exclusive_scan does; see parallel_scan. */
template <class InIt, class OutIt, class T, class Op = std::plus<>,
          class = detail::if_random_access<InIt>, class = detail::if_random_access<OutIt>>
OutIt parallel_exclusive_scan(InIt first, InIt last, OutIt d_first, T init, Op op = Op())
{
	return detail::scan<T>(first, last, d_first, op, std::optional<T>(std::move(init)), true);
}

/** combinable<T>: a T per worker (and per other thread that asks), made
 * on first use by the factory given to the constructor (default: T{}),
 * combined at the end: oneTBB's combinable over weft_combinable
 * (weft/combinable.h). local() is the caller's T; hold the reference only
 * until the task next parks, waits or yields (under mn it may resume on
 * another worker, whose T is another), and ask again after. combine(f)
 * folds every T with f in an unspecified order; combine_each(f) calls f
 * on each; clear() destroys them. combine, combine_each and clear must
 * not run while other threads use local(). Neither copyable nor movable
 * (its slots point back at it). alignof(T) up to 64. */
template <class T> class combinable
{
	static_assert(alignof(T) <= 64, "combinable<T>: T aligned beyond a cache line");

public:
	/** combinable() makes each T with T{}. */
	combinable() : combinable([] { return T{}; })
	{
	}
	/** combinable(make) makes each T with make(). */
	template <class F, class = std::enable_if_t<std::is_invocable_r_v<T, F &>>>
	explicit combinable(F make) : make_(std::move(make))
	{
		weft_combinable_init(&c_, sizeof(T), &init_slot, &fini_slot, this);
	}
	combinable(const combinable &) = delete;
	combinable &operator=(const combinable &) = delete;
	~combinable()
	{
		weft_combinable_destroy(&c_);
	}

	/** local() returns the caller's T, made on the first call from this
	 * worker or thread. std::bad_alloc when it cannot be allocated
	 * (without exceptions: abort). */
	T &local()
	{
		void *p = weft_combinable_local(&c_);
		if (!p) {
#if WEFT_CPP_EXCEPTIONS
			throw std::bad_alloc();
#else
			std::abort();
#endif
		}
		return *std::launder(static_cast<T *>(p));
	}

	/** local(exists) as local(), setting exists to whether the T was there
	 * before the call. */
	T &local(bool &exists)
	{
		std::size_t before = size();
		T &t = local();
		exists = size() == before;
		return t;
	}

	/** combine(f) returns f(...f(f(a, b), c)..., z) over every T (one T:
	 * a copy of it; none: make()). */
	template <class F> T combine(F f) const
	{
		std::optional<T> acc;
		each([&](T &t) {
			if (acc)
				acc.emplace(f(std::move(*acc), t));
			else
				acc.emplace(t);
		});
		return acc ? std::move(*acc) : make_();
	}

	/** combine_each(f) calls f(t) for every T. */
	template <class F> void combine_each(F f) const
	{
		each([&](T &t) { f(t); });
	}

	/** clear() destroys every T; the next local() makes new ones. */
	void clear()
	{
		weft_combinable_clear(&c_);
	}

	/** size(): how many T exist. */
	std::size_t size() const
	{
		auto count = [](void *, void *) {};
		int n = weft_combinable_each(const_cast<weft_combinable *>(&c_), count, nullptr);
		return n > 0 ? static_cast<std::size_t>(n) : 0;
	}

private:
	template <class F> void each(F &&f) const
	{
		auto call = [](void *slot, void *arg) {
			(*static_cast<F *>(arg))(*std::launder(static_cast<T *>(slot)));
		};
		weft_combinable_each(const_cast<weft_combinable *>(&c_), call, &f);
	}
	static void init_slot(void *slot, void *arg) noexcept
	{
		/* A factory that throws cannot unwind through C: the slot would
		 * be half made. It terminates, as a throwing destructor does. */
		new (slot) T(static_cast<combinable *>(arg)->make_());
	}
	static void fini_slot(void *slot, void *) noexcept
	{
		std::launder(static_cast<T *>(slot))->~T();
	}

	std::function<T()> make_;
	weft_combinable c_;
};

} // namespace weft

#endif
