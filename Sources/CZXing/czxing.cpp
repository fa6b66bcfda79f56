// zxing-cpp 3 behind a C ABI. Every entry point catches all exceptions: a C++ exception crossing into
// Swift is undefined behaviour, and ReadBarcodes may throw (e.g. std::bad_alloc on a huge image).
//
// zxing-cpp is the release pinned in deps/zxing-cpp.lock, built by `make deps` with NDEBUG (no assertion
// can end the process) and linked in statically; the traps the shim needed for Debian's 1.4.0 (its
// assertions on ordinary images, zxing-cpp issues #516/#740, and the PDF417 table read of #517, both
// fixed upstream long before 3.0) are gone with it.

// The marker scripts/build-zxing-cpp writes beside the headers it installs. Without it the compiler
// would find no zxing-cpp, or Debian's 1.4.0 in /usr/include, and fail on the first mismatch.
#if !__has_include(<capture-zxing-cpp.h>)
#error "zxing-cpp is not built: run `make deps` (or any make target) first; docs/packaging.md, section zxing-cpp"
#else
#include <capture-zxing-cpp.h>

#include "czxing.h"

#include <ZXing/ReadBarcode.h>
#include <ZXing/Version.h>

#if ZXING_VERSION_MAJOR < 3
#error "czxing.cpp needs zxing-cpp 3 (deps/zxing-cpp.lock): run `make deps`"
#endif

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <new>
#include <string>
#include <thread>
#include <vector>

using ZXing::BarcodeFormat;

static_assert(CZX_CONTENT_BINARY == static_cast<int>(ZXing::ContentType::Binary), "content type");
static_assert(CZX_CONTENT_UNKNOWN_ECI == static_cast<int>(ZXing::ContentType::UnknownECI), "content type");
static_assert(CZX_BINARIZER_LOCAL_AVERAGE == static_cast<int>(ZXing::Binarizer::LocalAverage), "binarizer");
static_assert(CZX_BINARIZER_BOOL_CAST == static_cast<int>(ZXing::Binarizer::BoolCast), "binarizer");

