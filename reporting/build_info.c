/* Version and build information carried by every report. */
#include "d5/report.h"
#include "d5/threads.h"
#include "d5_buildinfo.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

void d5_build_info_get(d5_build_info *out)
{
    memset(out, 0, sizeof *out);
    out->version = D5_VERSION_STRING;
    out->git_commit = D5_GIT_COMMIT;
    out->compiler = D5_COMPILER;
    out->build_type = D5_BUILD_TYPE;
    out->flags = D5_BUILD_FLAGS;
    out->system = D5_SYSTEM;
    out->cuda = D5_HAVE_CUDA;
    out->cuda_toolkit = D5_CUDA_TOOLKIT_VERSION;
    snprintf(out->jansson, sizeof out->jansson, "%s", jansson_version_str());
    snprintf(out->zlib, sizeof out->zlib, "%s", zlibVersion());
    d5_blas_info blas;
    d5_blas_info_get(&blas);
    snprintf(out->openblas, sizeof out->openblas, "%s", blas.config);
}
