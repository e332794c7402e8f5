/* d5 version: version and build information. */
#include "cli.h"

int cmd_version(int argc, char **argv)
{
    const cli_spec spec = {.command = "version",
                           .synopsis = "",
                           .description = "Prints d5's version, the commit and compiler it was "
                                          "built with, and the versions of the libraries it uses."};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    d5_build_info b;
    d5_build_info_get(&b);
    printf("d5 %s\n", b.version);
    printf("  commit     : %s\n", b.git_commit);
    printf("  compiler   : %s\n", b.compiler);
    printf("  build type : %s\n", b.build_type);
    printf("  flags      : %s\n", b.flags[0] ? b.flags : "(none)");
    printf("  system     : %s\n", b.system);
    printf("  cuda       : %s%s\n", b.cuda ? "built with toolkit " : "not built",
           b.cuda ? b.cuda_toolkit : "");
    printf("  jansson    : %s\n", b.jansson);
    printf("  zlib       : %s\n", b.zlib);
    printf("  openblas   : %s\n", b.openblas);
    return D5_EXIT_OK;
}
