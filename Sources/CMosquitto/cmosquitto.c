#include "cmosquitto.h"

#include <errno.h>
#include <pthread.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_result = MOSQ_ERR_UNKNOWN;

static void init_library(void) { init_result = mosquitto_lib_init(); }

int cmq_lib_init(void) {
  pthread_once(&init_once, init_library);
  return init_result;
}

int cmq_errno(void) { return errno; }
