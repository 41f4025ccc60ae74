/** @file
 * weft: write a multithreaded program once, run it on whichever threading
 * model fits, chosen at run time. This header includes the whole public API
 * (weft/mpi.h, the optional MPI component, apart).
 *
 *   weft_rt *rt;
 *   weft_rt_create(&rt, NULL);            // model, workers, policy from WEFT_*
 *   weft_task t;
 *   weft_task_init(&t, fn, arg);
 *   weft_post(rt, &t);
 *   weft_wait_all(rt);
 *   weft_rt_destroy(rt);
 */

/** @mainpage One task API, the threading model chosen at run time
 *
 * weft is a C11 library for programs that split work into tasks: post
 * tasks and wait for them, fork and join recursively, run parallel loops
 * and reductions, pass values through channels, wait on file descriptors,
 * with a deadline on every wait. How tasks execute is chosen when the
 * program starts, from the environment, without touching the code:
 *
 * | WEFT_MODEL | a task runs as                                  | a wait           |
 * | ---------- | ----------------------------------------------- | ---------------- |
 * | threads    | a call on a pool of kernel threads (default)    | blocks a thread  |
 * | spawn      | a kernel thread of its own                      | blocks a thread  |
 * | fibers     | a fiber on one kernel thread                    | parks the fiber  |
 * | mn         | a fiber over a pool of work-stealing threads    | parks the fiber  |
 *
 * @code
 * weft_rt *rt;
 * weft_rt_create(&rt, NULL);       // model, workers, policy from WEFT_*
 * weft_task t;
 * weft_task_init(&t, fn, arg);     // caller-owned: posting allocates nothing
 * weft_post(rt, &t);
 * weft_wait(&t);                   // or weft_wait_all(rt)
 * weft_rt_destroy(rt);             // drains, joins, frees
 * @endcode
 *
 * Every function returns 0 or a negative WEFT_E* code (error.h,
 * weft_strerror); detectable misuse returns WEFT_EINVAL rather than
 * crashing. Each function's comment says its errors and where it may be
 * called.
 *
 * Where to look, header by header (weft.h includes them all):
 * - runtime.h: weft_rt_create, weft_rt_destroy, posting (weft_post,
 *   weft_post_in, weft_post_at, weft_post_when), weft_wait_all;
 * - task.h: weft_task, weft_group, weft_wait, weft_wait_until,
 *   weft_cancel;
 * - parallel.h: weft_fork_join, weft_parallel_for, weft_parallel_reduce;
 * - algo.h: weft_parallel_scan, weft_parallel_sort (radix, records, and
 *   weft_parallel_sort_cmp with a comparator);
 * - combinable.h: weft_combinable, per-worker slots folded at the end;
 * - sync.h: weft_mutex, weft_cond, weft_sem, weft_barrier, weft_chan,
 *   weft_chan_select, weft_rwlock, weft_once, weft_latch;
 * - periodic.h: weft_post_every (a task run every period);
 * - local.h: task-local storage (weft_tls_key_create, weft_tls_get);
 * - blocking.h: weft_yield, weft_sleep_ns, weft_wait_fd, weft_blocking;
 * - io.h: sockets and streams with deadlines (weft_read, weft_write,
 *   weft_accept, weft_connect, ...), weft_wait_fds, weft_fd_cancel,
 *   weft_close, and files (weft_pread, weft_pwrite, weft_fsync,
 *   weft_openat) (docs/io.md);
 * - config.h: weft_config and the enums behind WEFT_MODEL, WEFT_POLICY,
 *   WEFT_PIN, WEFT_PREEMPT;
 * - stats.h: weft_stats_get, weft_stats_print, latency histograms, the
 *   trace; log.h: weft_set_log; error.h: the codes;
 * - mpi.h: weft inside MPI ranks (library weft_mpi, optional).
 *
 * The guides are in the source tree's docs/ directory, installed with the
 * weft-doc package (or make install) into share/doc/weft/docs:
 * docs/tutorial.md (from an empty directory to a program on every model),
 * docs/choosing-a-model.md, docs/configuration.md (every WEFT_* variable),
 * docs/pitfalls.md (the mistakes new programs make, and their fixes),
 * docs/migrating.md (from pthreads, OpenMP, oneTBB, GCD and Go),
 * docs/tuning.md (grain, workers, model, reading the statistics),
 * docs/faq.md, docs/building.md (build options, packages, the ABI), and
 * examples/ (small programs to copy). */

#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include "algo.h"
#include "blocking.h"
#include "combinable.h"
#include "config.h"
#include "error.h"
#include "export.h"
#include "io.h"
#include "local.h"
#include "log.h"
#include "parallel.h"
#include "periodic.h"
#include "runtime.h"
#include "stats.h"
#include "sync.h"
#include "task.h"

/** The major version of these headers (0: a minor release may break the API). */
#define WEFT_VERSION_MAJOR 0
/** The minor version of these headers. */
#define WEFT_VERSION_MINOR 1
/** The patch version of these headers. */
#define WEFT_VERSION_PATCH 0
/** @cond WEFT_PRIVATE */
#define WEFT__STR_(x)      #x
#define WEFT__STR(x)       WEFT__STR_(x)
/** @endcond */
/** The version of these headers, "MAJOR.MINOR.PATCH". */
#define WEFT_VERSION                  \
	WEFT__STR(WEFT_VERSION_MAJOR) \
	"." WEFT__STR(WEFT_VERSION_MINOR) "." WEFT__STR(WEFT_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/** weft_version returns the version of the library the program runs with
 * ("MAJOR.MINOR.PATCH", static), which can differ from WEFT_VERSION, the
 * version it was compiled against, when libweft is a shared library.
 * Callable any time, from any thread. */
WEFT_EXTERN const char *weft_version(void);

#ifdef __cplusplus
}
#endif

#endif
