/* The backend table (backends.def) as rows, without MPI types, so that a
 * build without MPI lists the same backends. */
#ifndef D5_COMM_BACKENDS_H
#define D5_COMM_BACKENDS_H

#include "d5/distributed.h"

struct d5__comm_ops;

/* One row of backends.def. */
typedef struct d5__backend {
    const char *name, *description;
    int32_t exact_counts;
    const struct d5__comm_ops *ops; /* NULL in a build without MPI */
} d5__backend;

/* The row of a name, or NULL. */
const d5__backend *d5__backend_find(const char *name);
size_t d5__backend_count(void);
const d5__backend *d5__backend_at(size_t i);
/* NULL when the backend is built; else why not ("d5 was built without NCCL ..."). */
const char *d5__backend_unavailable(const d5__backend *b);
/* "mpi, ring, recdbl, nccl" */
void d5__backend_names(char *buf, size_t size);

#endif
