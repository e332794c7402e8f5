/* json_close A.json B.json KEY RTOL [N]: compares the number arrays KEY of
 * two JSON files element by element (the first N, default all; both must
 * have at least that many) and exits 0 when every relative difference
 * |a - b| / max(|a|, tiny) is at most RTOL, else 1, printing the worst. For
 * tests written as cmake -P scripts, which have no floating point. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static json_t *array_of(const char *path, const char *key)
{
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    if (!root) {
        fprintf(stderr, "json_close: %s:%d: %s\n", path, e.line, e.text);
        exit(2);
    }
    json_t *a = json_object_get(root, key);
    if (!json_is_array(a)) {
        fprintf(stderr, "json_close: %s: no array '%s'\n", path, key);
        exit(2);
    }
    json_incref(a);
    json_decref(root);
    return a;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: json_close A.json B.json KEY RTOL [N]\n");
        return 2;
    }
    json_t *a = array_of(argv[1], argv[3]), *b = array_of(argv[2], argv[3]);
    double rtol = atof(argv[4]);
    size_t n = json_array_size(a) < json_array_size(b) ? json_array_size(a) : json_array_size(b);
    if (argc == 6) {
        size_t want = (size_t)atol(argv[5]);
        if (n < want) {
            fprintf(stderr, "json_close: %zu and %zu elements, expected %zu\n", json_array_size(a),
                    json_array_size(b), want);
            return 1;
        }
        n = want;
    }
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double x = json_number_value(json_array_get(a, i)),
               y = json_number_value(json_array_get(b, i));
        double r = fabs(x - y) / fmax(fabs(x), 1e-30);
        if (!(r <= worst)) {
            worst = r;
            at = i;
        }
    }
    printf("%s: %zu elements, largest relative difference %.3g at %zu (tolerance %g)\n", argv[3], n,
           worst, at, rtol);
    json_decref(a);
    json_decref(b);
    return worst <= rtol ? 0 : 1;
}
