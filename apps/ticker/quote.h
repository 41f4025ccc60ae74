/* One answer of the quote endpoint: the JSON the seed's ticker read,
 *
 *   {"quoteResponse": {"result": [{"shortName": "Apple Inc.",
 *     "symbol": "AAPL", "marketCap": 2649000000000,
 *     "regularMarketPrice": 171.48, "regularMarketChange": 1.27}],
 *     "error": null}}
 *
 * parsed with cJSON into the five fields of the seed's table, as text ready
 * to print. An empty `result` is an unknown symbol. A field that is absent
 * or null shows as "unknown", as in the seed; a field of the wrong type
 * makes the answer malformed, and so does a NUL character in the answer (a
 * raw NUL byte, or a \u0000 escape in a string), which a C string would
 * silently cut short. Strings are cleaned for a terminal: control
 * characters and invalid UTF-8 become '?'. */
#ifndef TICKER_QUOTE_H
#define TICKER_QUOTE_H
#include <stddef.h>

#define TICKER_NAME_MAX   96 /* bytes of a company name kept, with the NUL */
#define TICKER_FIELD_MAX  32 /* bytes of a symbol or number, with the NUL */
/* Deepest nesting of arrays and objects accepted. The answer is parsed on
 * a fiber's stack, and cJSON recurses once per level. */
#define TICKER_JSON_DEPTH 32

typedef enum ticker_quote_status {
	TICKER_QUOTE_OK = 0,
	TICKER_QUOTE_UNKNOWN = 1,   /* well-formed, empty result */
	TICKER_QUOTE_MALFORMED = 2, /* not JSON, or not the expected shape */
} ticker_quote_status;

/* Which number fields were present (bits of ticker_quote.has). */
enum { TICKER_HAS_MARKET_CAP = 1, TICKER_HAS_PRICE = 2, TICKER_HAS_CHANGE = 4 };

typedef struct ticker_quote {
	char company[TICKER_NAME_MAX];     /* shortName, or "unknown" */
	char symbol[TICKER_FIELD_MAX];     /* symbol, or "unknown" */
	char market_cap[TICKER_FIELD_MAX]; /* a JSON number's text, or "unknown" */
	char price[TICKER_FIELD_MAX];
	char change[TICKER_FIELD_MAX];
	unsigned has; /* TICKER_HAS_* */
} ticker_quote;

/* ticker_quote_parse parses body[0 .. len) (need not be NUL-terminated)
 * into *q. On TICKER_QUOTE_MALFORMED, and on TICKER_QUOTE_UNKNOWN, why (if
 * not NULL) receives a short reason, truncated to why_size. Never reads past
 * len; allocates a terminated copy of the body and cJSON's tree, and frees
 * both before returning. */
ticker_quote_status ticker_quote_parse(const char *body, size_t len, ticker_quote *q, char *why,
                                       size_t why_size);

/* ticker_quote_error_text looks in an error answer (HTTP 4xx/5xx) for the
 * endpoint's explanation, {"finance": {"error": {"description": "..."}}},
 * and copies it, cleaned, into out. Returns 1 if found, else 0. */
int ticker_quote_error_text(const char *body, size_t len, char *out, size_t out_size);

/* ticker_format_number writes v as the shortest text that reads back as
 * the same double (whole numbers below 1e17 without an exponent). */
void ticker_format_number(double v, char *out, size_t out_size);

/* ticker_clean_text copies len bytes of s into out (out_size > 0) as valid
 * UTF-8 without control characters (each offending byte becomes '?'),
 * truncated at a character boundary. */
void ticker_clean_text(const char *s, size_t len, char *out, size_t out_size);

#endif
