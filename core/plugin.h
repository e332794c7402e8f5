/* d5's plugins: the parts of d5 that need a vendor's libraries (the CUDA
 * runtime, cuBLAS, cuDNN, NCCL) are shared objects beside d5's libraries,
 * loaded with dlopen the first time they are asked for. d5 itself then starts
 * without loading those libraries, and the same build runs on machines with
 * and without them. Internal to d5: exported only for d5's other libraries.
 *
 * A plugin named NAME is the file libd5_NAME.so, found in $D5_PLUGIN_DIR when
 * that variable is set and not empty, else in the folder d5/ beside the
 * library that holds d5's core (lib/d5 once installed, core/d5 in a build
 * tree), else in ../lib/d5 from there (a d5 linked statically, in bin/). It
 * exports one function, d5_plugin_NAME, which returns its table of functions
 * (a struct its loader knows) when the ABI version it is given is its own,
 * else NULL. A plugin stays loaded until the process ends. */
#ifndef D5_CORE_PLUGIN_H
#define D5_CORE_PLUGIN_H

#include "d5/core.h"

#include <stddef.h>
#include <stdint.h>

/* Bumped whenever a plugin table or a type it passes changes. */
#define D5__PLUGIN_ABI 2u

typedef const void *(*d5__plugin_entry_fn)(uint32_t abi);

/* The table of plugin `name` ("cuda"), loading it on the first call; later
 * calls return the same answer, success or failure. Thread-safe. On failure
 * *table is NULL, `why` (never NULL) says why and d5_last_error is left
 * alone: D5_ERR_UNSUPPORTED "plugin not built (no <path>)";
 * D5_ERR_NODEVICE "<library> not found: <the loader's words>" when a library
 * the plugin needs is missing here; D5_ERR_BACKEND when the plugin cannot be
 * loaded otherwise or is of another ABI version. */
D5_API d5_status d5__plugin_load(const char *name, const void **table, char *why, size_t why_size);
/* The folder plugins are looked for in first (see above), or "" when it
 * cannot be found. */
D5_API void d5__plugin_dir(char *buf, size_t size);

#endif
