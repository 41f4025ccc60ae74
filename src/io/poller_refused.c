/* What a refusal while making a poller means to the caller (io/poller.h),
 * for every backend. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "core/internal.h"
#include "io/poller.h"

int weft__poller_refused(const char *call, int err, const char *needs)
{
	if (err == EMFILE || err == ENFILE) {
		struct rlimit nofile;
		char limit[32] = "unlimited";
		if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
			snprintf(limit, sizeof(limit), "%llu", (unsigned long long)nofile.rlim_cur);
		weft__log(WEFT_LOG_ERROR,
		          "weft: cannot create a fiber worker's poller (%s: %s): %s%s; a fiber "
		          "worker needs %s\n",
		          call, strerror(err),
		          err == EMFILE
		                  ? "the process's descriptor limit (RLIMIT_NOFILE, ulimit -n) is "
		                  : "the system's limit (fs.file-max on Linux) is reached; ulimit "
		                    "-n is ",
		          limit, needs);
		return WEFT_EMFILE;
	}
	weft__log(WEFT_LOG_ERROR, "weft: cannot create a fiber worker's poller (%s: %s)\n", call,
	          strerror(err));
	return WEFT_ENOMEM;
}
