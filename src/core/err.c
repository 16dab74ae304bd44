/*
 * err.c — names and texts for the AG_E* error codes, generated from the one
 * AG_ERRNO_MAP list in argus/core.h.
 */
#include "argus/core.h"

const char *ag_strerror(int err) {
  switch (err) {
  case AG_OK:
    return "success";
#define AG__ERR_TEXT(name, text)                                               \
  case AG_E##name:                                                             \
    return text;
    AG_ERRNO_MAP(AG__ERR_TEXT)
#undef AG__ERR_TEXT
  default:
    return "unknown error";
  }
}

const char *ag_err_name(int err) {
  switch (err) {
  case AG_OK:
    return "AG_OK";
#define AG__ERR_NAME(name, text)                                               \
  case AG_E##name:                                                             \
    return "AG_E" #name;
    AG_ERRNO_MAP(AG__ERR_NAME)
#undef AG__ERR_NAME
  default:
    return "AG_E?";
  }
}
