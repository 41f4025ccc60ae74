/* One HTTP GET with libcurl, written as blocking code that blocks the way
 * the weft model wants: every wait for the network is a weft_wait_fd (or a
 * weft_sleep_ns when curl waits for a timer only), so under `fibers` the
 * calling fiber parks and its worker runs other requests, and under
 * `threads` and `spawn` the calling thread blocks in poll(2).
 *
 * Each call owns a curl multi handle with one easy handle in it and drives
 * it with curl's socket interface (CURLMOPT_SOCKETFUNCTION,
 * CURLMOPT_TIMERFUNCTION, curl_multi_socket_action): curl says which
 * socket it wants and for what, the call waits for exactly that, then hands
 * the readiness back to curl. Nothing is shared between calls, so any
 * number may run at once on any threads (after curl_global_init). */
#ifndef TICKER_FETCH_H
#define TICKER_FETCH_H
#include <stddef.h>
#include <stdint.h>

typedef struct ticker_fetch_opts {
	long timeout_ms;        /* whole request, connect included (> 0) */
	size_t max_body;        /* larger answers fail (> 0) */
	const char *user_agent; /* NULL: curl's none */
} ticker_fetch_opts;

typedef struct ticker_response {
	char *body; /* malloc'd, NUL-terminated (the NUL is not counted in len) */
	size_t len;
	long status;        /* HTTP status, 0 if none arrived */
	char redirect[256]; /* a 3xx answer's Location (not followed), or "" */
} ticker_response;

/* ticker_fetch GETs url. Returns 0 when an HTTP answer arrived whole
 * (whatever its status: see resp->status), with resp->body to free; else
 * -1 with a one-line reason in err (timeout, cannot connect, answer larger
 * than max_body, ...) and nothing to free. */
int ticker_fetch(const char *url, const ticker_fetch_opts *opts, ticker_response *resp, char *err,
                 size_t err_size);

#endif
