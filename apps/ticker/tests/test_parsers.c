/* Unit tests of weft-ticker's two parsers: the symbols file (symbols.h)
 * and the quote answer (quote.h).
 *
 *   test_ticker_parsers <case>     (or `all`)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/unit_main.h"

#include "quote.h"
#include "symbols.h"

/* ---------------------------------------------------------- symbols */

typedef struct bad_log {
	int n;
	unsigned long lines[16];
	char reasons[16][96];
} bad_log;

static void on_bad(void *ctx, unsigned long line, const char *reason, const char *text, size_t len)
{
	bad_log *log = ctx;
	(void)text;
	(void)len;
	if (log->n < 16) {
		log->lines[log->n] = line;
		snprintf(log->reasons[log->n], sizeof(log->reasons[0]), "%s", reason);
	}
	log->n++;
}

static void parse_symbols(const char *text, size_t len, ticker_symbols *s, bad_log *log)
{
	memset(s, 0, sizeof(*s));
	memset(log, 0, sizeof(*log));
	assert_int_equal(ticker_symbols_parse(s, text, len, on_bad, log), 0);
	assert_int_equal((int)s->bad, log->n);
}

static void symbols_basic(void **state)
{
	(void)state;
	const char text[] = "aapl\nMSFT\nbrk-b\n^gspc\neurusd=x\n";
	ticker_symbols s;
	bad_log log;
	parse_symbols(text, sizeof(text) - 1, &s, &log);
	assert_int_equal(s.n, 5);
	assert_int_equal(log.n, 0);
	assert_string_equal(s.v[0].text, "AAPL");
	assert_string_equal(s.v[1].text, "MSFT");
	assert_string_equal(s.v[2].text, "BRK-B");
	assert_string_equal(s.v[3].text, "^GSPC");
	assert_string_equal(s.v[4].text, "EURUSD=X");
	assert_int_equal(s.v[4].line, 5);
	ticker_symbols_free(&s);
	assert_null(s.v);
}

static void symbols_comments_blanks(void **state)
{
	(void)state;
	const char text[] = "# header\n\n   \n\tAAPL  # apple\n#MSFT\n  nvda\t\n";
	ticker_symbols s;
	bad_log log;
	parse_symbols(text, sizeof(text) - 1, &s, &log);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[0].text, "AAPL");
	assert_int_equal(s.v[0].line, 4);
	assert_string_equal(s.v[1].text, "NVDA");
	assert_int_equal(s.v[1].line, 6);
	ticker_symbols_free(&s);
}

static void symbols_line_endings(void **state)
{
	(void)state;
	const char text[] = "AAPL\r\nMSFT\r\nGOOG"; /* CRLF, and no final newline */
	ticker_symbols s;
	bad_log log;
	parse_symbols(text, sizeof(text) - 1, &s, &log);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.v[1].text, "MSFT");
	assert_string_equal(s.v[2].text, "GOOG");
	assert_int_equal(s.v[2].line, 3);
	ticker_symbols_free(&s);
}

static void symbols_bad_lines(void **state)
{
	(void)state;
	const char text[] = "AAPL\nAA PL\nMS$FT\nABCDEFGHIJKLMNOPQRSTUVWXYZ\nNVDA\n"
	                    "x\0y\nABCDEFGHIJKLMNOPQRSTUVWX\n";
	ticker_symbols s;
	bad_log log;
	parse_symbols(text, sizeof(text) - 1, &s, &log);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.v[0].text, "AAPL");
	assert_string_equal(s.v[1].text, "NVDA");
	assert_int_equal(s.v[1].line, 5);
	assert_string_equal(s.v[2].text, "ABCDEFGHIJKLMNOPQRSTUVWX"); /* exactly 24 */
	assert_int_equal(log.n, 4);
	assert_int_equal(log.lines[0], 2);
	assert_non_null(strstr(log.reasons[0], "one symbol per line"));
	assert_int_equal(log.lines[1], 3);
	assert_non_null(strstr(log.reasons[1], "invalid character"));
	assert_int_equal(log.lines[2], 4);
	assert_non_null(strstr(log.reasons[2], "too long"));
	assert_int_equal(log.lines[3], 6); /* the NUL byte */
	ticker_symbols_free(&s);
}

