// The shared libraries capture loads only when a command needs them (docs/architecture.md,
// "Libraries loaded on demand"). ZBar (libzbar pulls in libdbus, libsystemd, libX11 and libv4l2),
// libdbus, libwebsockets (libssl, libcrypto), libmosquitto and libbluetooth are not in the binary's
// DT_NEEDED: a one-shot command that uses none of them (an image zxing-cpp reads, --version, get or set
// of a local property) does not pay to map and relocate them. Measured on this project's 2-core machine:
// a process that maps all of them starts in about 6 ms, one that maps only the image libraries in
// about 1.7 ms (bench/README.md, "Start-up").
//
// Each function of these libraries that capture calls has a trampoline of the same name here (hidden:
// the binary does not export it) that jumps through a pointer cll_load fills in. The callers compile
// against the libraries' own headers, unchanged. A new call to a function not listed in
// symbols.h fails the link ("undefined reference"), so a list that falls behind cannot be built.
#ifndef CLAZYLIBRARIES_H
#define CLAZYLIBRARIES_H

#include <stddef.h>

typedef enum {
  CLL_ZBAR = 0,
  CLL_DBUS = 1,
  CLL_WEBSOCKETS = 2,
  CLL_MOSQUITTO = 3,
  CLL_BLUETOOTH = 4,
} cll_library;

/// Loads `library` and resolves every function of it capture calls; 0 when it is ready (at once when
/// it already was), -1 when it cannot be (cll_error says why). Thread-safe; a failure is not
/// remembered, so a library installed later is found by the next call.
int cll_load(cll_library library);

/// Why this thread's last failed cll_load failed: the dynamic loader's words ("libzbar.so.0: cannot
/// open shared object file: No such file or directory") or the function the library lacks. Valid until
/// this thread's next cll_load.
const char *cll_error(void);

/// 1 once `library` is loaded, else 0.
int cll_is_loaded(cll_library library);

/// The soname cll_load opens for `library`: "libzbar.so.0".
const char *cll_soname(cll_library library);

#endif
