/* ticker_fetch (fetch.h): curl's multi socket interface over weft_wait_fd.
 *
 * The loop. curl_multi_socket_action runs the transfer as far as it can
 * without blocking and, through two callbacks, says what it waits for
 * next: socket_cb "socket S, for reading and/or writing" (or "forget S"),
 * timer_cb "call me back in T ms". The loop then waits for exactly that,
 * with weft_wait_fd(S, events, T) — a parked fiber under `fibers`, a poll(2)
 * under the thread models — and reports what happened back to curl, until
 * the easy handle is done.
 *
 * Usually curl watches one socket at a time (the connection; or, while a
 * host name resolves, the pipe of curl's resolver thread). While it races
 * IPv6 against IPv4 (happy eyeballs) it may watch two: then the sockets go
 * into a private epoll set, created on demand, and the loop waits on the
 * epoll fd, which is readable when any of them is ready.
 *
 * Rejected: curl_multi_poll / curl_multi_wait (they block the worker
 * thread, so one fiber would stall all others), curl_easy_perform in
 * weft_blocking (a helper thread per request: the fiber overlap would come
 * from threads after all), one multi handle shared by all tasks (needs a
 * driver task and a hand-off per completion; one per call keeps the task
 * code blocking and self-contained). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

#define MAX_SOCKETS 8

typedef struct watch {
	curl_socket_t fd;
	int what; /* CURL_POLL_IN / OUT / INOUT */
} watch;

typedef struct fetch {
	CURLM *multi;
	CURL *easy;
	watch socks[MAX_SOCKETS]; /* what curl wants, from socket_cb */
	int nsocks;
	int epfd;         /* -1 until curl watches two sockets at once */
	int64_t timer_at; /* CLOCK_MONOTONIC ns of curl's timer, or -1 */
	int failed_setup; /* a socket_cb that could not be honoured */
	size_t max_body;
	int too_big;
	char *body;
	size_t len, cap;
	char errbuf[CURL_ERROR_SIZE];
} fetch;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint32_t epoll_events(int what)
{
	return (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
}

static short poll_events(int what)
{
	return (short)((what & CURL_POLL_IN ? POLLIN : 0) | (what & CURL_POLL_OUT ? POLLOUT : 0));
}

/* Puts every watched socket into a fresh epoll set (first time two are
 * watched). */
static int start_epoll(fetch *f)
{
	f->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (f->epfd < 0)
		return -1;
	for (int i = 0; i < f->nsocks; i++) {
		struct epoll_event ev = {.events = epoll_events(f->socks[i].what),
		                         .data.fd = f->socks[i].fd};
		if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->socks[i].fd, &ev) != 0)
			return -1;
	}
	return 0;
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	(void)easy;
	(void)socketp;
	fetch *f = userp;
	int i = 0;
	while (i < f->nsocks && f->socks[i].fd != s)
		i++;
	if (what == CURL_POLL_REMOVE) {
		if (i < f->nsocks) {
			if (f->epfd >= 0)
				epoll_ctl(f->epfd, EPOLL_CTL_DEL, s, NULL);
			f->socks[i] = f->socks[--f->nsocks];
		}
		return 0;
	}
	int op = EPOLL_CTL_MOD;
	if (i == f->nsocks) {
		if (f->nsocks == MAX_SOCKETS) {
			f->failed_setup = 1;
			return -1;
		}
		f->nsocks++;
		op = EPOLL_CTL_ADD;
	}
	f->socks[i].fd = s;
	f->socks[i].what = what;
	if (f->epfd < 0 && f->nsocks > 1)
		return start_epoll(f) == 0 ? 0 : (f->failed_setup = 1, -1);
	if (f->epfd >= 0) {
		struct epoll_event ev = {.events = epoll_events(what), .data.fd = s};
		if (epoll_ctl(f->epfd, op, s, &ev) != 0) {
			f->failed_setup = 1;
			return -1;
		}
	}
	return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	fetch *f = userp;
	f->timer_at = timeout_ms < 0 ? -1 : now_ns() + (int64_t)timeout_ms * 1000000;
	return 0;
}

