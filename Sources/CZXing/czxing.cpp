// zxing-cpp 1.4.0 behind a C ABI. Every entry point catches all exceptions: a C++ exception crossing into
// Swift is undefined behaviour, and ReadBarcodes may throw (e.g. std::bad_alloc on a huge image).
#include "czxing.h"

#include "ReadBarcode.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <vector>

using ZXing::BarcodeFormat;

// The C enum must keep matching the library's bit values (BarcodeFormat.h: "explicitly set the values to
// single bit constants ... to ease the interoperability with C-like interfaces").
static_assert(CZX_FORMAT_AZTEC == static_cast<int>(BarcodeFormat::Aztec), "Aztec");
static_assert(CZX_FORMAT_CODABAR == static_cast<int>(BarcodeFormat::Codabar), "Codabar");
static_assert(CZX_FORMAT_CODE39 == static_cast<int>(BarcodeFormat::Code39), "Code39");
static_assert(CZX_FORMAT_CODE93 == static_cast<int>(BarcodeFormat::Code93), "Code93");
static_assert(CZX_FORMAT_CODE128 == static_cast<int>(BarcodeFormat::Code128), "Code128");
static_assert(CZX_FORMAT_DATABAR == static_cast<int>(BarcodeFormat::DataBar), "DataBar");
static_assert(CZX_FORMAT_DATABAR_EXPANDED == static_cast<int>(BarcodeFormat::DataBarExpanded), "DataBarExp");
static_assert(CZX_FORMAT_DATAMATRIX == static_cast<int>(BarcodeFormat::DataMatrix), "DataMatrix");
static_assert(CZX_FORMAT_EAN8 == static_cast<int>(BarcodeFormat::EAN8), "EAN8");
static_assert(CZX_FORMAT_EAN13 == static_cast<int>(BarcodeFormat::EAN13), "EAN13");
static_assert(CZX_FORMAT_ITF == static_cast<int>(BarcodeFormat::ITF), "ITF");
static_assert(CZX_FORMAT_MAXICODE == static_cast<int>(BarcodeFormat::MaxiCode), "MaxiCode");
static_assert(CZX_FORMAT_PDF417 == static_cast<int>(BarcodeFormat::PDF417), "PDF417");
static_assert(CZX_FORMAT_QRCODE == static_cast<int>(BarcodeFormat::QRCode), "QRCode");
static_assert(CZX_FORMAT_UPCA == static_cast<int>(BarcodeFormat::UPCA), "UPCA");
static_assert(CZX_FORMAT_UPCE == static_cast<int>(BarcodeFormat::UPCE), "UPCE");
static_assert(CZX_FORMAT_MICROQRCODE == static_cast<int>(BarcodeFormat::MicroQRCode), "MicroQRCode");

static_assert(CZX_BINARIZER_LOCAL_AVERAGE == static_cast<int>(ZXing::Binarizer::LocalAverage), "binarizer");
static_assert(CZX_BINARIZER_BOOL_CAST == static_cast<int>(ZXing::Binarizer::BoolCast), "binarizer");

