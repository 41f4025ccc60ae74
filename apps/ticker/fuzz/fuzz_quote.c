/* libFuzzer target: the quote answer parser (quote.h) on cJSON.
 * fuzz-sources below: the parser's sources and libraries.
 *
 * The input is copied into a buffer of exactly its size, so reading past
 * len is an ASan report. Checks, beyond "no crash": every field is a
 * NUL-terminated string of the clean subset (no control characters), and
 * the number fields read back as finite numbers. */
// fuzz-sources: apps/ticker/quote.c -lcjson
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"

static void check_clean(const char *s, size_t size)
{
	size_t n = strnlen(s, size);
	if (n == size)
		abort(); /* not terminated */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static void check_number(const char *s, int present)
{
	if (!present) {
		if (strcmp(s, "unknown"))
			abort();
		return;
	}
	char *end;
	double v = strtod(s, &end);
	if (*end || !isfinite(v))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	ticker_quote q;
	char why[100];
	ticker_quote_status st = ticker_quote_parse(copy, size, &q, why, sizeof(why));
	if (st == TICKER_QUOTE_OK) {
		check_clean(q.company, sizeof(q.company));
		check_clean(q.symbol, sizeof(q.symbol));
		check_number(q.market_cap, q.has & TICKER_HAS_MARKET_CAP);
		check_number(q.price, q.has & TICKER_HAS_PRICE);
		check_number(q.change, q.has & TICKER_HAS_CHANGE);
	} else if (st == TICKER_QUOTE_UNKNOWN || st == TICKER_QUOTE_MALFORMED) {
		check_clean(why, sizeof(why));
	} else {
		abort();
	}
	char text[64];
	if (ticker_quote_error_text(copy, size, text, sizeof(text)))
		check_clean(text, sizeof(text));
	free(copy);
	return 0;
}
