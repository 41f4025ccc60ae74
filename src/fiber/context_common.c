/* The parts of fiber/context.h that do not depend on the switch backend
 * (context.c or context_ucontext.c, one of which is built). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fiber/context.h"
#include "fiber/context_sanitizer.h"

void weft__context_init_thread(weft__context *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->flags = WEFT__CONTEXT_THREAD;
	weft__san_thread(ctx);
}

void weft__context_entry_returned(void)
{
	weft__log(WEFT_LOG_ERROR, "weft: a fiber's entry function returned; it must end with "
	                          "weft__context_switch(NULL, next)\n");
	abort();
}
