/* Stands in for the nccl backend when d5 is built without the CUDA toolkit or
 * without NCCL: the row stays listed, and creating it says why it cannot. */
#include "../comm_internal.h"

const d5__comm_ops d5__comm_ops_nccl = {
    .unavailable = "d5 was built without NCCL (the nccl backend needs the CUDA toolkit and "
                   "NCCL's nccl.h and libnccl)",
};
