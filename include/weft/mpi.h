/** @file
 * weft-mpi: weft inside MPI ranks. An optional component (library weft_mpi,
 * built only when CMake finds MPI; not included from weft.h): it asks MPI for
 * the threading level the runtime needs, and waits for MPI requests the way
 * the model waits for anything else: a fiber (fibers, mn) parks and lets its
 * worker run other tasks while MPI makes progress; a kernel thread (threads,
 * spawn, any thread outside a runtime) sleeps between polls instead of
 * burning a core the way MPI_Wait does in Open MPI. docs/mpi.md says how to
 * run it, which model to pick inside a rank, and what the polling costs. */
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
	uint64_t tests;       /**< MPI_Test* calls made while waiting */
	uint64_t yields;      /**< weft_yield between tests (fiber models) */
	uint64_t sleeps;      /**< weft_sleep_ns between tests (park a fiber, sleep a thread) */
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
 * allowed). It polls with MPI_Test: on a fiber it yields between tests
 * while other tasks keep its worker busy and parks it with a growing sleep
 * when they do not; on a kernel thread it sleeps between tests, starting at
 * 1 us and doubling up to the poll limit (weft_mpi_set_poll_max_ns). May be
 * called from any task of any model, or from a thread outside a runtime.
 * Returns 0, WEFT_EINVAL for a NULL req, WEFT_ENOTSUP when the MPI threading
 * level does not allow this thread to call MPI (see weft_mpi_init), or an
 * MPI error (see weft_mpi_error). A NULL request returns 0 at once. */
WEFT_EXTERN int weft_mpi_wait(MPI_Request *req, MPI_Status *status);

/** weft_mpi_waitall waits until all of reqs[0 .. count-1] complete, as
 * MPI_Waitall does (statuses may be MPI_STATUSES_IGNORE), polling with
 * MPI_Testall the way weft_mpi_wait polls. Returns as weft_mpi_wait does;
 * WEFT_EINVAL for a negative count or NULL reqs with count > 0. */
WEFT_EXTERN int weft_mpi_waitall(int count, MPI_Request reqs[], MPI_Status statuses[]);

/** weft_mpi_waitany waits until one of reqs[0 .. count-1] completes, as
 * MPI_Waitany does: *index receives its position (MPI_UNDEFINED if every
 * request is MPI_REQUEST_NULL), and that request is freed. Polls with
 * MPI_Testany. Returns as weft_mpi_waitall does; WEFT_EINVAL for a NULL
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

/** weft_mpi_set_poll_max_ns sets the longest sleep between two tests of a
 * waiting request (default 200,000 ns; at least 1,000) and returns the
 * previous limit, or WEFT_EINVAL for a value out of range. A longer limit
 * costs less CPU while waiting and adds up to that much latency to a late
 * message (docs/mpi.md measures both). Safe from any thread. */
WEFT_EXTERN int64_t weft_mpi_set_poll_max_ns(int64_t ns);

/** weft_mpi_stats_get copies the poll counters into *out. WEFT_EINVAL for
 * NULL. */
WEFT_EXTERN int weft_mpi_stats_get(weft_mpi_stats *out);

#ifdef __cplusplus
}
#endif

#endif
