/* The symbols file parser (symbols.h). One pass over the buffer, one line
 * at a time; no line length limit (a long line is one bad symbol). */
#include "symbols.h"

#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

static int is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int is_symbol_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '^' || c == '=';
}

static int push(ticker_symbols *out, const char *s, size_t len, unsigned long line)
{
	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 64;
		ticker_symbol *v = realloc(out->v, cap * sizeof(*v));
		if (!v)
			return -1;
		out->v = v;
		out->cap = cap;
	}
	ticker_symbol *sym = &out->v[out->n++];
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		sym->text[i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
	}
	sym->text[len] = '\0';
	sym->line = line;
	return 0;
}

static void report(ticker_symbols *out, ticker_bad_line_fn bad, void *ctx, unsigned long line,
                   const char *reason, const char *s, size_t len)
{
	out->bad++;
	if (bad)
		bad(ctx, line, reason, s, len);
}

/* One line, without its \n: trim, cut the comment, check, append. */
static int parse_line(ticker_symbols *out, const char *s, size_t len, unsigned long line,
                      ticker_bad_line_fn bad, void *ctx)
{
	const char *hash = memchr(s, '#', len);
	if (hash)
		len = (size_t)(hash - s);
	while (len > 0 && is_blank((unsigned char)s[0])) {
		s++;
		len--;
	}
	while (len > 0 && is_blank((unsigned char)s[len - 1]))
		len--;
	if (len == 0)
		return 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (is_symbol_char(c))
			continue;
		report(out, bad, ctx, line,
		       is_blank(c) ? "more than one word on the line (one symbol per line)"
		                   : "invalid character (a symbol is letters, digits and . - ^ =)",
		       s, len);
		return 0;
	}
	if (len > TICKER_SYMBOL_MAX) {
		report(out, bad, ctx, line,
		       "symbol too long (at most " STR(TICKER_SYMBOL_MAX) " characters)", s, len);
		return 0;
	}
	return push(out, s, len, line);
}

int ticker_symbols_parse(ticker_symbols *out, const char *data, size_t len, ticker_bad_line_fn bad,
                         void *ctx)
{
	unsigned long line = 0;
	size_t pos = 0;
	while (pos < len) {
		const char *start = data + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		line++;
		if (parse_line(out, start, n, line, bad, ctx) != 0)
			return -1;
		pos += n + (nl != NULL);
	}
	return 0;
}

void ticker_symbols_free(ticker_symbols *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