static void symbols_empty(void **state)
{
	(void)state;
	ticker_symbols s;
	bad_log log;
	parse_symbols("", 0, &s, &log);
	assert_int_equal(s.n, 0);
	parse_symbols("\n\n# x\n", 6, &s, &log);
	assert_int_equal(s.n, 0);
	ticker_symbols_free(&s);
}

static void symbols_many(void **state)
{
	(void)state;
	size_t n = 5000;
	char *text = malloc(n * 8);
	assert_non_null(text);
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "T%04zu\n", i);
	ticker_symbols s;
	bad_log log;
	parse_symbols(text, len, &s, &log);
	assert_int_equal(s.n, n);
	assert_string_equal(s.v[4999].text, "T4999");
	assert_int_equal(s.v[4999].line, 5000);
	free(text);
	ticker_symbols_free(&s);
}

/* ------------------------------------------------------------ quote */

static ticker_quote_status parse_quote(const char *json, ticker_quote *q, char *why)
{
	why[0] = '\0';
	return ticker_quote_parse(json, strlen(json), q, why, 120);
}

static void quote_ok(void **state)
{
	(void)state;
	ticker_quote q;
	char why[120];
	const char *json =
	        "{\"quoteResponse\": {\"result\": [{\"shortName\": \"Apple Inc.\", "
	        "\"symbol\": \"AAPL\", \"marketCap\": 2649000000000, "
	        "\"regularMarketPrice\": 171.48, \"regularMarketChange\": -0.7699890136718750}],"
	        " \"error\": null}}\n";
	assert_int_equal(parse_quote(json, &q, why), TICKER_QUOTE_OK);
	assert_string_equal(q.company, "Apple Inc.");
	assert_string_equal(q.symbol, "AAPL");
	assert_string_equal(q.market_cap, "2649000000000");
	assert_string_equal(q.price, "171.48");
	assert_string_equal(q.change, "-0.769989013671875");
	assert_int_equal(q.has, TICKER_HAS_MARKET_CAP | TICKER_HAS_PRICE | TICKER_HAS_CHANGE);
}

static void quote_not_terminated(void **state)
{
	(void)state;
	/* The parser must stop at len: the bytes after it are not JSON. */
	const char json[] = "{\"quoteResponse\":{\"result\":[{\"symbol\":\"X\"}]}}GARBAGE";
	ticker_quote q;
	char why[120];
	assert_int_equal(ticker_quote_parse(json, sizeof(json) - 1 - 7, &q, why, sizeof(why)),
	                 TICKER_QUOTE_OK);
	assert_string_equal(q.symbol, "X");
	assert_int_equal(ticker_quote_parse(json, sizeof(json) - 1, &q, why, sizeof(why)),
	                 TICKER_QUOTE_MALFORMED);
	assert_string_equal(why, "not valid JSON");
}

static void quote_missing_fields(void **state)
{
	(void)state;
	ticker_quote q;
	char why[120];
	const char *json = "{\"quoteResponse\":{\"result\":[{\"symbol\":\"^GSPC\","
	                   "\"longName\":\"S&P 500\",\"marketCap\":null,"
	                   "\"regularMarketPrice\":5204.34}]}}";
	assert_int_equal(parse_quote(json, &q, why), TICKER_QUOTE_OK);
	assert_string_equal(q.company, "S&P 500");
	assert_string_equal(q.market_cap, "unknown");
	assert_string_equal(q.change, "unknown");
	assert_string_equal(q.price, "5204.34");
	assert_int_equal(q.has, TICKER_HAS_PRICE);
}

static void quote_unknown(void **state)
{
	(void)state;
	ticker_quote q;
	char why[120];
	assert_int_equal(parse_quote("{\"quoteResponse\":{\"result\":[],\"error\":null}}", &q, why),
	                 TICKER_QUOTE_UNKNOWN);
	assert_string_equal(why, "unknown symbol");
}

