/* Tests of server/config.c: defaults, INI file, flags overriding the file, errors that say where. */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(config, defaults_are_documented_values)
{
    fj_config c;
    fj_config_defaults(&c);
    cr_assert_str_eq(c.listen, "127.0.0.1:8077");
    cr_assert_str_eq(c.db, "./fjord.db");
    cr_assert_eq(c.job_gap_s, 6 * 3600);
    cr_assert_eq(fj_config_check(&c, NULL), FJ_OK);
}

Test(config, file_then_flags)
{
    char path[] = "/tmp/fjord-config-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("[server]\nlisten = 127.0.0.1:9000\nthreads = 2\n[limits]\nmax-body = 1M\n[rectification]\njob_gap = 2h\n", f);
    fclose(f);
    fj_config c;
    fj_config_defaults(&c);
    char *argv[] = {"--config", path, "--listen", "127.0.0.1:9100", "--dev-mode", "extra"};
    char *pos[4];
    size_t n_pos;
    fj_err err = {0};
    cr_assert_eq(fj_config_parse_args(&c, FJ_CMD_SERVE, 6, argv, pos, 4, &n_pos, &err), FJ_OK, "%s", err.message);
    unlink(path);
    cr_assert_str_eq(c.listen, "127.0.0.1:9100");
    cr_assert_eq(c.threads, 2);
    cr_assert_eq(c.max_body, 1u << 20);
    cr_assert_eq(c.job_gap_s, 7200);
    cr_assert(c.dev_mode);
    cr_assert_eq(n_pos, 1);
    cr_assert_str_eq(pos[0], "extra");
}

Test(config, errors_name_the_option)
{
    fj_config c;
    fj_config_defaults(&c);
    fj_err err = {0};
    cr_assert_eq(fj_config_set(&c, "max-body", "lots", &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "max-body"));
    cr_assert_eq(fj_config_set(&c, "no-such", "1", &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "no-such"));
    cr_assert_eq(fj_config_set(&c, "job-gap", "-5", &err), FJ_EINVAL);
}

Test(config, dev_mode_only_on_loopback)
{
    fj_config c;
    fj_config_defaults(&c);
    c.dev_mode = true;
    fj_err err = {0};
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK);
    strcpy(c.listen, "0.0.0.0:8077");
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "loopback"));
    strcpy(c.listen, "[::1]:8077");
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK);
}

Test(config, listen_address_forms)
{
    fj_config c;
    fj_config_defaults(&c);
    char host[64];
    unsigned port;
    strcpy(c.listen, "[::1]:80");
    cr_assert_eq(fj_config_listen_addr(&c, host, sizeof host, &port, NULL), FJ_OK);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 80);
    strcpy(c.listen, "127.0.0.1:99999");
    cr_assert_eq(fj_config_listen_addr(&c, host, sizeof host, &port, NULL), FJ_EINVAL);
    strcpy(c.listen, "nocolon");
    cr_assert_eq(fj_config_listen_addr(&c, host, sizeof host, &port, NULL), FJ_EINVAL);
}
