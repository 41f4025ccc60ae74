/** @file
 * weft-mpi: weft inside MPI ranks. An optional component (library weft_mpi,
 * built only when CMake finds MPI; not included from weft.h): it asks MPI for
 * the threading level the runtime needs, and waits for MPI requests the way
 * the model waits for anything else: a fiber (fibers, mn) parks and lets its
 * worker run other tasks while the scheduler polls MPI for it; a kernel
 * thread (threads, spawn, any thread outside a runtime) sleeps between polls
 * instead of burning a core the way MPI_Wait does in Open MPI. docs/mpi.md
 * says how to run it, which model to pick inside a rank, and what the
 * polling costs. */
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "export.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the poll loop did, summed over every wait of the process (relaxed
 * counters: exact once the waits have returned). */
typedef struct weft_mpi_stats {
	uint64_t waits;       /**< weft_mpi_wait* calls that had to wait (not done at once) */
	uint64_t tests;       /**< MPI_Testsome/MPI_Testany over the registry while some waited */
	uint64_t parks;       /**< waits that parked a fiber until the progress duty finished them */
	uint64_t sleeps;      /**< sleeps of waiting kernel threads between their polls */
	uint64_t reserved[4]; /**< room to grow without breaking the ABI */
} weft_mpi_stats;

/** weft_mpi_required_level returns the MPI threading level a runtime with
 * this configuration needs for tasks that call MPI (through the weft_mpi_wait functions
 * or directly) while the thread that created it may call MPI too:
 * MPI_THREAD_SERIALIZED when its tasks run one at a time on one kernel
 * thread (fibers; threads or mn with 1 worker), MPI_THREAD_MULTIPLE
 * otherwise (several workers; spawn, a thread per task). cfg NULL:
 * MPI_THREAD_MULTIPLE. Workers 0 (one per CPU) counts as several. */
WEFT_EXTERN int weft_mpi_required_level(const weft_config *cfg);

/** weft_mpi_init calls MPI_Init_thread asking for the level rt needs
 * (weft_mpi_required_level of its configuration; rt NULL: MPI_THREAD_MULTIPLE),
 * stores the level MPI provides in *provided (may be NULL), and makes
 * MPI_COMM_WORLD return errors (MPI_ERRORS_RETURN) so that they come back as
 * weft codes instead of aborting. When MPI provides less than asked it says
 * on stderr what still works and returns 0: with MPI_THREAD_SERIALIZED,
 * the weft_mpi_wait functions serialise their own MPI calls under a lock, so several
 * workers may wait at once, but the application's own MPI calls from tasks
 * must not overlap (run one worker); below that, only the thread that called
 * weft_mpi_init may call the weft_mpi_wait functions (others get WEFT_ENOTSUP). Returns
 * WEFT_EINVAL if MPI is already initialised or was finalised, or an MPI
 * error (see weft_mpi_error). Call it from the main thread, once. */
WEFT_EXTERN int weft_mpi_init(int *argc, char ***argv, weft_rt *rt, int *provided);

/** weft_mpi_finalize calls MPI_Finalize. Every request must be complete and
 * no task may still call MPI. Returns 0 or an MPI error as a weft code. */
WEFT_EXTERN int weft_mpi_finalize(void);

/** weft_mpi_wait waits until *req completes, then, like MPI_Wait, frees it
 * (sets it to MPI_REQUEST_NULL) and fills *status (MPI_STATUS_IGNORE
 * allowed). When one MPI_Test does not find it complete, it enters the
 * rank's request registry: on a fiber (fibers, mn) the fiber parks, with no
 * timer, until a worker's progress duty (weft/progress.h: one MPI_Testsome
 * over the registry, by an idle worker every poll interval and by a busy
 * one between tasks) finds it complete; on a kernel thread it polls the
 * registry itself, sleeping from 1 us up to the poll interval
 * (weft_mpi_set_poll_max_ns) in between. May be
 * called from any task of any model, or from a thread outside a runtime.
 * Returns 0, WEFT_EINVAL for a NULL req, WEFT_ENOTSUP when the MPI threading
 * level does not allow this thread to call MPI (see weft_mpi_init), or an
 * MPI error (see weft_mpi_error). A NULL request returns 0 at once. */
WEFT_EXTERN int weft_mpi_wait(MPI_Request *req, MPI_Status *status);

/** weft_mpi_waitall waits until all of reqs[0 .. count-1] complete, as
 * MPI_Waitall does (statuses may be MPI_STATUSES_IGNORE; the status of a
 * request that was already MPI_REQUEST_NULL is left as it was), the way
 * weft_mpi_wait waits. Returns as weft_mpi_wait does;
 * WEFT_EINVAL for a negative count or NULL reqs with count > 0. */
WEFT_EXTERN int weft_mpi_waitall(int count, MPI_Request reqs[], MPI_Status statuses[]);

/** weft_mpi_waitany waits until one of reqs[0 .. count-1] completes, as
 * MPI_Waitany does: *index receives its position (MPI_UNDEFINED if every
 * request is MPI_REQUEST_NULL), and that request is freed. Its requests are
 * tested with MPI_Testany (one of them completes, never two). Returns as weft_mpi_waitall does; WEFT_EINVAL for a NULL
 * index. */
WEFT_EXTERN int weft_mpi_waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status);

/** weft_mpi_error turns an MPI return code into a weft code: 0 for
 * MPI_SUCCESS; otherwise it prints "weft-mpi: <what>: <MPI_Error_string>"
 * on stderr and returns WEFT_ENOMEM (MPI_ERR_NO_MEM), WEFT_EINVAL (the
 * classes of bad arguments: buffer, count, type, tag, comm, rank, request,
 * root, group, op, arg, truncate, ...), or WEFT_ENOTSUP (anything else: a
 * failed peer, MPI_ERR_OTHER, an internal error; weft has no closer code).
 * what may be NULL. Safe from any thread. */
WEFT_EXTERN int weft_mpi_error(int mpi_rc, const char *what);

/** weft_mpi_check compares the ranks of comm: a collective call (every rank
 * of comm must make it) that gathers each rank's model, policy, worker
 * count and the MPI threading level it was granted. When any rank differs
 * from rank 0, rank 0 says so on stderr, once per process, naming each
 * differing rank, its host and its settings (ranks on other hosts run the
 * defaults unless the launcher passes WEFT_MODEL and WEFT_WORKERS on:
 * mpirun -x). *differ (may be NULL) receives how many ranks differ from
 * rank 0, the same on every rank. Returns 0, WEFT_EINVAL for a NULL rt or
 * MPI_COMM_NULL, WEFT_ENOMEM, or an MPI error (see weft_mpi_error). */
WEFT_EXTERN int weft_mpi_check(weft_rt *rt, MPI_Comm comm, int *differ);

/** weft_mpi_set_poll_max_ns sets the poll interval: the longest an idle
 * worker sleeps between two polls of the request registry while a fiber
 * waits, and the longest a waiting kernel thread sleeps between its polls
 * (default 40,000 ns, each interval drawn from half to one and a half of it; at least 1,000). Returns the previous interval, or
 * WEFT_EINVAL for a value out of range. A longer interval costs less CPU
 * while waiting and adds up to that much latency to a message (docs/mpi.md
 * measures both). Safe from any thread. */
WEFT_EXTERN int64_t weft_mpi_set_poll_max_ns(int64_t ns);

/** weft_mpi_stats_get copies the poll counters into *out. WEFT_EINVAL for
 * NULL. */
WEFT_EXTERN int weft_mpi_stats_get(weft_mpi_stats *out);

#ifdef __cplusplus
}
#endif

#endif
