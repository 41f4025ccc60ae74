/* Sleep on a 32-bit word until another thread changes it and wakes us: the
 * one blocking primitive weft's core is built on. Linux uses futex(2)
 * (futex_linux.c); the portable build a table of mutexes and condition
 * variables keyed by address (futex_posix.c); a port would supply the same
 * functions over its own call (os_sync_wait_on_address or __ulock_wait on
 * macOS, _umtx_op on FreeBSD). Process-private: the word must not be in
 * shared memory. */
#ifndef WEFT_SRC_CORE_FUTEX_H
#define WEFT_SRC_CORE_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>

/* weft__futex_wait sleeps while *word == expected, for at most timeout_ns
 * nanoseconds (negative: no limit). Returns on a wake-up, on a value
 * mismatch, on timeout or spuriously: callers re-check their condition in a
 * loop. */
void weft__futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns);

/* weft__futex_wake wakes up to n threads sleeping on word and returns how
 * many it woke (0 when the system cannot say). It never reads or writes
 * *word, so it is safe to call on memory the woken thread may already have
 * freed. */
int weft__futex_wake(_Atomic uint32_t *word, int n);

/* weft__futex_fork_child: in a forked child, before anything else waits
 * (runtime.c's atfork handler), forgets the parent's sleepers where the
 * backend keeps them in user space (futex_posix.c); nothing for futex(2). */
void weft__futex_fork_child(void);

/* weft__timer_slack_fine sets the calling thread's timer slack to 1 ns,
 * once per thread. The kernel lets a timeout end late by up to the slack
 * (50 us by default) to batch wake-ups; that would be the resolution of
 * the timed waits and sleeps a program makes through weft (a waiter's
 * deadline, weft_sleep_ns, a fiber worker's poller), which are meant to end
 * within microseconds of their time. Not for weft's own periodic waits,
 * nor the timer thread of delayed posts, where the batching is wanted (it
 * fires thousands of close deadlines with one wake-up each 50 us). 1, not
 * 0: 0 restores the default. The thread keeps the setting. */
void weft__timer_slack_fine(void);

#endif
