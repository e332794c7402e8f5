/* Stand-in plugins for test_core_plugin (core/plugin.h), one source built
 * three times: libd5_fake.so answers d5's ABI version with its table (the int
 * 42), libd5_fakeabi.so answers no version (FAKE_REFUSE), and libd5_fakedep.so
 * needs a library that the loader cannot find (FAKE_NEEDS_GONE). */
#include "../../core/plugin.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef FAKE_NEEDS_GONE
int test_plugin_gone(void); /* in libtest_plugin_gone.so, off the loader's path */
#define ANSWER test_plugin_gone()
#else
#define ANSWER 42
#endif

EXPORT const void *FAKE_ENTRY(uint32_t abi);

const void *FAKE_ENTRY(uint32_t abi)
{
    static int table;
    table = ANSWER;
#ifdef FAKE_REFUSE
    abi = ~abi;
#endif
    return abi == D5__PLUGIN_ABI ? &table : NULL;
}
