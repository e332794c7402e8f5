/* Status codes and the thread-local detail message. */
#include "d5/core.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const status_names[] = {
#define D5__STATUS_NAME(name, text) "D5_" #name,
    D5_STATUS_LIST(D5__STATUS_NAME)
#undef D5__STATUS_NAME
};

static const char *const status_texts[] = {
#define D5__STATUS_TEXT(name, text) text,
    D5_STATUS_LIST(D5__STATUS_TEXT)
#undef D5__STATUS_TEXT
};

_Static_assert(sizeof status_names / sizeof status_names[0] == D5_STATUS_COUNT,
               "status names out of sync with the enum");

static _Thread_local char last_error[1024];

const char *d5_status_name(d5_status s)
{
    if ((unsigned)s >= D5_STATUS_COUNT) return "D5_UNKNOWN";
    return status_names[s];
}

const char *d5_status_str(d5_status s)
{
    if ((unsigned)s >= D5_STATUS_COUNT) return "unknown status";
    return status_texts[s];
}

const char *d5_last_error(void)
{
    return last_error;
}

d5_status d5_error(d5_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

void d5_error_clear(void)
{
    last_error[0] = '\0';
}
