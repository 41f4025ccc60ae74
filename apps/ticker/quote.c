/* The quote answer parser (quote.h), on cJSON. Before cJSON sees the text,
 * one pass checks the nesting depth: cJSON recurses once per level and
 * allows 1000 levels, more than a 64 KiB fiber stack holds. */
#include "quote.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

static void set_why(char *why, size_t size, const char *fmt, const char *arg)
{
	if (why && size > 0)
		snprintf(why, size, fmt, arg ? arg : "");
}

/* Deepest [ / { nesting outside strings, stopping early past limit. */
static int too_deep(const char *s, size_t len, int limit)
{
	int depth = 0, in_string = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
		} else if (c == '"') {
			in_string = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > limit)
				return 1;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 0;
}

/* Where a string would hold a NUL character: a raw NUL byte (not JSON at
 * all, but cJSON, given a length, would copy it into the string) or a
 * \u0000 escape. Either way the C string cJSON makes would end there and
 * silently lose the rest (a company name cut short). Returns a reason, or
 * NULL. */
static const char *nul_in_text(const char *s, size_t len)
{
	if (memchr(s, '\0', len))
		return "a NUL byte in the answer";
	int in_string = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!in_string) {
			in_string = c == '"';
		} else if (c == '"') {
			in_string = 0;
		} else if (c == '\\' && i + 1 < len) {
			if (s[i + 1] == 'u' && len - i >= 6 && !memcmp(s + i + 2, "0000", 4))
				return "a string holds a NUL character (\\u0000)";
			i++;
		}
	}
	return NULL;
}

static size_t utf8_sequence(const unsigned char *s, size_t len, unsigned *cp)
{
	unsigned char c = s[0];
	size_t n;
	unsigned v, min;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

void ticker_clean_text(const char *s, size_t len, char *out, size_t out_size)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		unsigned cp = u[i];
		size_t n = cp < 0x80 ? 1 : utf8_sequence(u + i, len - i, &cp);
		int ok = n > 0 && cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f);
		size_t need = ok ? n : 1;
		if (o + need + 1 > out_size)
			break;
		if (ok)
			memcpy(out + o, s + i, n);
		else
			out[o] = '?';
		o += need;
		i += n > 0 ? n : 1;
	}
	out[o] = '\0';
}

void ticker_format_number(double v, char *out, size_t out_size)
{
	if (v > -1e17 && v < 1e17 && v == (double)(long long)v) {
		snprintf(out, out_size, "%lld", (long long)v);
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(out, out_size, "%.*g", p, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

/* A string field: absent or null keeps dflt; else it must be a string. */
static int get_string(const cJSON *obj, const char *key, char *out, size_t size)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsString(it) || !it->valuestring)
		return -1;
	ticker_clean_text(it->valuestring, strlen(it->valuestring), out, size);
	return 1;
}

/* A number field: absent or null keeps "unknown"; else a finite number. */
static int get_number(const cJSON *obj, const char *key, char *out, size_t size)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return -1;
	ticker_format_number(it->valuedouble, out, size);
	return 1;
}

/* cJSON gets its own NUL-terminated copy: with a length it should not read
 * past len, but the fuzz targets link the system's cJSON uninstrumented, so
 * ASan would not see it if it did; the terminator makes any such read stop
 * inside our buffer. The answers are small (--max-bytes, 1 MiB). */
static cJSON *parse(const char *body, size_t len)
{
	if (len == 0 || too_deep(body, len, TICKER_JSON_DEPTH))
		return NULL;
	char *copy = malloc(len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, body, len);
	copy[len] = '\0';
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(copy, len, &end, 0);
	/* Only blanks may follow the value. */
	for (const char *p = end; root && p < copy + len; p++) {
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
			cJSON_Delete(root);
			root = NULL;
		}
	}
	free(copy);
	return root;
}

static int error_text(const cJSON *root, char *out, size_t size)
{
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(root, "finance");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(fin, "error");
	const cJSON *desc = cJSON_GetObjectItemCaseSensitive(err, "description");
	if (!cJSON_IsString(desc) || !desc->valuestring || !desc->valuestring[0])
		return 0;
	ticker_clean_text(desc->valuestring, strlen(desc->valuestring), out, size);
	return 1;
}

