/** @file
 * Symbol visibility for the weft library. Internal symbols are hidden by the
 * build (-fvisibility=hidden); only declarations marked WEFT_EXTERN are
 * exported from the shared library. */
#ifndef WEFT_EXPORT_H
#define WEFT_EXPORT_H

/** @cond WEFT_PRIVATE */
#if defined(__GNUC__) || defined(__clang__)
#define WEFT__VISIBLE __attribute__((visibility("default")))
#else
#define WEFT__VISIBLE
#endif
/** @endcond */

/** Marks a declaration exported from libweft.so (default visibility). */
#define WEFT_EXTERN WEFT__VISIBLE

#endif