static size_t write_cb(char *data, size_t size, size_t nmemb, void *userp)
{
	fetch *f = userp;
	size_t n = size * nmemb;
	if (n > f->max_body - f->len) {
		f->too_big = 1;
		return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
	}
	if (f->len + n + 1 > f->cap) {
		size_t cap = f->cap ? f->cap : 4096;
		while (cap < f->len + n + 1)
			cap *= 2;
		char *b = realloc(f->body, cap);
		if (!b)
			return 0;
		f->body = b;
		f->cap = cap;
	}
	memcpy(f->body + f->len, data, n);
	f->len += n;
	f->body[f->len] = '\0';
	return n;
}

static int to_curl_mask(int revents, int what)
{
	int mask = (revents & POLLIN ? CURL_CSELECT_IN : 0) |
	           (revents & POLLOUT ? CURL_CSELECT_OUT : 0);
	if (revents & (POLLERR | POLLHUP)) /* let curl find out by trying */
		mask |= CURL_CSELECT_ERR | (what & CURL_POLL_IN ? CURL_CSELECT_IN : 0) |
		        (what & CURL_POLL_OUT ? CURL_CSELECT_OUT : 0);
	return mask;
}

/* curl's timer is due: let curl act on it. curl calls timer_cb again only
 * when its next deadline changes; if it kept the same one (not quite due by
 * its own reading of the clock), look again in a millisecond rather than
 * lose the timer (it may be the only thing that ends a stalled request). */
static CURLMcode timer_due(fetch *f, int *running)
{
	int64_t was = f->timer_at;
	CURLMcode mc = curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, running);
	if (f->timer_at == was)
		f->timer_at = now_ns() + 1000000;
	return mc;
}

/* One wait for whatever curl asked for, then one socket_action. */
static CURLMcode step(fetch *f, int *running)
{
	int64_t wait = -1;
	if (f->timer_at >= 0) {
		wait = f->timer_at - now_ns();
		if (wait <= 0)
			return timer_due(f, running);
	}
	if (f->nsocks == 0) {
		/* Only a timer (or, in theory, nothing at all: then check again
		 * every 10 ms rather than trust that nothing can happen). */
		weft_sleep_ns(wait < 0 || wait > 10000000 ? 10000000 : wait);
		return timer_due(f, running);
	}
	if (f->epfd < 0 || f->nsocks == 1) {
		watch w = f->socks[0];
		/* Look before parking: a loopback connect or a reply that is
		 * already there costs a poll(2) instead of a park, and the request
		 * goes out now rather than after every fiber ahead in the queue. */
		struct pollfd p = {.fd = w.fd, .events = poll_events(w.what)};
		int r = poll(&p, 1, 0) == 1 && !(p.revents & POLLNVAL)
		                ? p.revents
		                : weft_wait_fd(w.fd, poll_events(w.what), wait);
		if (r == WEFT_ETIMEDOUT)
			return timer_due(f, running);
		if (r < 0)
			r = POLLERR; /* a socket curl closed behind our back: let it see */
		return curl_multi_socket_action(f->multi, w.fd, to_curl_mask(r, w.what), running);
	}
	int r = weft_wait_fd(f->epfd, POLLIN, wait);
	if (r == WEFT_ETIMEDOUT)
		return timer_due(f, running);
	struct epoll_event evs[MAX_SOCKETS];
	int n = epoll_wait(f->epfd, evs, MAX_SOCKETS, 0);
	CURLMcode mc = CURLM_OK;
	for (int i = 0; i < n && mc == CURLM_OK; i++) {
		int revents = (evs[i].events & EPOLLIN ? POLLIN : 0) |
		              (evs[i].events & EPOLLOUT ? POLLOUT : 0) |
		              (evs[i].events & EPOLLERR ? POLLERR : 0) |
		              (evs[i].events & EPOLLHUP ? POLLHUP : 0);
		mc = curl_multi_socket_action(f->multi, evs[i].data.fd,
		                              to_curl_mask(revents, CURL_POLL_INOUT), running);
	}
	return mc;
}

