/* weft_strerror and weft_err_name, generated from WEFT_ERRNO_MAP, and
 * weft_version. */
#include "core/internal.h"
#include "weft/weft.h"

const char *weft_strerror(int err)
{
	switch (err) {
#define WEFT__STRERROR_CASE(name, value, msg) \
	case value:                           \
		return msg;
		WEFT_ERRNO_MAP(WEFT__STRERROR_CASE)
#undef WEFT__STRERROR_CASE
	}
	return "unknown weft error";
}

const char *weft_err_name(int err)
{
	switch (err) {
#define WEFT__ERRNAME_CASE(name, value, msg) \
	case value:                          \
		return "WEFT_" #name;
		WEFT_ERRNO_MAP(WEFT__ERRNAME_CASE)
#undef WEFT__ERRNAME_CASE
	}
	return "WEFT_E?";
}

const char *weft_version(void)
{
	return WEFT_VERSION;
}
