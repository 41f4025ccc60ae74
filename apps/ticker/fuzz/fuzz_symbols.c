/* libFuzzer target: the symbols file parser (symbols.h).
 * fuzz-sources below: the parser's sources, from the repository root.
 *
 * Checks, beyond "no crash, no sanitizer report": every symbol kept is
 * 1 .. TICKER_SYMBOL_MAX bytes of the allowed characters, upper-cased, and
 * lines only grow. */
// fuzz-sources: apps/ticker/symbols.c
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

static void on_bad(void *ctx, unsigned long line, const char *reason, const char *text, size_t len)
{
	size_t *count = ctx;
	volatile char sink = 0;
	for (size_t i = 0; i < len; i++) /* the reported text must be readable */
		sink ^= text[i];
	(void)sink;
	if (!reason || !line)
		abort();
	(*count)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ticker_symbols s = {0};
	size_t bad = 0;
	if (ticker_symbols_parse(&s, (const char *)data, size, on_bad, &bad) != 0)
		abort();
	if (bad != s.bad)
		abort();
	unsigned long last = 0;
	for (size_t i = 0; i < s.n; i++) {
		size_t n = strlen(s.v[i].text);
		if (n == 0 || n > TICKER_SYMBOL_MAX || s.v[i].line <= last)
			abort();
		last = s.v[i].line;
		for (size_t k = 0; k < n; k++) {
			char c = s.v[i].text[k];
			if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			      c == '-' || c == '^' || c == '='))
				abort();
		}
	}
	ticker_symbols_free(&s);
	return 0;
}
