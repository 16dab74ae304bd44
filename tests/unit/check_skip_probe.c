/*
 * check_skip_probe.c — a program made with check.h for test_skips: one case
 * passes, one skips (its precondition is "missing"), and one fails when
 * CHECK_PROBE_FAIL is set. Not a test of its own.
 */
#include "check.h"

TEST(passes) { CHECK_EQ_INT(1 + 1, 2); }

TEST(skips) {
  SKIP("no frobnicator on this machine");
  CHECK(0); /* never reached */
}

TEST(fails_on_request) { CHECK(getenv("CHECK_PROBE_FAIL") == NULL); }

RUN_TESTS(T(passes), T(skips), T(fails_on_request))