static void describe(const fetch *f, CURLcode rc, long timeout_ms, char *err, size_t size)
{
	if (f->too_big || rc == CURLE_FILESIZE_EXCEEDED)
		snprintf(err, size, "answer larger than %zu bytes", f->max_body);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(err, size, "timed out after %.3g s", (double)timeout_ms / 1000);
	else if (f->errbuf[0])
		snprintf(err, size, "%s", f->errbuf);
	else
		snprintf(err, size, "%s", curl_easy_strerror(rc));
	/* curl's messages sometimes end with a newline. */
	size_t n = strlen(err);
	while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == '\r'))
		err[--n] = '\0';
}

int ticker_fetch(const char *url, const ticker_fetch_opts *opts, ticker_response *resp, char *err,
                 size_t err_size)
{
	fetch f = {.epfd = -1, .timer_at = -1, .max_body = opts->max_body};
	int rc = -1;
	memset(resp, 0, sizeof(*resp));
	f.multi = curl_multi_init();
	f.easy = curl_easy_init();
	if (!f.multi || !f.easy) {
		snprintf(err, err_size, "cannot start a curl transfer (out of memory?)");
		goto out;
	}
	curl_easy_setopt(f.easy, CURLOPT_URL, url);
	curl_easy_setopt(f.easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(f.easy, CURLOPT_TIMEOUT_MS, opts->timeout_ms);
	curl_easy_setopt(f.easy, CURLOPT_CONNECTTIMEOUT_MS, opts->timeout_ms);
	curl_easy_setopt(f.easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(f.easy, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(f.easy, CURLOPT_ERRORBUFFER, f.errbuf);
	curl_easy_setopt(f.easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)opts->max_body);
	/* Redirects are not followed: an answer from another host would be
	 * shown under the symbol asked for. A 3xx reaches the caller as its
	 * status, with the Location in resp->redirect. */
	curl_easy_setopt(f.easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(f.easy, CURLOPT_ACCEPT_ENCODING, "");
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(f.easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(f.easy, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (opts->user_agent)
		curl_easy_setopt(f.easy, CURLOPT_USERAGENT, opts->user_agent);
	curl_multi_setopt(f.multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(f.multi, CURLMOPT_SOCKETDATA, &f);
	curl_multi_setopt(f.multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(f.multi, CURLMOPT_TIMERDATA, &f);
	if (curl_multi_add_handle(f.multi, f.easy) != CURLM_OK) {
		snprintf(err, err_size, "cannot start a curl transfer");
		goto out;
	}

	int running = 1;
	CURLMcode mc = curl_multi_socket_action(f.multi, CURL_SOCKET_TIMEOUT, 0, &running);
	while (mc == CURLM_OK && running && !f.failed_setup)
		mc = step(&f, &running);

	CURLcode result = CURLE_OK;
	int done = 0, left;
	CURLMsg *msg;
	while ((msg = curl_multi_info_read(f.multi, &left))) {
		if (msg->msg == CURLMSG_DONE) {
			result = msg->data.result;
			done = 1;
		}
	}
	if (mc != CURLM_OK) {
		snprintf(err, err_size, "curl: %s", curl_multi_strerror(mc));
	} else if (f.failed_setup) {
		snprintf(err, err_size, "cannot watch curl's sockets: %s", strerror(errno));
	} else if (!done) {
		snprintf(err, err_size, "curl stopped without finishing the transfer");
	} else if (result != CURLE_OK) {
		describe(&f, result, opts->timeout_ms, err, err_size);
	} else {
		curl_easy_getinfo(f.easy, CURLINFO_RESPONSE_CODE, &resp->status);
		char *loc = NULL;
		if (curl_easy_getinfo(f.easy, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc)
			snprintf(resp->redirect, sizeof(resp->redirect), "%s", loc);
		if (!f.body) /* an empty answer: give the caller "" */
			f.body = calloc(1, 1);
		if (!f.body) {
			snprintf(err, err_size, "out of memory");
		} else {
			resp->body = f.body;
			resp->len = f.len;
			f.body = NULL;
			rc = 0;
		}
	}
	curl_multi_remove_handle(f.multi, f.easy);
out:
	if (f.easy)
		curl_easy_cleanup(f.easy);
	if (f.multi)
		curl_multi_cleanup(f.multi);
	if (f.epfd >= 0)
		close(f.epfd);
	free(f.body);
	return rc;
}