namespace {

void setError(char *err, size_t size, const char *message) {
  if (err == nullptr || size == 0) return;
  std::strncpy(err, message, size - 1);
  err[size - 1] = '\0';
}

// The library formats one CZX bit asks for. Variants are named where the symbology as a whole would
// ask for more than the bit means: Code 39 is read as standard Code 39 (Code39Std: no full-ASCII
// reinterpretation, no Code 32 or PZN rewriting of the payload, as ZBar and zxing-cpp 1.4.0 read it);
// EAN/UPC as its four variants, without ISBN (GTIN.choose in Normalize.swift picks ISBN from the
// digits when the user enabled it).
struct FormatBit {
  int bit;
  BarcodeFormat format;
};
constexpr FormatBit kRequested[] = {
    {CZX_FORMAT_AZTEC, BarcodeFormat::Aztec},
    {CZX_FORMAT_CODABAR, BarcodeFormat::Codabar},
    {CZX_FORMAT_CODE39, BarcodeFormat::Code39Std},
    {CZX_FORMAT_CODE93, BarcodeFormat::Code93},
    {CZX_FORMAT_CODE128, BarcodeFormat::Code128},
    // DataBar Omnidirectional and its stacked forms (DataBar alone would also mean Limited and Expanded:
    // ODReader.cpp reads every DataBar for the symbology).
    {CZX_FORMAT_DATABAR, BarcodeFormat::DataBarOmni},
    {CZX_FORMAT_DATABAR, BarcodeFormat::DataBarStk},
    {CZX_FORMAT_DATABAR, BarcodeFormat::DataBarStkOmni},
    {CZX_FORMAT_DATABAR_EXPANDED, BarcodeFormat::DataBarExp},
    {CZX_FORMAT_DATABAR_EXPANDED, BarcodeFormat::DataBarExpStk},
    {CZX_FORMAT_DATABAR_LIMITED, BarcodeFormat::DataBarLtd},
    {CZX_FORMAT_DATAMATRIX, BarcodeFormat::DataMatrix},
    {CZX_FORMAT_EAN8, BarcodeFormat::EAN8},
    {CZX_FORMAT_EAN13, BarcodeFormat::EAN13},
    {CZX_FORMAT_UPCA, BarcodeFormat::UPCA},
    {CZX_FORMAT_UPCE, BarcodeFormat::UPCE},
    {CZX_FORMAT_ITF, BarcodeFormat::ITF},
    {CZX_FORMAT_MAXICODE, BarcodeFormat::MaxiCode},
    {CZX_FORMAT_PDF417, BarcodeFormat::PDF417},
    {CZX_FORMAT_PDF417, BarcodeFormat::CompactPDF417},
    {CZX_FORMAT_MICROPDF417, BarcodeFormat::MicroPDF417},
    {CZX_FORMAT_QRCODE, BarcodeFormat::QRCodeModel1},
    {CZX_FORMAT_QRCODE, BarcodeFormat::QRCodeModel2},
    {CZX_FORMAT_MICROQRCODE, BarcodeFormat::MicroQRCode},
    {CZX_FORMAT_RMQRCODE, BarcodeFormat::RMQRCode},
    {CZX_FORMAT_DXFILMEDGE, BarcodeFormat::DXFilmEdge},
    {CZX_FORMAT_TELEPEN, BarcodeFormat::Telepen},
};

ZXing::BarcodeFormats requested(int mask) {
  std::vector<BarcodeFormat> formats;
  for (const auto &entry : kRequested)
    if (mask & entry.bit) formats.push_back(entry.format);
  return ZXing::BarcodeFormats(std::move(formats));
}

// The CZX bit of a format the library returned: every variant of a symbology to its bit ("<=" is
// BarcodeFormat.h's "element inside set", e.g. DataBarStk <= DataBar); 0 for one capture does not ask for.
int bitOf(BarcodeFormat f) {
  using enum BarcodeFormat;
  if (f == DataBarLtd) return CZX_FORMAT_DATABAR_LIMITED;
  if (f == DataBarExp || f == DataBarExpStk) return CZX_FORMAT_DATABAR_EXPANDED;
  if (f <= DataBar) return CZX_FORMAT_DATABAR;
  if (f == EAN13 || f == ISBN) return CZX_FORMAT_EAN13;
  if (f == EAN8) return CZX_FORMAT_EAN8;
  if (f == UPCA) return CZX_FORMAT_UPCA;
  if (f == UPCE) return CZX_FORMAT_UPCE;
  if (f == MicroPDF417) return CZX_FORMAT_MICROPDF417;
  if (f <= PDF417) return CZX_FORMAT_PDF417;
  if (f == MicroQRCode) return CZX_FORMAT_MICROQRCODE;
  if (f == RMQRCode) return CZX_FORMAT_RMQRCODE;
  if (f <= QRCode) return CZX_FORMAT_QRCODE;
  if (f <= Aztec) return CZX_FORMAT_AZTEC;
  if (f == DXFilmEdge) return CZX_FORMAT_DXFILMEDGE;
  if (f <= Telepen) return CZX_FORMAT_TELEPEN;
  if (f <= Code39) return CZX_FORMAT_CODE39;
  if (f == Codabar) return CZX_FORMAT_CODABAR;
  if (f == Code93) return CZX_FORMAT_CODE93;
  if (f == Code128) return CZX_FORMAT_CODE128;
  if (f <= ITF) return CZX_FORMAT_ITF;
  if (f == DataMatrix) return CZX_FORMAT_DATAMATRIX;
  if (f == MaxiCode) return CZX_FORMAT_MAXICODE;
  return 0;
}

char *copyText(const std::string &text) {
  auto *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out == nullptr) return nullptr;
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

// Copies the C++ results into plain C structs; returns CZX_ERR_NOMEM (after freeing) if malloc fails.
int exportResults(const ZXing::Barcodes &found, czx_result **results, size_t *count) {
  *results = nullptr;
  *count = 0;
  if (found.empty()) return CZX_OK;
  auto *out = static_cast<czx_result *>(std::calloc(found.size(), sizeof(czx_result)));
  if (out == nullptr) return CZX_ERR_NOMEM;
  size_t n = 0;
  for (const auto &r : found) {
    // ReadBarcodes returns only valid barcodes while returnErrors is false (ReaderOptions.h), but
    // isValid() is the documented test, so it is checked rather than assumed.
    const int bit = bitOf(r.format());
    if (!r.isValid() || bit == 0) continue;
    czx_result &c = out[n];
    c.format = bit;
    std::vector<uint8_t> bytes = r.bytes();  // "raw / standard content without any character set conversion"
    std::string text = r.text(ZXing::TextMode::Plain);  // bytes() transcoded per ECI or guessed charset
    // An EAN-2/5 add-on is appended to the content without a separator (ODMultiUPCEANReader.cpp, "]E3");
    // BarcodeExtra::EanAddOn holds its digits. The main symbol's content stays its own digits.
    const std::string addOn = r.extra(ZXing::BarcodeExtra::EanAddOn);
    if (!addOn.empty() && addOn.size() < sizeof c.add_on && bytes.size() > addOn.size() &&
        text.size() > addOn.size()) {
      bytes.resize(bytes.size() - addOn.size());
      text.resize(text.size() - addOn.size());
      setError(c.add_on, sizeof c.add_on, addOn.c_str());
    }
    // UPC-E is reported as its EAN-13 expansion ("0" + UPC-A, ISO/IEC 15420's "]E0" content); the
    // symbol's own eight digits are in BarcodeExtra::UPCE, which is what ZBar and zxing-cpp 1.4.0 report.
    if (bit == CZX_FORMAT_UPCE) {
      const std::string upce = r.extra(ZXing::BarcodeExtra::UPCE);
      if (upce.size() == 8) {
        bytes.assign(upce.begin(), upce.end());
        text = upce;
      }
    }
    c.length = bytes.size();
    // malloc(0) may return NULL; allocate one byte so a NULL pointer always means failure.
    c.bytes = static_cast<uint8_t *>(std::malloc(bytes.empty() ? 1 : bytes.size()));
    c.text = copyText(text);
    if (c.bytes == nullptr || c.text == nullptr) {
      czx_free_results(out, n + 1);  // calloc'd: the unset pointers of entry n are NULL
      return CZX_ERR_NOMEM;
    }
    if (!bytes.empty()) std::memcpy(c.bytes, bytes.data(), bytes.size());
    c.text_length = text.size();
    const ZXing::Position &p = r.position();  // Quadrilateral: topLeft, topRight, bottomRight, bottomLeft
    for (int i = 0; i < 4; ++i) c.position[i] = czx_point{p[i].x, p[i].y};
    c.orientation = r.orientation();
    setError(c.symbology, sizeof c.symbology, r.symbologyIdentifier().c_str());
    c.has_eci = r.hasECI() ? 1 : 0;
    c.content_type = static_cast<int>(r.contentType());
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
  // An empty BarcodeFormats means "all" to zxing-cpp (ReaderOptions::hasFormat): no bit, no read.
  if (o.formats == 0) return CZX_OK;
  try {
    ZXing::ReaderOptions opts;
    opts.setFormats(requested(o.formats));
    opts.setTryHarder(o.try_harder != 0);
    opts.setTryRotate(o.try_rotate != 0);
    opts.setTryInvert(o.try_invert != 0);
    opts.setTryDownscale(o.try_downscale != 0);
    opts.setIsPure(o.is_pure != 0);
    opts.setBinarizer(static_cast<ZXing::Binarizer>(o.binarizer & 3));
    opts.setMaxNumberOfSymbols(static_cast<uint8_t>(o.max_symbols <= 0 || o.max_symbols > 255 ? 255 : o.max_symbols));
    opts.setReturnErrors(false);  // only results whose checksums/ECC verified
    opts.setEanAddOnSymbol(o.ean_add_on != 0 ? ZXing::EanAddOnSymbol::Read : ZXing::EanAddOnSymbol::Ignore);
    opts.setTextMode(ZXing::TextMode::Plain);
    ZXing::ImageView view(lum, width, height, ZXing::ImageFormat::Lum, rowStride);
    const ZXing::Barcodes found = ZXing::ReadBarcodes(view, opts);
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

void czx_version(int *major, int *minor, int *patch) {
  *major = ZXING_VERSION_MAJOR;
  *minor = ZXING_VERSION_MINOR;
  *patch = ZXING_VERSION_PATCH;
}

void czx_options_init(czx_options *options) {
  if (options == nullptr) return;
  options->formats = 0;
  options->try_harder = 1;
  options->try_rotate = 1;
  options->try_invert = 1;
  options->try_downscale = 1;
  options->binarizer = CZX_BINARIZER_LOCAL_AVERAGE;
  options->max_symbols = 255;
  options->is_pure = 0;
  options->ean_add_on = 0;
}

int czx_read(const uint8_t *lum, int width, int height, int row_stride, const czx_options *options,
             czx_result **results, size_t *count, char *err, size_t err_size) {
  return readImpl(lum, width, height, row_stride, options, results, count, err, err_size);
}

void czx_free_results(czx_result *results, size_t count) {
  if (results == nullptr) return;
  for (size_t i = 0; i < count; ++i) {
    std::free(results[i].bytes);
    std::free(results[i].text);
  }
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

#endif  // capture-zxing-cpp.h
