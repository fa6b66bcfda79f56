// C ABI over zxing-cpp 1.4.0 (C++ only). Swift imports this header; the C++ lives in czxing.cpp, so no
// importer needs C++ interop (docs/swift-on-linux.md: direct interop is viral).
#ifndef CZXING_H
#define CZXING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Format bits: the same single-bit values as ZXing::BarcodeFormat in <ZXing/BarcodeFormat.h> 1.4.0
// ("single bit constants ... to ease the interoperability with C-like interfaces"). czxing.cpp
// static_asserts each one, so a library change breaks the build instead of silently remapping.
enum {
  CZX_FORMAT_NONE = 0,
  CZX_FORMAT_AZTEC = 1 << 0,
  CZX_FORMAT_CODABAR = 1 << 1,
  CZX_FORMAT_CODE39 = 1 << 2,
  CZX_FORMAT_CODE93 = 1 << 3,
  CZX_FORMAT_CODE128 = 1 << 4,
  CZX_FORMAT_DATABAR = 1 << 5,
  CZX_FORMAT_DATABAR_EXPANDED = 1 << 6,
  CZX_FORMAT_DATAMATRIX = 1 << 7,
  CZX_FORMAT_EAN8 = 1 << 8,
  CZX_FORMAT_EAN13 = 1 << 9,
  CZX_FORMAT_ITF = 1 << 10,
  CZX_FORMAT_MAXICODE = 1 << 11,
  CZX_FORMAT_PDF417 = 1 << 12,
  CZX_FORMAT_QRCODE = 1 << 13,
  CZX_FORMAT_UPCA = 1 << 14,
  CZX_FORMAT_UPCE = 1 << 15,
  CZX_FORMAT_MICROQRCODE = 1 << 16,
};

// Binarizer choice, mirroring ZXing::Binarizer (DecodeHints.h).
enum {
  CZX_BINARIZER_LOCAL_AVERAGE = 0,
  CZX_BINARIZER_GLOBAL_HISTOGRAM = 1,
  CZX_BINARIZER_FIXED_THRESHOLD = 2,
  CZX_BINARIZER_BOOL_CAST = 3,
};

// Return codes of czx_read / czx_finish.
enum {
  CZX_OK = 0,
  CZX_ERR_ARGUMENT = 1,   // bad dimensions, NULL pointers
  CZX_ERR_NOMEM = 2,      // std::bad_alloc or malloc failure
  CZX_ERR_EXCEPTION = 3,  // any other C++ exception, message in err
  CZX_ERR_FAULT = 4,      // zxing-cpp read out of bounds (SIGSEGV/SIGBUS) and the read was abandoned
};

// Content.h ContentType, in its order.
enum {
  CZX_CONTENT_TEXT = 0,
  CZX_CONTENT_BINARY = 1,
  CZX_CONTENT_MIXED = 2,
  CZX_CONTENT_GS1 = 3,
  CZX_CONTENT_ISO15434 = 4,
  CZX_CONTENT_UNKNOWN_ECI = 5,
};

typedef struct czx_options {
  int formats;          // OR of CZX_FORMAT_*; 0 means "all" in zxing-cpp (DecodeHints::hasFormat), so callers
                        // that want nothing must not call at all
  int try_harder;       // DecodeHints::setTryHarder
  int try_rotate;       // DecodeHints::setTryRotate
  int try_downscale;    // DecodeHints::setTryDownscale
  int binarizer;        // CZX_BINARIZER_*
  int max_symbols;      // DecodeHints::setMaxNumberOfSymbols (1...255; 0 = 255)
  int codabar_start_end;  // DecodeHints::setReturnCodabarStartEnd
  int is_pure;          // DecodeHints::setIsPure
} czx_options;

typedef struct czx_point {
  int x;
  int y;
} czx_point;

typedef struct czx_result {
  int format;               // one CZX_FORMAT_* bit
  uint8_t *bytes;           // Result::bytes(): raw content, no character-set conversion; malloc'd
  size_t length;
  czx_point position[4];    // Result::position(): top-left, top-right, bottom-right, bottom-left
  int orientation;          // Result::orientation(), degrees
  char symbology[8];        // Result::symbologyIdentifier(), e.g. "]Q1", NUL-terminated
  char *text;               // Result::utf8(): the content as UTF-8, ECI segments and guessed character
                            // sets (Shift_JIS for Kanji, ISO-8859-1 by default) converted; malloc'd
  size_t text_length;
  int has_eci;              // Result::hasECI()
  int content_type;         // Result::contentType(): CZX_CONTENT_*
} czx_result;

// 1 when this build of the shim traps zxing-cpp's assertion failures on linear formats (zxing-cpp before
// 2.0, whose Result::operator== asserts on ordinary images; see czxing.cpp), 0 when it calls
// ReadBarcodes plainly. Decided at build time from ZXVersion.h.
int czx_abort_trap(void);

// The zxing-cpp version this shim was compiled against (ZXVersion.h's ZXING_VERSION_MAJOR, _MINOR,
// _PATCH): the library has no run-time version call.
void czx_version(int *major, int *minor, int *patch);

// Reads through a null pointer under the shim's SIGSEGV trap (the one every zxing-cpp call runs in);
// 1 when the fault was caught. For the tests.
int czx_fault_trap_selftest(void);

// Fills `*options` with the defaults this project uses (all formats, try harder/rotate/downscale on).
void czx_options_init(czx_options *options);

// Decodes an 8-bit luminance image (ZXing::ImageFormat::Lum). `lum` is only read, and only during the
// call. On success *results is a malloc'd array of *count entries (NULL when 0) to release with
// czx_free_results. On failure returns CZX_ERR_* and writes a NUL-terminated message into err.
//
// Debian's zxing-cpp 1.4.0 is built with assertions, and some of them fire on ordinary images (any linear
// code in an image >= 500 px in both directions, two identical linear codes): see czxing.cpp. This call
// therefore reads matrix and linear formats separately, linear ones without downscaling, and, when built
// against zxing-cpp before 2.0 (czx_abort_trap), catches a failed assertion (SIGABRT from abort()) in a
// read that includes linear formats, on the calling thread, retrying with safer settings. *aborts (if not NULL) receives how many assertions were caught; each leaks that attempt's
// memory and libc has already printed the assertion message to stderr. To do this, the first call installs
// a process-wide SIGABRT handler that forwards every other SIGABRT to the previously installed action.
int czx_read(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options,
             czx_result **results, size_t *count, int *aborts, char *err, size_t err_size);

void czx_free_results(czx_result *results, size_t count);

// Runs czx_read on a new thread so the caller can run another decoder meanwhile. `lum` and `options` must
// stay valid until czx_finish returns. If no thread can be started the work is done synchronously inside
// czx_start; NULL is returned only when the job itself cannot be allocated (then call czx_read). czx_finish
// joins, hands over the results as czx_read does, and frees the job.
typedef struct czx_job czx_job;
czx_job *czx_start(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options);
int czx_finish(czx_job *job, czx_result **results, size_t *count, int *aborts, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
