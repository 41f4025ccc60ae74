/* The log checker: reads what weft-haunted printed and verifies every rule
 * of the house, line by line, from the messages alone.
 *
 * Lines are exactly the seed's four messages (a trailing CR is tolerated):
 *
 *   Visitor N: Request to cross house (DIR)
 *   Visitor N: Waiting
 *   Visitor N: Cross house request granted (Current crossing: DIR, Number of visitors on house: K)
 *   Visitor N: Exit house (Current crossing: DIR, Number of visitors on house: K)
 *
 * Rules (the first broken one is reported with its line):
 *   - arrivals: visitors request in file order, numbered 1, 2, 3, ...; with
 *     the input at hand, each with the direction the input gave it;
 *   - strict FIFO by arrival: grants go in request order, across both
 *     directions, so nobody is ever overtaken (hence no starvation);
 *   - capacity: never more than `capacity` inside; K on a grant counts the
 *     new visitor, K on an exit is the count after leaving;
 *   - one direction at a time: a grant while others are inside is in their
 *     direction; DIR on an exit is the leaver's;
 *   - exit order equals entry order; every visitor enters once and leaves
 *     once, after entering; nobody is left waiting or inside at the end;
 *   - no idling: whenever the first waiting visitor may enter (the house is
 *     empty, or crossing its way with room), the next line grants it; a
 *     visitor who cannot enter on arrival says Waiting right after its
 *     request (the controller decides under one lock and prints at once).
 *
 * Because grants are FIFO and exits follow entries, the state is three
 * counters: visitors [next_exit, next_grant) are inside, visitors
 * [next_grant, requested) wait. */
#include "parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum msg_kind { MSG_REQUEST, MSG_WAITING, MSG_GRANT, MSG_EXIT };

static const char *const kind_name[] = {"request", "Waiting", "grant", "exit"};

typedef struct msg {
	enum msg_kind kind;
	unsigned long id;
	char dir;
	unsigned long count;
} msg;

/* What the next line must be, when the rules leave no choice. */
typedef struct expectation {
	int set;
	enum msg_kind kind;
	unsigned long id;
	const char *why;
} expectation;

typedef struct line_scan {
	const char *p, *end, *start;
} line_scan;

static int lit(line_scan *l, const char *s)
{
	size_t n = strlen(s);
	if ((size_t)(l->end - l->p) < n || memcmp(l->p, s, n) != 0) {
		/* Leave p at the first byte that differs, for the column. */
		while (l->p < l->end && *s && *l->p == *s) {
			l->p++;
			s++;
		}
		return -1;
	}
	l->p += n;
	return 0;
}

static int number(line_scan *l, unsigned long *out)
{
	unsigned long v = 0;
	const char *first = l->p;
	while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
		if (v > 999999999UL) {
			l->p = first;
			return -1;
		}
		v = v * 10 + (unsigned long)(*l->p - '0');
		l->p++;
	}
	if (l->p == first)
		return -1;
	*out = v;
	return 0;
}

static int direction(line_scan *l, char *dir)
{
	line_scan left = *l, right = *l;
	if (lit(&left, "left to right") == 0) {
		*l = left;
		*dir = HAUNTED_LEFT;
		return 0;
	}
	if (lit(&right, "right to left") == 0) {
		*l = right;
		*dir = HAUNTED_RIGHT;
		return 0;
	}
	l->p = left.p > right.p ? left.p : right.p;
	return -1;
}

/* Parses one line [p, end) into *m; on failure returns the offset of the
 * first byte that does not fit any message. */
static int parse_line(const char *p, const char *end, msg *m, size_t *bad)
{
	line_scan l = {p, end, p};
	if (lit(&l, "Visitor ") || number(&l, &m->id) || lit(&l, ": "))
		goto bad;
	switch (l.p < l.end ? *l.p : 0) {
	case 'R':
		m->kind = MSG_REQUEST;
		if (lit(&l, "Request to cross house (") || direction(&l, &m->dir) || lit(&l, ")"))
			goto bad;
		break;
	case 'W':
		m->kind = MSG_WAITING;
		if (lit(&l, "Waiting"))
			goto bad;
		break;
	case 'C':
		m->kind = MSG_GRANT;
		if (lit(&l, "Cross house request granted (Current crossing: ") ||
		    direction(&l, &m->dir) || lit(&l, ", Number of visitors on house: ") ||
		    number(&l, &m->count) || lit(&l, ")"))
			goto bad;
		break;
	case 'E':
		m->kind = MSG_EXIT;
		if (lit(&l, "Exit house (Current crossing: ") || direction(&l, &m->dir) ||
		    lit(&l, ", Number of visitors on house: ") || number(&l, &m->count) ||
		    lit(&l, ")"))
			goto bad;
		break;
	default:
		goto bad;
	}
	if (l.p == l.end)
		return 0;
bad:
	*bad = (size_t)(l.p - l.start);
	return -1;
}

