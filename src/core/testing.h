/* Hooks for weft's own tests. Not part of the public API: tests link the
 * static library, where these hidden symbols are visible. */
#ifndef WEFT_SRC_CORE_TESTING_H
#define WEFT_SRC_CORE_TESTING_H

#include <stdbool.h>
#include <stdint.h>

/* weft__fault_thread_create makes the nth thread creation from now (1 = the
 * next one) fail as if the system refused it; 0 disarms. Counts creations by
 * every runtime in the process. */
void weft__fault_thread_create(long nth);

/* weft__fault_timer_create makes the nth timer_create of a quantum clock
 * from now (1 = the next one) fail with errno err; 0 disarms. */
void weft__fault_timer_create(long nth, int err);

/* weft__fault_no_pwait2 makes pollers created from now on behave as on a
 * kernel without epoll_pwait2 (a timerfd carries the timeout) when on is
 * true; false probes the kernel again. */
void weft__fault_no_pwait2(bool on);

/* weft__fault_uring_setup makes io_uring_setup fail with errno err (0:
 * the kernel decides again) for the probe at weft_rt_create and for rings
 * made from now on: the fallback to the blocking pool runs in the suite. */
void weft__fault_uring_setup(int err);

/* weft__fault_file_nowait(true) skips the RWF_NOWAIT try of the file
 * calls on fibers, so that every call on the blocking pool is handed to
 * a pool thread (the page cache would answer most of them); false
 * restores it. */
void weft__fault_file_nowait(bool off);

/* weft__mutex_handoffs: how many times, in the process so far, an unlock
 * handed a weft_mutex to a waiter that had starved (sync/mutex.c). */
uint64_t weft__mutex_handoffs(void);

/* weft__pool_testing_limits sets the idle time after which a blocking
 * pool thread ends and the most threads a pool may have, for pools made
 * from now on (0: the defaults, 10 s and 64). */
void weft__pool_testing_limits(int64_t idle_ns, int max_threads);

/* weft__file_cancel(fd) stops the file calls in flight on fd (io/files.h);
 * weft_fd_cancel will call it. */
int weft__file_cancel(int fd);

/* weft__live_allocations returns how many blocks weft has allocated and not
 * yet freed, over all runtimes. */
long weft__live_allocations(void);

/* weft__testing_lock takes (take) or lets go of one of weft's process-wide
 * locks, for tests that fork while another thread holds it: the log hook's
 * writer, the list of delay heaps, rt's delay heap (made if need be), the
 * runtimes' shells. */
enum {
	WEFT__TESTING_LOCK_LOG,
	WEFT__TESTING_LOCK_HEAPS,
	WEFT__TESTING_LOCK_HEAP,
	WEFT__TESTING_LOCK_SHELLS,
	WEFT__TESTING_LOCKS
};
struct weft_rt;
void weft__testing_lock(int which, struct weft_rt *rt, _Bool take);

#endif
