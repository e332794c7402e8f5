/* d5 train: trains a classifier on a dataset and reports accuracy, the loss
 * curve, time-to-accuracy and the speed of every phase. The command line
 * becomes typed options (train_args.c, level 2's d5_train_config), which
 * train_run (train_run.c) runs. */
#include "cli.h"
#include "train_run.h"

int cmd_train(int argc, char **argv)
{
    train_options o;
    int rc = train_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    if ((rc = cli_check_backends("train", "backend", o.cfg.backend, 1)) >= 0 ||
        (rc = cli_check_backends("train", "compare-backend", o.cfg.compare_backend, 1)) >= 0)
        return rc;
    return train_run(&o, NULL);
}
