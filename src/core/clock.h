/* Time for deadlines: the CLOCK_MONOTONIC nanoseconds weft_clock_ns reads,
 * and the arithmetic on them. Deadlines and timeouts come from programs and
 * may sit at either end of int64_t (INT64_MIN, INT64_MAX, now + INT64_MAX):
 * every sum and difference saturates instead of wrapping, so a deadline in
 * the past stays in the past (the wait is a poll) and INT64_MAX stays
 * "never" (the wait has no end but its partner). Every site that adds a
 * timeout to a time or subtracts two times goes through these. */
#ifndef WEFT_SRC_CORE_CLOCK_H
#define WEFT_SRC_CORE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline int64_t weft__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How far behind CLOCK_MONOTONIC the coarse clock may be (twice its
 * resolution: the time at the last tick), or 0 when there is none
 * (clock.c). */
int64_t weft__coarse_lag_ns(void);

static inline int64_t weft__coarse_now_ns(void)
{
	struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether deadline has passed. Most deadlines are none or far (seconds
 * ahead, as a server gives every read), and the coarse clock tells those
 * apart: it reads the time of the last tick, 6 ns a read on the
 * development VM against 41 for the precise one, and lags it by at most
 * weft__coarse_lag_ns. Only a deadline that close to now reads the
 * precise clock. (A kernel that stops the tick on a busy CPU, nohz_full,
 * can hold the coarse clock back longer: a deadline then passes up to
 * that much late where a worker is busy.) */
static inline bool weft__passed(int64_t deadline)
{
	if (deadline == INT64_MAX)
		return false;
	int64_t coarse = weft__coarse_now_ns();
	if (deadline <= coarse)
		return true;
	int64_t lag = weft__coarse_lag_ns();
	if (lag > 0 && deadline - coarse > lag)
		return false;
	return deadline <= weft__now_ns();
}

/* a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t weft__sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a - b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t weft__sat_sub(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The nanoseconds from now until deadline, never below 0 (a deadline that
 * has passed leaves 0: poll) and INT64_MAX for the deadline INT64_MAX
 * (a wait with no end, whatever now is). */
static inline int64_t weft__ns_left(int64_t deadline, int64_t now)
{
	if (deadline == INT64_MAX)
		return INT64_MAX;
	int64_t left = weft__sat_sub(deadline, now);
	return left > 0 ? left : 0;
}

#endif
