/* The library that libd5_fakedep.so needs, built where the loader does not
 * look (fake_plugin.c). */
__attribute__((visibility("default"))) int test_plugin_gone(void);

int test_plugin_gone(void)
{
    return 7;
}