static void quote_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *json, *why;
	} cases[] = {
	        {"", "empty answer"},
	        {"<html>", "not valid JSON"},
	        {"{\"quoteResponse\":{\"result\":[{\"symbol\":\"A\"", "not valid JSON"},
	        {"[1,2]", "answer is not a JSON object"},
	        {"{}", "no quoteResponse object in the answer"},
	        {"{\"quoteResponse\":{\"result\":{}}}", "quoteResponse.result is not an array"},
	        {"{\"quoteResponse\":{\"result\":[7]}}",
	         "quoteResponse.result[0] is not an object"},
	        {"{\"quoteResponse\":{\"result\":[{\"shortName\":42}]}}",
	         "shortName is not a string"},
	        {"{\"quoteResponse\":{\"result\":[{\"symbol\":[]}]}}", "symbol is not a string"},
	        {"{\"quoteResponse\":{\"result\":[{\"regularMarketPrice\":\"12\"}]}}",
	         "regularMarketPrice is not a finite number"},
	        {"{\"quoteResponse\":{\"result\":[{\"marketCap\":1e999}]}}",
	         "marketCap is not a finite number"},
	        {"{\"finance\":{\"result\":null,\"error\":{\"code\":\"Unauthorized\","
	         "\"description\":\"Invalid Crumb\"}}}",
	         "endpoint error: Invalid Crumb"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ticker_quote q;
		char why[120];
		assert_int_equal(parse_quote(cases[i].json, &q, why), TICKER_QUOTE_MALFORMED);
		assert_string_equal(why, cases[i].why);
		assert_string_equal(q.company, "unknown");
	}
}

static void quote_deep(void **state)
{
	(void)state;
	size_t depth = 100000;
	char *json = malloc(2 * depth + 1);
	assert_non_null(json);
	memset(json, '[', depth);
	memset(json + depth, ']', depth);
	json[2 * depth] = '\0';
	ticker_quote q;
	char why[120];
	assert_int_equal(parse_quote(json, &q, why), TICKER_QUOTE_MALFORMED);
	assert_string_equal(why, "JSON nested deeper than 32 levels");
	/* Brackets inside strings do not count. */
	const char *ok = "{\"quoteResponse\":{\"result\":[{\"shortName\":\"[[[[[[[[[[[[[[[[[[[["
	                 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}]}}";
	assert_int_equal(parse_quote(ok, &q, why), TICKER_QUOTE_OK);
	free(json);
}

static void quote_clean_strings(void **state)
{
	(void)state;
	ticker_quote q;
	char why[120];
	/* An escape sequence, a C1 control, invalid UTF-8 escaped as JSON can't
	 * carry it, so it comes as raw bytes; and a valid accented letter. */
	const char json[] = "{\"quoteResponse\":{\"result\":[{\"shortName\":"
	                    "\"A\\u001b[31mB\\u0085C\xff\xc3\xa9\"}]}}";
	assert_int_equal(parse_quote(json, &q, why), TICKER_QUOTE_OK);
	assert_string_equal(q.company, "A?[31mB?C?\xc3\xa9");

	char out[8];
	ticker_clean_text("abc\xc3\xa9\xc3\xa9xyz", 10, out, sizeof(out));
	assert_string_equal(out, "abc\xc3\xa9\xc3\xa9"); /* 7 bytes, never half a letter */
	ticker_clean_text("abcd\xe2\x82\xac", 7, out, 6);
	assert_string_equal(out, "abcd");
	ticker_clean_text("\xed\xa0\x80", 3, out, sizeof(out)); /* a surrogate */
	assert_string_equal(out, "???");
}

static void quote_long_strings(void **state)
{
	(void)state;
	char json[700];
	char name[301];
	memset(name, 'N', 300);
	name[300] = '\0';
	snprintf(json, sizeof(json),
	         "{\"quoteResponse\":{\"result\":[{\"shortName\":\"%s\",\"symbol\":\"%s\"}]}}",
	         name, name);
	ticker_quote q;
	char why[120];
	assert_int_equal(parse_quote(json, &q, why), TICKER_QUOTE_OK);
	assert_int_equal(strlen(q.company), TICKER_NAME_MAX - 1);
	assert_int_equal(strlen(q.symbol), TICKER_FIELD_MAX - 1);
}

