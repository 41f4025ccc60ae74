/* Symbol visibility for the weft library. Internal symbols are hidden by the
 * build (-fvisibility=hidden); only declarations marked WEFT_EXTERN are
 * exported from the shared library. */
#ifndef WEFT_EXPORT_H
#define WEFT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define WEFT_EXTERN __attribute__((visibility("default")))
#else
#define WEFT_EXTERN
#endif

#endif
