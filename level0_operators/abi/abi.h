/* The loader's word on an operator built against another ABI version. */
#ifndef D5_ABI_H
#define D5_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Writes "built against operator ABI <found>; d5 loads ABI <ours>: ..." with
 * what to do about it (rebuild against this d5's include/d5/operator.h) into
 * buf, for the messages of d5_op_library_open and d5_op_create. */
void d5__op_abi_mismatch(uint32_t found, char *buf, size_t size);

#endif
