/* Plugins loaded on demand (core/plugin.h): found in D5_PLUGIN_DIR or beside
 * libd5core, loaded once, and every way of failing says why in words, without
 * touching d5_last_error. The stand-ins are built from fake_plugin.c. */
#define _GNU_SOURCE
#include "../../core/plugin.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fake_dir(void)
{
    cr_assert_eq(setenv("D5_PLUGIN_DIR", D5_FAKE_PLUGIN_DIR, 1), 0);
}

TestSuite(plugin, .init = fake_dir, .timeout = D5_TIMEOUT(60));

Test(plugin, loads_once_and_gives_the_same_table)
{
    const void *t = NULL, *again = NULL;
    char why[256] = "x";
    cr_assert_eq(d5__plugin_load("fake", &t, why, sizeof why), D5_OK, "%s", why);
    cr_assert_not_null(t);
    cr_assert_eq(*(const int *)t, 42);
    cr_assert_str_empty(why);
    cr_assert_eq(d5__plugin_load("fake", &again, why, sizeof why), D5_OK);
    cr_assert_eq(again, t);
    cr_assert_eq(*(const int *)t, 42, "the plugin's entry was called again");
}

Test(plugin, a_plugin_not_built_is_named_with_its_path)
{
    const void *t = (const void *)1;
    char why[512];
    d5_error(D5_ERR_IO, "marker");
    cr_assert_eq(d5__plugin_load("absent", &t, why, sizeof why), D5_ERR_UNSUPPORTED);
    cr_assert_null(t);
    cr_assert(strstr(why, "plugin not built (no " D5_FAKE_PLUGIN_DIR "/libd5_absent.so)"), "%s",
              why);
    cr_assert_str_eq(d5_last_error(), "marker");
    /* The answer is kept: the second call says the same. */
    char again[512];
    cr_assert_eq(d5__plugin_load("absent", &t, again, sizeof again), D5_ERR_UNSUPPORTED);
    cr_assert_str_eq(again, why);
}

Test(plugin, a_library_it_needs_is_named_as_not_found)
{
    const void *t;
    char why[512];
    cr_assert_eq(d5__plugin_load("fakedep", &t, why, sizeof why), D5_ERR_NODEVICE, "%s", why);
    cr_assert_null(t);
    cr_assert(strstr(why, "libtest_plugin_gone.so not found: ") == why, "%s", why);
}

Test(plugin, another_abi_version_is_refused)
{
    const void *t;
    char why[512];
    cr_assert_eq(d5__plugin_load("fakeabi", &t, why, sizeof why), D5_ERR_BACKEND, "%s", why);
    cr_assert_null(t);
    cr_assert(strstr(why, "libd5_fakeabi.so is of another ABI version"), "%s", why);
}

Test(plugin, without_the_variable_plugins_are_beside_libd5core)
{
    cr_assert_eq(unsetenv("D5_PLUGIN_DIR"), 0);
    char dir[4096], lib[4200];
    d5__plugin_dir(dir, sizeof dir);
    size_t n = strlen(dir);
    cr_assert(n > 3 && strcmp(dir + n - 3, "/d5") == 0, "%s", dir);
    snprintf(lib, sizeof lib, "%.*s/libd5core.so", (int)(n - 3), dir);
    cr_assert_eq(access(lib, F_OK), 0, "no %s", lib);
    cr_assert_eq(setenv("D5_PLUGIN_DIR", "", 1), 0); /* empty: the same */
    char same[4096];
    d5__plugin_dir(same, sizeof same);
    cr_assert_str_eq(same, dir);
}
