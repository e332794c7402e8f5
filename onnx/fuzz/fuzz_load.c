/* libFuzzer target for the ONNX loader: any byte string must either load or
 * fail with a status, never crash, leak or read out of bounds. A network that
 * loads is checked and its shapes inferred, which must not crash either, and
 * what d5_onnx_save_buffer writes of it must load again. */
#include "d5/onnx.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    d5_network *net = NULL;
    if (d5_onnx_load_buffer(data, size, NULL, "fuzz input", &net) != D5_OK) return 0;
    if (d5_network_check(net, NULL) == D5_OK) (void)d5_network_infer_shapes(net);
    void *out = NULL;
    size_t out_size = 0;
    if (d5_onnx_save_buffer(net, &out, &out_size) == D5_OK) {
        d5_network *back = NULL;
        if (d5_onnx_load_buffer(out, out_size, NULL, "saved fuzz input", &back) != D5_OK) {
            fprintf(stderr, "a saved network does not load again: %s\n", d5_last_error());
            abort();
        }
        d5_network_free(back);
        d5_free(out);
    }
    d5_network_free(net);
    return 0;
}
