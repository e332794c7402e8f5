/* SIGINT, SIGTERM and SIGHUP during a command: the child processes d5 started
 * in process groups of their own (custom operators, library probes) are
 * ended, files registered as unfinished are removed, and d5 exits with 128 +
 * the signal (130 for Ctrl-C, 143 for SIGTERM). The handler only calls
 * async-signal-safe functions: kill, unlink, rmdir, write, _exit. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define MAX_CHILDREN 16
#define MAX_PATHS    32

static volatile sig_atomic_t children[MAX_CHILDREN];
static char paths[MAX_PATHS][4096]; /* files first, then their folder */
static volatile sig_atomic_t npaths;

static void on_signal(int sig)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) kill(-(pid_t)children[i], SIGKILL);
    for (int i = 0; i < npaths; i++)
        if (unlink(paths[i]) != 0) rmdir(paths[i]);
    static const char msg[] = "\nd5: interrupted; children ended, unfinished files removed\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(128 + sig);
}

static void handled(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

void cli_signals_block(void)
{
    sigset_t set;
    handled(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

void cli_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    /* One handler at a time: a second signal waits for the first's exit. */
    handled(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigprocmask(SIG_UNBLOCK, &sa.sa_mask, NULL);
}

void cli_child_started(long pgid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == 0) {
            children[i] = (sig_atomic_t)pgid;
            return;
        }
}

void cli_child_ended(long pgid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == (sig_atomic_t)pgid) children[i] = 0;
}

void cli_unfinished_add(const char *path)
{
    if (npaths >= MAX_PATHS || strlen(path) >= sizeof paths[0]) return;
    memcpy(paths[npaths], path, strlen(path) + 1);
    npaths = npaths + 1;
}

void cli_unfinished_clear(void)
{
    npaths = 0;
}
