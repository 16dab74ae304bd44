/* harness.c — a minimal harness against the installed host runtime
 * (test_install.sh builds it; it needs a GPU to do anything more than say
 * why it cannot open the driver). */
#include <stdio.h>

#include "argus/host.h"

int main(void) {
  ag_host *host = NULL;
  if (ag_host_open(&host)) {
    fprintf(stderr, "harness: %s\n", ag_host_errmsg(host));
    ag_host_close(host);
    return 1;
  }
  ag_host_close(host);
  printf("harness: ok\n");
  return 0;
}
