/* client.c — a small client of the installed client API (test_install.sh):
 * checks a tile program and lists a new workspace's refs. */
#include <stdio.h>

#include "argus/argus.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: client FILE.tile WORKSPACE\n");
    return 2;
  }
  if (argus_api_version() != ARGUS_API_VERSION) {
    fprintf(stderr, "client: header API %d, library API %d\n", ARGUS_API_VERSION,
            argus_api_version());
    return 1;
  }
  argus_check *c = NULL;
  if (argus_check_file(argv[1], NULL, &c)) {
    fprintf(stderr, "client: %s\n", argus_errmsg());
    return 1;
  }
  printf("verdict %d\n", argus_check_verdict(c));
  argus_check_free(c);
  argus_ws *ws = NULL;
  char *refs = NULL;
  if (argus_ws_open(argv[2], ARGUS_WS_CREATE, &ws) || argus_ws_refs(ws, &refs)) {
    fprintf(stderr, "client: %s\n", argus_errmsg());
    argus_ws_close(ws);
    return 1;
  }
  printf("refs %s\n", refs);
  argus_free(refs);
  argus_ws_close(ws);
  return 0;
}
