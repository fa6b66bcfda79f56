// C ABI over zxing-cpp 3 (C++ only; the release pinned in deps/zxing-cpp.lock, built by `make deps`).
// Swift imports this header; the C++ lives in czxing.cpp, so no importer needs C++ interop
// (docs/swift-on-linux.md: direct interop is viral).
#ifndef CZXING_H
#define CZXING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Format bits: this shim's own, one per symbology capture reports. zxing-cpp 3's BarcodeFormat is no
// longer a bit set (BarcodeFormat.h: a symbology key and a variant key), so czxing.cpp maps each bit to
// the library formats it asks for, and each format the library returns (its variants included: DataBar
// Stacked is DataBar, Compact PDF417 is PDF417, ITF-14 is ITF...) back to one bit.
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
  CZX_FORMAT_DATABAR_LIMITED = 1 << 17,
  CZX_FORMAT_MICROPDF417 = 1 << 18,
  CZX_FORMAT_RMQRCODE = 1 << 19,
  CZX_FORMAT_DXFILMEDGE = 1 << 20,
  CZX_FORMAT_TELEPEN = 1 << 21,
};

// Binarizer choice, mirroring ZXing::Binarizer (ReaderOptions.h).
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
};

// ContentType.h, in its order.
enum {
  CZX_CONTENT_TEXT = 0,
  CZX_CONTENT_BINARY = 1,
  CZX_CONTENT_MIXED = 2,
  CZX_CONTENT_GS1 = 3,
  CZX_CONTENT_ISO15434 = 4,
  CZX_CONTENT_UNKNOWN_ECI = 5,
};

typedef struct czx_options {
  int formats;          // OR of CZX_FORMAT_*; 0 reads nothing (zxing-cpp's empty set would mean "all")
  int try_harder;       // ReaderOptions::tryHarder
  int try_rotate;       // ReaderOptions::tryRotate
  int try_invert;       // ReaderOptions::tryInvert: light codes on a dark ground
  int try_downscale;    // ReaderOptions::tryDownscale
  int binarizer;        // CZX_BINARIZER_*
  int max_symbols;      // ReaderOptions::maxNumberOfSymbols (1...255; 0 = 255)
  int is_pure;          // ReaderOptions::isPure
  int ean_add_on;       // 1: read an EAN-2/EAN-5 add-on beside EAN/UPC (EanAddOnSymbol::Read); 0: Ignore
} czx_options;

typedef struct czx_point {
  int x;
  int y;
} czx_point;

typedef struct czx_result {
  int format;               // one CZX_FORMAT_* bit
  uint8_t *bytes;           // Barcode::bytes(): raw content, no character-set conversion, without an EAN
                            // add-on; malloc'd
  size_t length;
  czx_point position[4];    // Barcode::position(): top-left, top-right, bottom-right, bottom-left
  int orientation;          // Barcode::orientation(), degrees
  char symbology[8];        // Barcode::symbologyIdentifier(), e.g. "]Q1", NUL-terminated
  char *text;               // Barcode::text(TextMode::Plain): the content as UTF-8, ECI segments and guessed
                            // character sets converted, without an EAN add-on; malloc'd
  size_t text_length;
  int has_eci;              // Barcode::hasECI()
  int content_type;         // Barcode::contentType(): CZX_CONTENT_*
  char add_on[8];           // the EAN-2/EAN-5 add-on's digits (BarcodeExtra::EanAddOn), "" without one
} czx_result;

// The zxing-cpp version this shim was compiled against (Version.h's ZXING_VERSION_MAJOR, _MINOR,
// _PATCH): the library has no run-time version call, and it is linked in statically.
void czx_version(int *major, int *minor, int *patch);

// Fills `*options` with the defaults this project uses (no formats; try harder, rotate, invert and
// downscale on; no add-ons).
void czx_options_init(czx_options *options);

// Decodes an 8-bit luminance image (ZXing::ImageFormat::Lum) with one ReadBarcodes call. `lum` is only
// read, and only during the call. On success *results is a malloc'd array of *count entries (NULL when
// 0) to release with czx_free_results. On failure returns CZX_ERR_* and writes a NUL-terminated message
// into err.
int czx_read(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options,
             czx_result **results, size_t *count, char *err, size_t err_size);

void czx_free_results(czx_result *results, size_t count);

// Runs czx_read on a new thread so the caller can run another decoder meanwhile. `lum` must stay valid
// until czx_finish returns; `options` is copied. If no thread can be started the work is done
// synchronously inside czx_start; NULL is returned only when the job itself cannot be allocated (then
// call czx_read). czx_finish joins, hands over the results as czx_read does, and frees the job.
typedef struct czx_job czx_job;
czx_job *czx_start(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options);
int czx_finish(czx_job *job, czx_result **results, size_t *count, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
