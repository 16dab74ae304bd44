/*
 * cmd_version.c — `argus version`: the version of argus and of the libraries
 * it was built with.
 */
#include "cli.h"

#include <openssl/opensslv.h>

const ag_cli_opt cmd_version_opts[] = {{0}};

int cmd_version(ag_cli *cli) {
  if (cli->npos)
    return ag_cli_usage_error(cli, "unexpected argument '%s'", cli->pos[0]);
  if (cli->json) {
    json_t *j = json_pack("{s:s,s:s,s:s}", "argus", AG_VERSION_STRING, "jansson",
                          JANSSON_VERSION, "openssl", OPENSSL_VERSION_TEXT);
    ag_cli_print_json(j);
    json_decref(j);
  } else {
    printf("argus %s\n", AG_VERSION_STRING);
  }
  return AG_EXIT_OK;
}
