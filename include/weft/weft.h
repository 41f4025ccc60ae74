/* weft: write a multithreaded program once, run it on whichever threading
 * model fits, chosen at run time. This header includes the whole public API.
 *
 *   weft_rt *rt;
 *   weft_rt_create(&rt, NULL);            // model, workers, policy from WEFT_*
 *   weft_task t;
 *   weft_task_init(&t, fn, arg);
 *   weft_post(rt, &t);
 *   weft_wait_all(rt);
 *   weft_rt_destroy(rt);
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include "blocking.h"
#include "config.h"
#include "error.h"
#include "export.h"
#include "log.h"
#include "parallel.h"
#include "runtime.h"
#include "stats.h"
#include "sync.h"
#include "task.h"

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT__STR_(x)      #x
#define WEFT__STR(x)       WEFT__STR_(x)
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