typedef struct checker {
	const haunted_check_opts *opts;
	haunted_check_stats *st;
	haunted_error *err;
	unsigned long line;
	char *dir;             /* dir[id - 1] for every requested visitor */
	unsigned char *waited; /* printed Waiting */
	size_t cap;
	unsigned long requested, next_grant, next_exit;
	char crossing; /* direction of those inside, or 0 */
	expectation want;
} checker;

static int violation(checker *c, unsigned long column, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int violation(checker *c, unsigned long column, const char *fmt, ...)
{
	va_list ap;
	c->err->line = c->line;
	c->err->column = column;
	va_start(ap, fmt);
	vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
	va_end(ap);
	return HAUNTED_EINPUT;
}

static unsigned long inside(const checker *c)
{
	return c->next_grant - c->next_exit;
}

/* May the first waiting visitor enter now? */
static int head_may_enter(const checker *c)
{
	if (c->next_grant >= c->requested)
		return 0;
	if (inside(c) == 0)
		return 1;
	return c->dir[c->next_grant] == c->crossing && inside(c) < c->opts->capacity;
}

static const char *plural(unsigned long n)
{
	return n == 1 ? "" : "s";
}

static int on_arrive(checker *c, const msg *m)
{
	if (m->id != c->requested + 1)
		return violation(
		        c, 9,
		        "visitor %lu requests out of order: visitors arrive in input order, "
		        "so visitor %lu is next",
		        m->id, c->requested + 1);
	if (m->id > HAUNTED_MAX_VISITORS)
		return violation(c, 9, "too many visitors (at most %lu)", HAUNTED_MAX_VISITORS);
	const haunted_visitors *in = c->opts->input;
	if (in && m->id > in->count)
		return violation(c, 9, "visitor %lu is not in the input (%zu visitor%s)", m->id,
		                 in->count, plural(in->count));
	if (in && in->dir[m->id - 1] != m->dir)
		return violation(c, 1, "visitor %lu crosses %s, but the input says %s", m->id,
		                 haunted_dir_words(m->dir), haunted_dir_words(in->dir[m->id - 1]));
	if (c->requested == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 256;
		char *d = realloc(c->dir, ncap);
		if (!d)
			return HAUNTED_ENOMEM;
		c->dir = d;
		unsigned char *w = realloc(c->waited, ncap);
		if (!w)
			return HAUNTED_ENOMEM;
		c->waited = w;
		c->cap = ncap;
	}
	c->dir[c->requested] = m->dir;
	c->waited[c->requested] = 0;
	c->requested++;
	return 0;
}

static int on_waiting(checker *c, const msg *m)
{
	if (m->id == 0 || m->id > c->requested)
		return violation(c, 9, "visitor %lu waits before requesting", m->id);
	if (m->id <= c->next_grant)
		return violation(c, 9, "visitor %lu waits after it was granted", m->id);
	if (c->waited[m->id - 1])
		return violation(c, 9, "visitor %lu says Waiting twice", m->id);
	c->waited[m->id - 1] = 1;
	return 0;
}

static int on_grant(checker *c, const msg *m)
{
	unsigned long id = m->id;
	if (id == 0 || id > c->requested)
		return violation(c, 9, "visitor %lu is granted before requesting", id);
	if (id <= c->next_grant)
		return violation(c, 9, "visitor %lu is granted a second time", id);
	if (id != c->next_grant + 1) {
		c->st->overtaken++;
		return violation(c, 9,
		                 "visitor %lu is granted before visitor %lu, who arrived earlier "
		                 "(strict FIFO by arrival)",
		                 id, c->next_grant + 1);
	}
	if (m->dir != c->dir[id - 1])
		return violation(c, 1, "visitor %lu requested %s but is granted %s", id,
		                 haunted_dir_words(c->dir[id - 1]), haunted_dir_words(m->dir));
	if (inside(c) > 0 && c->crossing != m->dir)
		return violation(c, 1,
		                 "visitor %lu enters %s while %lu visitor%s cross%s %s (both "
		                 "directions inside)",
		                 id, haunted_dir_words(m->dir), inside(c), plural(inside(c)),
		                 inside(c) == 1 ? "es" : "", haunted_dir_words(c->crossing));
	if (inside(c) + 1 > c->opts->capacity)
		return violation(c, 1, "visitor %lu enters with %lu inside: capacity %lu exceeded",
		                 id, inside(c), c->opts->capacity);
	if (m->count != inside(c) + 1)
		return violation(c, 1,
		                 "visitor %lu's grant says %lu on the house, but %lu are inside "
		                 "with it",
		                 id, m->count, inside(c) + 1);
	if (inside(c) == 0 && c->crossing != m->dir) {
		if (c->crossing)
			c->st->turns++;
		c->crossing = m->dir;
	}
	c->next_grant++;
	if (inside(c) > c->st->max_inside)
		c->st->max_inside = inside(c);
	if (c->waited[id - 1])
		c->st->waited++;
	return 0;
}

static int on_leave(checker *c, const msg *m)
{
	unsigned long id = m->id;
	if (id == 0 || id > c->next_grant)
		return violation(c, 9, "visitor %lu exits without having entered", id);
	if (id <= c->next_exit)
		return violation(c, 9, "visitor %lu exits a second time", id);
	if (id != c->next_exit + 1)
		return violation(c, 9,
		                 "visitor %lu exits before visitor %lu, who entered earlier (exit "
		                 "order must equal entry order)",
		                 id, c->next_exit + 1);
	if (m->dir != c->dir[id - 1])
		return violation(c, 1, "visitor %lu crossed %s but exits %s", id,
		                 haunted_dir_words(c->dir[id - 1]), haunted_dir_words(m->dir));
	if (m->count != inside(c) - 1)
		return violation(c, 1,
		                 "visitor %lu's exit says %lu on the house, but %lu remain inside",
		                 id, m->count, inside(c) - 1);
	c->next_exit++;
	c->st->visitors++;
	return 0;
}

static const char *what(enum msg_kind k)
{
	return kind_name[k];
}

/* After a line: what the next must be, if anything. */
static void update_expectation(checker *c, const msg *m)
{
	c->want.set = 0;
	if (m->kind == MSG_REQUEST && m->id != c->next_grant + 1) {
		/* Others wait before it: it waits too. */
		c->want = (expectation){1, MSG_WAITING, m->id, "visitors who arrived earlier wait"};
		return;
	}
	if (m->kind == MSG_REQUEST && !head_may_enter(c)) {
		c->want = (expectation){1, MSG_WAITING, m->id,
		                        inside(c) >= c->opts->capacity
		                                ? "the house is full"
		                                : "the house is crossed the other way"};
		return;
	}
	if (head_may_enter(c))
		c->want = (expectation){1, MSG_GRANT, c->next_grant + 1,
		                        "it is first in line and may enter"};
}

static int check_line(checker *c, const char *p, const char *end)
{
	msg m;
	size_t bad;
	int rc;

	if (end > p && end[-1] == '\r')
		end--;
	if (parse_line(p, end, &m, &bad) != 0)
		return violation(c, (unsigned long)bad + 1,
		                 "not one of the four messages (Request to cross house, Waiting, "
		                 "Cross house request granted, Exit house)");
	switch (m.kind) {
	case MSG_REQUEST:
		rc = on_arrive(c, &m);
		break;
	case MSG_WAITING:
		rc = on_waiting(c, &m);
		break;
	case MSG_GRANT:
		rc = on_grant(c, &m);
		break;
	default:
		rc = on_leave(c, &m);
		break;
	}
	if (rc != 0)
		return rc;
	/* Checked after the rules above, whose messages are more precise. */
	if (c->want.set && (c->want.kind != m.kind || c->want.id != m.id))
		return violation(c, 1,
		                 "expected visitor %lu's %s here (%s), found visitor %lu's %s",
		                 c->want.id, what(c->want.kind), c->want.why, m.id, what(m.kind));
	if (!c->want.set && m.kind == MSG_WAITING)
		return violation(c, 1, "visitor %lu says Waiting but could enter at once", m.id);
	update_expectation(c, &m);
	return 0;
}

int haunted_check(const char *text, size_t len, const haunted_check_opts *opts,
                  haunted_check_stats *stats, haunted_error *err)
{
	checker c;
	int rc = HAUNTED_OK;

	memset(stats, 0, sizeof *stats);
	memset(err, 0, sizeof *err);
	memset(&c, 0, sizeof c);
	c.opts = opts;
	c.st = stats;
	c.err = err;
	if (opts->capacity < 1)
		return violation(&c, 0, "the capacity must be at least 1");

	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		c.line++;
		if ((rc = check_line(&c, p, eol)) != 0)
			goto out;
		p = nl ? nl + 1 : end;
	}
	c.line = 0;
	if (c.requested == 0) {
		rc = violation(&c, 0, "the log has no visitors");
		goto out;
	}
	if (c.want.set) {
		rc = violation(&c, 0, "the log ends before visitor %lu's %s (%s)", c.want.id,
		               what(c.want.kind), c.want.why);
		goto out;
	}
	if (c.next_grant < c.requested) {
		rc = violation(&c, 0, "visitor %lu never entered (%lu still waiting at the end)",
		               c.next_grant + 1, c.requested - c.next_grant);
		goto out;
	}
	if (c.next_exit < c.next_grant) {
		rc = violation(&c, 0, "visitor %lu never left (%lu still inside at the end)",
		               c.next_exit + 1, inside(&c));
		goto out;
	}
	unsigned long want =
	        opts->input ? (unsigned long)opts->input->count : opts->expect_visitors;
	if (want && c.requested != want) {
		rc = violation(&c, 0, "the log has %lu visitor%s, expected %lu", c.requested,
		               plural(c.requested), want);
		goto out;
	}
out:
	free(c.dir);
	free(c.waited);
	return rc;
}