int ticker_quote_error_text(const char *body, size_t len, char *out, size_t out_size)
{
	cJSON *root = parse(body, len);
	int found = root && out_size > 0 && error_text(root, out, out_size);
	cJSON_Delete(root);
	return found;
}

ticker_quote_status ticker_quote_parse(const char *body, size_t len, ticker_quote *q, char *why,
                                       size_t why_size)
{
	static const struct {
		const char *key;
		size_t off;
		unsigned bit;
	} numbers[] = {
	        {"marketCap", offsetof(ticker_quote, market_cap), TICKER_HAS_MARKET_CAP},
	        {"regularMarketPrice", offsetof(ticker_quote, price), TICKER_HAS_PRICE},
	        {"regularMarketChange", offsetof(ticker_quote, change), TICKER_HAS_CHANGE},
	};
	ticker_quote_status st = TICKER_QUOTE_MALFORMED;

	memset(q, 0, sizeof(*q));
	strcpy(q->company, "unknown");
	strcpy(q->symbol, "unknown");
	strcpy(q->market_cap, "unknown");
	strcpy(q->price, "unknown");
	strcpy(q->change, "unknown");

	if (len > 0 && too_deep(body, len, TICKER_JSON_DEPTH)) {
		set_why(why, why_size, "JSON nested deeper than %s levels", STR(TICKER_JSON_DEPTH));
		return st;
	}
	const char *nul = len > 0 ? nul_in_text(body, len) : NULL;
	if (nul) {
		set_why(why, why_size, "%s", nul);
		return st;
	}
	cJSON *root = parse(body, len);
	if (!root) {
		set_why(why, why_size, "%s", len == 0 ? "empty answer" : "not valid JSON");
		return st;
	}
	const cJSON *qr = cJSON_GetObjectItemCaseSensitive(root, "quoteResponse");
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(qr, "result");
	char text[128];
	if (!cJSON_IsObject(root)) {
		set_why(why, why_size, "%s", "answer is not a JSON object");
	} else if (!cJSON_IsObject(qr)) {
		if (error_text(root, text, sizeof(text)))
			set_why(why, why_size, "endpoint error: %s", text);
		else
			set_why(why, why_size, "%s", "no quoteResponse object in the answer");
	} else if (!cJSON_IsArray(result)) {
		set_why(why, why_size, "%s", "quoteResponse.result is not an array");
	} else if (!result->child) {
		st = TICKER_QUOTE_UNKNOWN;
		set_why(why, why_size, "%s", "unknown symbol");
	} else if (!cJSON_IsObject(result->child)) {
		set_why(why, why_size, "%s", "quoteResponse.result[0] is not an object");
	} else {
		const cJSON *r = result->child;
		st = TICKER_QUOTE_OK;
		int name = get_string(r, "shortName", q->company, sizeof(q->company));
		if (name == 0)
			name = get_string(r, "longName", q->company, sizeof(q->company));
		if (name < 0) {
			set_why(why, why_size, "%s", "shortName is not a string");
			st = TICKER_QUOTE_MALFORMED;
		} else if (get_string(r, "symbol", q->symbol, sizeof(q->symbol)) < 0) {
			set_why(why, why_size, "%s", "symbol is not a string");
			st = TICKER_QUOTE_MALFORMED;
		}
		for (size_t i = 0;
		     st == TICKER_QUOTE_OK && i < sizeof(numbers) / sizeof(numbers[0]); i++) {
			int rc = get_number(r, numbers[i].key, (char *)q + numbers[i].off,
			                    TICKER_FIELD_MAX);
			if (rc < 0) {
				set_why(why, why_size, "%s is not a finite number", numbers[i].key);
				st = TICKER_QUOTE_MALFORMED;
			} else if (rc > 0) {
				q->has |= numbers[i].bit;
			}
		}
	}
	cJSON_Delete(root);
	return st;
}
