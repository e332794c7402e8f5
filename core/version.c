/* The version of the library. */
#include "d5/core.h"
#include "d5_buildinfo.h"

const char *d5_version(void)
{
    return D5_VERSION_STRING;
}
