/* Stand-in plugins for test_core_plugin (core/plugin.h), one source built
 * three times: libd5_fake.so answers d5's ABI version with its table (an int:
 * 42 at the first call of its entry, 43 at the second, ...), libd5_fakeabi.so
 * answers no version (FAKE_REFUSE), and libd5_fakedep.so needs a library that
 * the loader cannot find (FAKE_NEEDS_GONE). */
#include "../../core/plugin.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef FAKE_NEEDS_GONE
int test_plugin_gone(void); /* in libtest_plugin_gone.so, off the loader's path */
#define ANSWER test_plugin_gone()
#else
#define ANSWER (41 + ++calls)
#endif

EXPORT const void *FAKE_ENTRY(uint32_t abi);

const void *FAKE_ENTRY(uint32_t abi)
{
    static int table, calls;
    (void)calls;
    table = ANSWER;
#ifdef FAKE_REFUSE
    abi = ~abi;
#endif
    return abi == D5__PLUGIN_ABI ? &table : NULL;
}
