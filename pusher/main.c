/* main.c — fjord-push: parse the configuration and run once or as a daemon. */
#include "config.h"
#include "daemon.h"
#include "log.h"

#include <stdio.h>

#ifndef FJ_PUSH_VERSION
#define FJ_PUSH_VERSION "0.0.0"
#endif

int main(int argc, char **argv)
{
    fj_push_config cfg;
    fj_err err = {.code = ""};
    if (fj_push_config_init(&cfg) != FJ_OK) {
        fprintf(stderr, "fjord-push: out of memory\n");
        return 1;
    }
    fj_status st = fj_push_config_args(&cfg, argc, argv, &err);
    if (st == FJ_OK && !cfg.show_help && !cfg.show_version)
        st = fj_push_config_check(&cfg, &err);
    if (st != FJ_OK) {
        fprintf(stderr, "fjord-push: %s%s%s\n", err.message, err.path[0] ? " at " : "", err.path);
        fj_push_config_free(&cfg);
        return 2;
    }
    int rc = 0;
    if (cfg.show_help) {
        fputs(fj_push_usage(), stdout);
    } else if (cfg.show_version) {
        puts("fjord-push " FJ_PUSH_VERSION);
    } else {
        fj_log_set_level(cfg.log_level);
        rc = cfg.once ? fj_push_once(&cfg) : fj_push_daemon(&cfg);
    }
    fj_push_config_free(&cfg);
    return rc;
}
