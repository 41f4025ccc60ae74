/* The seed's input format (docs/seeds/apps-haunted.md):
 *
 *   file  := blank* dir (blank* ',' blank* dir)* blank* eol? blankline* EOF
 *   dir   := 'L' | 'R'
 *   blank := ' ' | '\t'        eol := '\n' | "\r\n"
 *
 * The seed says "following the aforementioned input format is a must", so
 * anything else is an error that names the line, the column and what was
 * expected. The scanner never reads past len and never relies on a NUL. */
#include "parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *haunted_dir_words(char dir)
{
	return dir == HAUNTED_LEFT ? "left to right" : "right to left";
}

void haunted_visitors_free(haunted_visitors *v)
{
	if (!v)
		return;
	free(v->dir);
	v->dir = NULL;
	v->count = 0;
}

typedef struct scanner {
	const char *p, *end;
	unsigned long line;
	const char *line_start;
	haunted_error *err;
} scanner;

static int fail(scanner *s, const char *at, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int fail(scanner *s, const char *at, const char *fmt, ...)
{
	va_list ap;
	s->err->line = s->line;
	s->err->column = (unsigned long)(at - s->line_start) + 1;
	va_start(ap, fmt);
	vsnprintf(s->err->msg, sizeof s->err->msg, fmt, ap);
	va_end(ap);
	return HAUNTED_EINPUT;
}

/* What a byte looks like in a message: 'x', "end of line", byte 0x01. */
static const char *describe(const scanner *s, char *buf, size_t size)
{
	if (s->p == s->end)
		return "end of file";
	unsigned char c = (unsigned char)*s->p;
	if (c == '\n' || (c == '\r' && s->p + 1 < s->end && s->p[1] == '\n'))
		return "end of line";
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

static void skip_blanks(scanner *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t'))
		s->p++;
}

static int at_eol(const scanner *s)
{
	return s->p < s->end &&
	       (*s->p == '\n' || (*s->p == '\r' && s->p + 1 < s->end && s->p[1] == '\n'));
}

static void next_line(scanner *s)
{
	s->p += *s->p == '\r' ? 2 : 1;
	s->line++;
	s->line_start = s->p;
}

static int expect_dir(scanner *s, const char *after)
{
	char buf[16];
	if (s->p < s->end && (*s->p == HAUNTED_LEFT || *s->p == HAUNTED_RIGHT))
		return 0;
	if (s->p < s->end && (*s->p == 'l' || *s->p == 'r'))
		return fail(s, s->p,
		            "expected 'L' or 'R'%s, found '%c' (directions are upper-case)", after,
		            *s->p);
	if (after[0] && (s->p == s->end || at_eol(s)))
		return fail(s, s->p, "expected 'L' or 'R'%s, found %s (no trailing comma)", after,
		            describe(s, buf, sizeof buf));
	return fail(s, s->p, "expected 'L' or 'R'%s, found %s", after,
	            describe(s, buf, sizeof buf));
}

int haunted_parse(const char *text, size_t len, haunted_visitors *out, haunted_error *err)
{
	scanner s = {text, text + len, 1, text, err};
	char buf[16];
	size_t cap = 0;
	int rc;

	out->dir = NULL;
	out->count = 0;
	memset(err, 0, sizeof *err);
	if (!text && len)
		return fail(&s, s.p, "no input");

	skip_blanks(&s);
	if (s.p == s.end || at_eol(&s)) {
		/* An empty first line: say so, whatever follows. */
		return fail(&s, s.p,
		            "no visitors: expected one line of comma-separated 'L' and 'R', "
		            "e.g. L,R,R,L");
	}
	for (;;) {
		if ((rc = expect_dir(&s, out->count ? " after ','" : "")) != 0)
			goto fail;
		if (out->count == HAUNTED_MAX_VISITORS) {
			rc = fail(&s, s.p, "too many visitors (at most %lu)", HAUNTED_MAX_VISITORS);
			goto fail;
		}
		if (out->count == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char *d = realloc(out->dir, ncap);
			if (!d) {
				rc = HAUNTED_ENOMEM;
				snprintf(err->msg, sizeof err->msg, "out of memory");
				goto fail;
			}
			out->dir = d;
			cap = ncap;
		}
		out->dir[out->count++] = *s.p++;
		skip_blanks(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			skip_blanks(&s);
			continue;
		}
		if (s.p == s.end || at_eol(&s))
			break;
		if (*s.p == HAUNTED_LEFT || *s.p == HAUNTED_RIGHT)
			rc = fail(&s, s.p, "expected ',' between visitors, found '%c'", *s.p);
		else
			rc = fail(&s, s.p,
			          "expected ',' or end of line after a direction, found %s",
			          describe(&s, buf, sizeof buf));
		goto fail;
	}
	/* The list is over: only blank lines may follow. */
	while (s.p < s.end) {
		if (at_eol(&s)) {
			next_line(&s);
			continue;
		}
		if (*s.p == ' ' || *s.p == '\t') {
			s.p++;
			continue;
		}
		rc = fail(&s, s.p,
		          "unexpected %s after the visitor list (the input is one line: "
		          "put every visitor on the first line)",
		          describe(&s, buf, sizeof buf));
		goto fail;
	}
	return HAUNTED_OK;
fail:
	haunted_visitors_free(out);
	return rc;
}
