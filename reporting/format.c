/* Durations, byte counts and CSV fields as the reports write them. */
#include "d5/report.h"

#include <math.h>
#include <string.h>

void d5_format_duration(double ns, char *buf, size_t size)
{
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
    if (isnan(ns)) {
        snprintf(buf, size, "nan");
        return;
    }
    double a = fabs(ns);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (a >= units[i].scale || i + 1 == sizeof units / sizeof units[0]) {
            double v = ns / units[i].scale;
            double av = fabs(v);
            int decimals = av >= 100 ? 0 : (av >= 10 ? 1 : 2);
            snprintf(buf, size, "%.*f %s", decimals, v, units[i].unit);
            return;
        }
    }
}

void d5_format_bytes(double bytes, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

void d5_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
