// Debian's libmosquitto (libmosquitto-dev 2.0) for the MosquittoClient target. mosquitto.h imports into
// Swift as it is; this shim adds what Swift cannot do well by itself: a once-only, thread-safe
// mosquitto_lib_init (the library requires one call before any other, and none concurrently).
#ifndef CMOSQUITTO_H
#define CMOSQUITTO_H

#include <mosquitto.h>

#if LIBMOSQUITTO_MAJOR < 2
#error "MosquittoClient needs libmosquitto 2.0 or later (MOSQ_OPT_TLS_USE_OS_CERTS, mosquitto_connack_string)"
#endif

/// mosquitto_lib_init, run once per process whatever the number of callers and threads; returns its
/// result (MOSQ_ERR_SUCCESS) every time.
int cmq_lib_init(void);

/// errno as the calling thread sees it right now (after a MOSQ_ERR_ERRNO result).
int cmq_errno(void);

#endif