namespace {

void setError(char *err, size_t size, const char *message) {
  if (err == nullptr || size == 0) return;
  std::strncpy(err, message, size - 1);
  err[size - 1] = '\0';
}

// Copies the C++ results into plain C structs; returns CZX_ERR_NOMEM (after freeing) if malloc fails.
int exportResults(const ZXing::Results &found, czx_result **results, size_t *count) {
  *results = nullptr;
  *count = 0;
  if (found.empty()) return CZX_OK;
  auto *out = static_cast<czx_result *>(std::calloc(found.size(), sizeof(czx_result)));
  if (out == nullptr) return CZX_ERR_NOMEM;
  size_t n = 0;
  for (const auto &r : found) {
    // ReadBarcodes only returns valid results while returnErrors is false (DecodeHints.h), but isValid()
    // is the documented test, so it is checked rather than assumed.
    if (!r.isValid()) continue;
    czx_result &c = out[n];
    c.format = static_cast<int>(r.format());
    const ZXing::ByteArray &bytes = r.bytes();  // "raw / standard content without ... conversions"
    c.length = bytes.size();
    // malloc(0) may return NULL; allocate one byte so a NULL pointer always means failure.
    c.bytes = static_cast<uint8_t *>(std::malloc(bytes.empty() ? 1 : bytes.size()));
    if (c.bytes == nullptr) {
      czx_free_results(out, n);
      return CZX_ERR_NOMEM;
    }
    if (!bytes.empty()) std::memcpy(c.bytes, bytes.data(), bytes.size());
    const ZXing::Position &p = r.position();  // Quadrilateral: topLeft, topRight, bottomRight, bottomLeft
    for (int i = 0; i < 4; ++i) c.position[i] = czx_point{p[i].x, p[i].y};
    c.orientation = r.orientation();
    setError(c.symbology, sizeof c.symbology, r.symbologyIdentifier().c_str());
    ++n;
  }
  if (n == 0) {
    std::free(out);
    out = nullptr;
  }
  *results = out;
  *count = n;
  return CZX_OK;
}

int readImpl(const uint8_t *lum, int width, int height, int rowStride, const czx_options *options,
             czx_result **results, size_t *count, char *err, size_t errSize) {
  if (results == nullptr || count == nullptr) {
    setError(err, errSize, "czx_read: NULL output pointer");
    return CZX_ERR_ARGUMENT;
  }
  *results = nullptr;
  *count = 0;
  if (lum == nullptr || width <= 0 || height <= 0 || rowStride < width) {
    setError(err, errSize, "czx_read: bad image dimensions");
    return CZX_ERR_ARGUMENT;
  }
  czx_options defaults;
  czx_options_init(&defaults);
  const czx_options &o = options != nullptr ? *options : defaults;
  try {
    ZXing::DecodeHints hints;
    // BarcodeFormats is a Flags<BarcodeFormat> over the same bits (ZX_DECLARE_FLAGS in BarcodeFormat.h).
    hints.setFormats(ZXing::BarcodeFormats(static_cast<BarcodeFormat>(o.formats)));
    hints.setTryHarder(o.try_harder != 0);
    hints.setTryRotate(o.try_rotate != 0);
    hints.setTryDownscale(o.try_downscale != 0);
    hints.setIsPure(o.is_pure != 0);
    hints.setBinarizer(static_cast<ZXing::Binarizer>(o.binarizer & 3));
    hints.setMaxNumberOfSymbols(static_cast<uint8_t>(o.max_symbols <= 0 || o.max_symbols > 255 ? 255 : o.max_symbols));
    hints.setReturnCodabarStartEnd(o.codabar_start_end != 0);
    hints.setReturnErrors(false);  // only results whose checksums/ECC verified
    hints.setEanAddOnSymbol(ZXing::EanAddOnSymbol::Ignore);
    ZXing::ImageView view(lum, width, height, ZXing::ImageFormat::Lum, rowStride);
    ZXing::Results found = ZXing::ReadBarcodes(view, hints);
    int rc = exportResults(found, results, count);
    if (rc == CZX_ERR_NOMEM) setError(err, errSize, "czx_read: out of memory");
    return rc;
  } catch (const std::bad_alloc &) {
    setError(err, errSize, "czx_read: out of memory");
    return CZX_ERR_NOMEM;
  } catch (const std::exception &e) {
    setError(err, errSize, e.what());
    return CZX_ERR_EXCEPTION;
  } catch (...) {
    setError(err, errSize, "czx_read: unknown C++ exception");
    return CZX_ERR_EXCEPTION;
  }
}

}  // namespace

struct czx_job {
  const uint8_t *lum;
  int width, height, rowStride;
  czx_options options;
  czx_result *results = nullptr;
  size_t count = 0;
  int rc = CZX_OK;
  char err[256] = {0};
  std::thread thread;

  void run() { rc = readImpl(lum, width, height, rowStride, &options, &results, &count, err, sizeof err); }
};

extern "C" {

void czx_options_init(czx_options *options) {
  if (options == nullptr) return;
  options->formats = 0;
  options->try_harder = 1;
  options->try_rotate = 1;
  options->try_downscale = 1;
  options->binarizer = CZX_BINARIZER_LOCAL_AVERAGE;
  options->max_symbols = 255;
  options->codabar_start_end = 1;
  options->is_pure = 0;
}

int czx_read(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options,
             czx_result **results, size_t *count, char *err, size_t err_size) {
  return readImpl(lum, width, height, row_stride, options, results, count, err, err_size);
}

void czx_free_results(czx_result *results, size_t count) {
  if (results == nullptr) return;
  for (size_t i = 0; i < count; ++i) std::free(results[i].bytes);
  std::free(results);
}

czx_job *czx_start(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options) {
  auto *job = new (std::nothrow) czx_job;
  if (job == nullptr) return nullptr;
  job->lum = lum;
  job->width = width;
  job->height = height;
  job->rowStride = row_stride;
  if (options != nullptr) {
    job->options = *options;
  } else {
    czx_options_init(&job->options);
  }
  try {
    job->thread = std::thread([job] { job->run(); });
  } catch (...) {
    // std::thread throws std::system_error when no thread can be created: decode here instead.
    job->run();
  }
  return job;
}

int czx_finish(czx_job *job, czx_result **results, size_t *count, char *err, size_t err_size) {
  if (job == nullptr) {
    setError(err, err_size, "czx_finish: NULL job");
    return CZX_ERR_ARGUMENT;
  }
  if (job->thread.joinable()) {
    try {
      job->thread.join();
    } catch (...) {
      // join only throws for a non-joinable or self thread, both excluded above; nothing to recover.
    }
  }
  int rc = job->rc;
  if (results != nullptr && count != nullptr) {
    *results = job->results;
    *count = job->count;
  } else {
    czx_free_results(job->results, job->count);
  }
  if (rc != CZX_OK) setError(err, err_size, job->err);
  delete job;
  return rc;
}

}  // extern "C"
