/* CUDA devices in a build without the CUDA toolkit: none, and why. */
#include "d5/machine.h"

#include <stdio.h>

void d5__cuda_query(d5_machine_info *m);

void d5__cuda_query(d5_machine_info *m)
{
    m->cuda_built = 0;
    m->cuda_device_count = 0;
    snprintf(m->cuda_status, sizeof m->cuda_status, "d5 was built without the CUDA toolkit");
}