/* A NUL inside a string, raw or as \u0000, would cut the C string short
 * ("Evil" for "Evil\0Corp"): the quote is refused instead. An escaped
 * backslash before "u0000" is not an escape of a NUL. */
static void quote_nul(void **state)
{
	(void)state;
	ticker_quote q;
	char why[120];
	static const char raw[] = "{\"quoteResponse\":{\"result\":[{\"shortName\":\"Evil\0Corp\","
	                          "\"symbol\":\"EVIL\"}]}}";
	assert_int_equal(ticker_quote_parse(raw, sizeof(raw) - 1, &q, why, sizeof(why)),
	                 TICKER_QUOTE_MALFORMED);
	assert_string_equal(why, "a NUL byte in the answer");

	const char *esc = "{\"quoteResponse\":{\"result\":[{\"shortName\":\"Evil\\u0000Corp\","
	                  "\"symbol\":\"EVIL\"}]}}";
	assert_int_equal(parse_quote(esc, &q, why), TICKER_QUOTE_MALFORMED);
	assert_string_equal(why, "a string holds a NUL character (\\u0000)");

	const char *esc_upper = "{\"quoteResponse\":{\"result\":[{\"symbol\":\"E\\u0000\"}]}}";
	assert_int_equal(parse_quote(esc_upper, &q, why), TICKER_QUOTE_MALFORMED);

	/* "\\u0000" in JSON is a backslash, then the text u0000: fine. */
	const char *ok = "{\"quoteResponse\":{\"result\":[{\"shortName\":\"A\\\\u0000B\"}]}}";
	assert_int_equal(parse_quote(ok, &q, why), TICKER_QUOTE_OK);
	assert_string_equal(q.company, "A\\u0000B");
	/* And \u0001 is a control character, shown as '?'. */
	const char *ctl = "{\"quoteResponse\":{\"result\":[{\"shortName\":\"A\\u0001B\"}]}}";
	assert_int_equal(parse_quote(ctl, &q, why), TICKER_QUOTE_OK);
	assert_string_equal(q.company, "A?B");
}

static void quote_error_text(void **state)
{
	(void)state;
	char out[64];
	const char *json =
	        "{\"finance\":{\"error\":{\"description\":\"injected failure (HTTP 503)\"}}}";
	assert_int_equal(ticker_quote_error_text(json, strlen(json), out, sizeof(out)), 1);
	assert_string_equal(out, "injected failure (HTTP 503)");
	assert_int_equal(ticker_quote_error_text("oops", 4, out, sizeof(out)), 0);
}

static void format_numbers(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *text;
	} cases[] = {
	        {0, "0"},
	        {-0.0, "0"},
	        {171.48, "171.48"},
	        {-5.3, "-5.3"},
	        {1e20, "1e+20"},
	        {0.1, "0.1"},
	        {2649000000000, "2649000000000"},
	        {1.5e-7, "1.5e-07"},
	        {-12, "-12"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[TICKER_FIELD_MAX];
		ticker_format_number(cases[i].v, out, sizeof(out));
		assert_string_equal(out, cases[i].text);
	}
}

static const struct CMUnitTest cases[] = {
        cmocka_unit_test(symbols_basic),
        cmocka_unit_test(symbols_comments_blanks),
        cmocka_unit_test(symbols_line_endings),
        cmocka_unit_test(symbols_bad_lines),
        cmocka_unit_test(symbols_empty),
        cmocka_unit_test(symbols_many),
        cmocka_unit_test(quote_ok),
        cmocka_unit_test(quote_not_terminated),
        cmocka_unit_test(quote_missing_fields),
        cmocka_unit_test(quote_unknown),
        cmocka_unit_test(quote_malformed),
        cmocka_unit_test(quote_deep),
        cmocka_unit_test(quote_clean_strings),
        cmocka_unit_test(quote_long_strings),
        cmocka_unit_test(quote_error_text),
        cmocka_unit_test(quote_nul),
        cmocka_unit_test(format_numbers),
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, "ticker_parsers", cases, sizeof cases / sizeof cases[0]);
}
