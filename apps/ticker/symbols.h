/* The ticker's symbols file: one symbol per line, blank lines and `#`
 * comments (a whole line, or the rest of a line) allowed. Parsing works on
 * a buffer in memory, touches no global state and never stops at a bad
 * line: each one is reported through a callback and skipped, so the caller
 * decides what a bad line costs (weft-ticker: a message naming the file and
 * line, and a non-zero exit status once every good symbol was fetched). */
#ifndef TICKER_SYMBOLS_H
#define TICKER_SYMBOLS_H
#include <stddef.h>

/* Longest symbol accepted, in bytes. Yahoo's own are shorter than 24
 * (option contracts such as AAPL240119C00190000 are the longest). */
#define TICKER_SYMBOL_MAX 24

typedef struct ticker_symbol {
	char text[TICKER_SYMBOL_MAX + 1]; /* upper-cased, NUL-terminated */
	unsigned long line;               /* 1-based line in the file */
} ticker_symbol;

typedef struct ticker_symbols {
	ticker_symbol *v; /* in file order */
	size_t n;
	size_t cap;
	size_t bad; /* lines reported to the callback */
} ticker_symbols;

/* Called once per bad line: reason is a short phrase ("symbol too long"),
 * text/len the offending symbol as written, trimmed of blanks and of any
 * comment (not NUL-terminated; may hold any byte). */
typedef void (*ticker_bad_line_fn)(void *ctx, unsigned long line, const char *reason,
                                   const char *text, size_t len);

/* ticker_symbols_parse appends the symbols of data[0 .. len) to *out (which
 * starts zeroed, or holds symbols already) and reports bad lines to bad (may
 * be NULL). A symbol is 1 .. TICKER_SYMBOL_MAX of: letters, digits and
 * . - ^ = (BRK-B, ^GSPC, EURUSD=X); case does not matter. Lines end with \n,
 * \r\n or the end of the buffer. Returns 0, or -1 when memory ran out (what
 * was parsed so far stays in *out). */
int ticker_symbols_parse(ticker_symbols *out, const char *data, size_t len, ticker_bad_line_fn bad,
                         void *ctx);

/* ticker_symbols_free releases *s and zeroes it. */
void ticker_symbols_free(ticker_symbols *s);

#endif
