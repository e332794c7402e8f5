/* The output options of the commands that write results (output_options.h). */
#include "output_options.h"

#include <stdio.h>
#include <string.h>

int cli_outputs_check(const char *command, const cli_outputs *o)
{
    return cli_output_ok(command, "--out", o->out, 0) &&
           cli_output_ok(command, "--json", o->json, 0) &&
           cli_output_ok(command, "--csv", o->csv, 0) &&
           cli_output_ok(command, "--mlflow", o->mlflow, 1) &&
           cli_output_ok(command, "--wandb", o->wandb, 1);
}

/* --json: the results' document with the command's context and configuration. */
typedef struct json_out {
    const cli_outputs_params *p;
    const char *path;
} json_out;

static d5_status json_finish(void *self, const d5_results *r)
{
    const json_out *j = self;
    return cli_json_write_results(j->p->spec, j->p->spec ? NULL : j->p->command, r, j->path);
}

static const d5_reporter_ops json_ops = {.name = "json", .finish = json_finish, .free = d5_free};

static d5_status json_reporter(const cli_outputs_params *p, const char *path, d5_reporter **out)
{
    json_out *j = d5_calloc(1, sizeof *j, "JSON reporter");
    if (!j) return D5_ERR_NOMEM;
    j->p = p;
    j->path = path; /* the option's value: argv outlives the reporters */
    return d5_reporter_create(&json_ops, j, out);
}

/* The run logs: every option, the build, the host and the machine first. */
static d5_status runlog_before(void *user, d5_runlog *log)
{
    const cli_outputs_params *p = user;
    d5_status s = p->spec ? cli_runlog_context(log, p->spec) : D5_OK;
    if (s == D5_OK && p->before) s = p->before(p->user, log);
    return s;
}

static d5_status runlog_after(void *user, d5_runlog *log)
{
    const cli_outputs_params *p = user;
    return p->after ? p->after(p->user, log) : D5_OK;
}

d5_status cli_outputs_reporters(const cli_outputs *o, const cli_outputs_params *p,
                                cli_reporters *out)
{
    memset(out, 0, sizeof *out);
    out->params = *p;
    const char *command = p->spec ? p->spec->command : p->command ? p->command : "";
    if (p->run_name)
        snprintf(out->run_name, sizeof out->run_name, "%s", p->run_name);
    else
        snprintf(out->run_name, sizeof out->run_name, "d5 %s", command);
    if (p->project)
        snprintf(out->project, sizeof out->project, "%s", p->project);
    else
        snprintf(out->project, sizeof out->project, "d5-%s", command);
    d5_tracker_params tp = d5_tracker_default_params();
    tp.run_name = out->run_name;
    tp.before = runlog_before;
    tp.after = runlog_after;
    tp.user = &out->params;
    tp.say = stdout;

    d5_status s = D5_OK;
    if (p->console) s = d5_reporter_console(stdout, &out->rep[out->n++]);
    if (s == D5_OK && o->json) s = json_reporter(&out->params, o->json, &out->rep[out->n++]);
    if (s == D5_OK && o->csv) s = d5_reporter_csv(o->csv, &out->rep[out->n++]);
    if (s == D5_OK && o->mlflow) {
        tp.dir = o->mlflow;
        tp.project = p->experiment ? p->experiment : out->run_name;
        s = d5_reporter_mlflow(&tp, &out->rep[out->n++]);
    }
    if (s == D5_OK && o->wandb) {
        tp.dir = o->wandb;
        tp.project = out->project;
        s = d5_reporter_wandb(&tp, &out->rep[out->n++]);
    }
    if (s != D5_OK) cli_reporters_free(out);
    return s;
}

d5_status cli_reporters_report(cli_reporters *reps, const d5_results *r)
{
    return d5_reporters_report(reps->rep, reps->n, r);
}

void cli_reporters_free(cli_reporters *reps)
{
    for (size_t i = 0; i < reps->n; i++) d5_reporter_free(reps->rep[i]);
    reps->n = 0;
}

d5_status cli_outputs_write(const cli_outputs *o, const cli_outputs_params *p, const d5_results *r)
{
    cli_reporters reps;
    d5_status s = cli_outputs_reporters(o, p, &reps);
    if (s != D5_OK) return s;
    s = cli_reporters_report(&reps, r);
    cli_reporters_free(&reps);
    return s;
}
