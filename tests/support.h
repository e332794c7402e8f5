/* Helpers shared by d5's tests. */
#ifndef D5_TEST_SUPPORT_H
#define D5_TEST_SUPPORT_H

#include "d5/d5.h"

#include <jansson.h>
#include <stddef.h>

/* A Criterion time limit in seconds, multiplied by D5_TEST_TIMEOUT_SCALE
 * (CMake's variable of that name: slow runners such as valgrind). */
#ifndef D5_TEST_TIMEOUT_SCALE
#define D5_TEST_TIMEOUT_SCALE 1
#endif
#define D5_TIMEOUT(seconds) ((seconds)*D5_TEST_TIMEOUT_SCALE)

/* A fresh empty directory under /tmp (malloc'd path), removed by rmtree. */
char *tmpdir_make(void);
void rmtree(const char *path);
/* The end of a test that ran d5 in a folder of its own: frees the output and
 * error texts, removes the folder and frees its name. */
void run_done(char *out, char *err, char *dir);
/* A fresh empty folder for every test of a suite, in test_dir:
 * TestSuite(name, .init = test_dir_make, .fini = test_dir_remove). */
extern char *test_dir;
void test_dir_make(void);
void test_dir_remove(void);
/* dir/name as a malloc'd string. */
char *path_join(const char *dir, const char *name);
/* Writes `text` into the file dir/name (created or emptied first). */
void write_text(const char *dir, const char *name, const char *text);
/* The whole file as a NUL-terminated malloc'd string, or NULL. */
char *slurp(const char *path, size_t *len);
/* Expects `text` to contain each of `needles` (NULL-terminated); a failure
 * names the text that is missing. EXPECT_HAS(text, "a", "b") lists them in
 * place. */
void expect_has_all(const char *text, const char *const *needles);
#define EXPECT_HAS(text, ...) expect_has_all(text, (const char *const[]){__VA_ARGS__, NULL})
/* Asserts that the file `path` can be read and contains `needle`; a failure
 * names the file, the text looked for and what the file holds. */
void expect_file_has(const char *path, const char *needle);

/* A data set file that a test needs: `path` or `path`.gz must be readable.
 * When neither is, the test is skipped with the folder and `how` to get it;
 * under CI (the environment variable CI is "true"), where scripts/setup.sh
 * and scripts/setup_data.sh must have installed every data set, it fails. */
void need_data_file(const char *path, const char *how);
/* Number of lines (newline-terminated) in a string. */
size_t count_lines(const char *s);

/* A timer named "unit-test" with FORWARD samples of 1.5, 3 and 4.5 us
 * starting at 10, 20 and 30 us (free with d5_timer_free). */
d5_timer *forward_timer(void);
/* Ten samples of 100, 101, 102, 103, 104, 100, ... ns without warm-up: a
 * measurement whose statistics are known (free with d5_measurement_free). */
d5_measurement fixed_measurement(void);
/* The JSON document in file `path`; a failed assertion naming the file, the
 * line and jansson's message when it cannot be read (free with json_decref). */
json_t *json_read(const char *path);
/* The same for the file dir/name. */
json_t *json_read_in(const char *dir, const char *name);

/* An allocator that fails once `budget` allocations have succeeded (-1: never),
 * and counts live blocks so that tests see leaks on error paths. */
void failing_alloc_install(long budget);
void failing_alloc_remove(void);
long failing_alloc_live(void);

/* Runs d5 with arguments (NULL-terminated); stdout and stderr are captured
 * into malloc'd strings. Returns the exit status, or -1 if it did not exit. */
int run_d5(char **out, char **err, const char *const *args);
/* The same, and the most memory d5 held (its peak resident set, in bytes). */
int run_d5_peak(char **out, char **err, const char *const *args, long long *peak_bytes);

/* A child process that busy-loops for up to `seconds` (a competitor for the
 * cores), started and given 0.2 s to get going; stop it with busy_stop. */
int busy_start(int seconds);
void busy_stop(int pid);

#endif
