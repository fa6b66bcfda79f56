// See include/clazylibraries.h.
#include "clazylibraries.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

// Called through a trampoline whose library was never loaded: a caller skipped cll_load, which is a bug
// in capture, not a condition of the host. Named, so the bug report says which call.
__attribute__((noreturn, cold)) static void cll_missing(const char *name) {
  fprintf(stderr, "capture: internal error: %s was called before its library was loaded\n", name);
  abort();
}

// One pointer per function, first aimed at a function that names it (cll_missing), then at the
// library's own once cll_load has resolved it. Hidden globals: the trampolines below read them by name.
#define CLL_POINTER(name) cll_pointer_##name
#define CLL_DEFINE_POINTER(name)                                                           \
  static void cll_missing_##name(void) { cll_missing(#name); }                             \
  __attribute__((visibility("hidden"), used)) void *CLL_POINTER(name) = (void *)cll_missing_##name;

// The trampoline: a function named as the library's, hidden, that tail-jumps through its pointer.
// A jump, not a C call, so every argument register (and %al of a variadic call) reaches the library
// as the caller left it, whatever the function's signature.
#if defined(__x86_64__)
#define CLL_TRAMPOLINE(name)                                                                     \
  __asm__(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ",@function\n.p2align 4\n" #name \
          ":\n\tjmp *cll_pointer_" #name "(%rip)\n.size " #name ",.-" #name "\n");
#elif defined(__aarch64__)
#define CLL_TRAMPOLINE(name)                                                                        \
  __asm__(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ",%function\n.p2align 2\n" #name \
          ":\n\tadrp x16, cll_pointer_" #name "\n\tldr x16, [x16, :lo12:cll_pointer_" #name          \
          "]\n\tbr x16\n.size " #name ",.-" #name "\n");
#else
#error "CLazyLibraries has trampolines for x86_64 and aarch64 only"
#endif

#define CLL_DEFINE(name) CLL_DEFINE_POINTER(name) CLL_TRAMPOLINE(name)

CLL_ZBAR_SYMBOLS(CLL_DEFINE)
CLL_DBUS_SYMBOLS(CLL_DEFINE)
CLL_WEBSOCKETS_SYMBOLS(CLL_DEFINE)
CLL_MOSQUITTO_SYMBOLS(CLL_DEFINE)
CLL_BLUETOOTH_SYMBOLS(CLL_DEFINE)

typedef struct {
  const char *name;
  void **slot;
} cll_symbol;

#define CLL_ENTRY(name) {#name, &CLL_POINTER(name)},
static const cll_symbol zbar_symbols[] = {CLL_ZBAR_SYMBOLS(CLL_ENTRY)};
static const cll_symbol dbus_symbols[] = {CLL_DBUS_SYMBOLS(CLL_ENTRY)};
static const cll_symbol websockets_symbols[] = {CLL_WEBSOCKETS_SYMBOLS(CLL_ENTRY)};
static const cll_symbol mosquitto_symbols[] = {CLL_MOSQUITTO_SYMBOLS(CLL_ENTRY)};
static const cll_symbol bluetooth_symbols[] = {CLL_BLUETOOTH_SYMBOLS(CLL_ENTRY)};

typedef struct {
  // The sonames the Debian packages the .deb depends on provide (debian/control): the ABI capture was
  // built against, never the unversioned development link.
  const char *soname;
  const cll_symbol *symbols;
  size_t count;
  int loaded;  // read with acquire, written with release under `lock`
} cll_entry;

#define CLL_COUNT(array) (sizeof(array) / sizeof((array)[0]))
static cll_entry libraries[] = {
    [CLL_ZBAR] = {"libzbar.so.0", zbar_symbols, CLL_COUNT(zbar_symbols), 0},
    [CLL_DBUS] = {"libdbus-1.so.3", dbus_symbols, CLL_COUNT(dbus_symbols), 0},
    [CLL_WEBSOCKETS] = {"libwebsockets.so.17", websockets_symbols, CLL_COUNT(websockets_symbols), 0},
    [CLL_MOSQUITTO] = {"libmosquitto.so.1", mosquitto_symbols, CLL_COUNT(mosquitto_symbols), 0},
    [CLL_BLUETOOTH] = {"libbluetooth.so.3", bluetooth_symbols, CLL_COUNT(bluetooth_symbols), 0},
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static __thread char last_error[512];

static void set_error(const char *text) {
  snprintf(last_error, sizeof last_error, "%s", text ? text : "unknown error");
}

const char *cll_error(void) { return last_error; }

static int valid(cll_library library) {
  return (unsigned)library < CLL_COUNT(libraries);
}

int cll_is_loaded(cll_library library) {
  return valid(library) && __atomic_load_n(&libraries[library].loaded, __ATOMIC_ACQUIRE);
}

const char *cll_soname(cll_library library) { return valid(library) ? libraries[library].soname : ""; }

int cll_load(cll_library library) {
  if (!valid(library)) {
    set_error("no such library");
    return -1;
  }
  cll_entry *entry = &libraries[library];
  if (__atomic_load_n(&entry->loaded, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_lock(&lock);
  int result = 0;
  if (!entry->loaded) {
    // RTLD_LOCAL: the library's symbols stay out of the global scope, so nothing loaded later binds to
    // them by accident; RTLD_NOW: a missing dependency fails here, with the loader's message, and not
    // at some later call. dlopen of a library already mapped (libdbus under libzbar) returns it again.
    dlerror();
    void *handle = dlopen(entry->soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      set_error(dlerror());
      result = -1;
    } else {
      // Every function first, then the pointers: a library without one of them (an ABI other than the
      // one named by its soname) is refused whole, never half-wired.
      void *found[256];
      if (entry->count > CLL_COUNT(found)) abort();  // a build-time fact; symbols.h lists fewer
      for (size_t i = 0; i < entry->count && result == 0; i++) {
        found[i] = dlsym(handle, entry->symbols[i].name);
        if (!found[i]) {
          char text[256];
          snprintf(text, sizeof text, "%s has no function %s", entry->soname, entry->symbols[i].name);
          set_error(text);
          result = -1;
        }
      }
      if (result == 0) {
        for (size_t i = 0; i < entry->count; i++)
          __atomic_store_n(entry->symbols[i].slot, found[i], __ATOMIC_RELEASE);
        __atomic_store_n(&entry->loaded, 1, __ATOMIC_RELEASE);
      }
      // On failure the handle stays open: dlclose of a library another one may have mapped is not
      // safe to undo, and a library that is found but incomplete is a broken installation anyway.
    }
  }
  pthread_mutex_unlock(&lock);
  return result;
}
