/* Attribute reading shared by the spatial operators of ONNX opsets 18 to 22
 * that are neither Conv nor a pooling (Col2Im, DeformConv): one value per
 * spatial axis (dilations, strides) or two (pads). */
#ifndef D5_REF_SPATIAL_H
#define D5_REF_SPATIAL_H

#include "util.h"

/* Reads the INTS attribute `name` of `op` into out[0..count-1]: `def` in
 * every entry when it is absent or empty, otherwise exactly `count` values,
 * each at least `min`. naxes (the spatial axes) only words the message:
 * D5_ERR_INVALID "Col2Im: strides has 3 values for 2 spatial axes, expected
 * 2", "DeformConv: pads[1] is -1, must be at least 0". */
d5_status d5__spatial_ints(const char *op, const d5_attrs *attrs, const char *name, int32_t naxes,
                           int32_t count, int64_t def, int64_t min, int64_t *out);

#endif
