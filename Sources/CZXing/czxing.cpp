// zxing-cpp 1.4.0 behind a C ABI. Every entry point catches all exceptions: a C++ exception crossing into
// Swift is undefined behaviour, and ReadBarcodes may throw (e.g. std::bad_alloc on a huge image).
#include "czxing.h"

#include "ReadBarcode.h"
#include "ZXVersion.h"

#include <algorithm>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>  // sigaction, siginfo_t (POSIX; <csignal> only promises signal/raise)

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
    // text() is bytes() decoded per ECI segment, or with the character set the library guesses when the
    // symbol has no ECI (Result.h); with an EAN add-on it is "main addon" (space-separated).
    const std::string text = r.text();  // std::string under ZX_USE_UTF8 (Result.h: utf8())
    c.text = static_cast<char *>(std::malloc(text.size() + 1));
    if (c.text == nullptr) {
      std::free(c.bytes);
      czx_free_results(out, n);
      return CZX_ERR_NOMEM;
    }
    std::memcpy(c.text, text.data(), text.size());
    c.text[text.size()] = '\0';
    c.text_length = text.size();
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

// --- Surviving zxing-cpp's assertions -----------------------------------------------------------------
// Debian builds zxing-cpp 1.4.0 with assertions enabled, and 1.4.0 asserts `lineCount() == 1` in
// Result::operator== whenever two linear results with equal bytes are compared (zxing-cpp issues #516,
// #740, the latter reported against Debian's 1.4.0-3+b1); later releases return early for two
// multi-line results instead. ReadBarcodes compares results:
//  - across the downscaled pyramid layers (DecodeHints::tryDownscale, images whose smaller side is at
//    least downscaleThreshold = 500 px): ANY linear code in such an image aborts the process;
//  - when de-duplicating: two identical linear codes in one image abort the process.
// Matrix formats (Aztec, DataMatrix, MaxiCode, PDF417, QR, Micro QR) compare by position and never reach
// the assertion. So the trap below guards exactly the linear formats: Codabar, Code 39, Code 93,
// Code 128, DataBar, DataBar Expanded, EAN-8, EAN-13, ITF, UPC-A, UPC-E; and BarcodeReader routes those
// to ZBar, which reads every one of them, whenever ZBar is enabled, so the trap only runs for a
// reader without ZBar (`BarcodeReader(engines: [.zxing])`).
//
// Debian's own ZXingReader dies the same way on such images. assert() ends in abort(), which raises
// SIGABRT in the calling thread; glibc's abort() (2.36) releases its lock and resets its stage before
// raise(), so a handler that siglongjmps back out leaves libc usable. Only the zxing-cpp call on this thread
// is abandoned: its frames are not unwound (no destructors run; its heap objects leak, a few bitmaps), which
// is the price of not terminating, and why the trap exists only for the versions that need it: chosen at
// build time from ZXVersion.h, for every release before 2.0.

#if ZXING_VERSION_MAJOR < 2
#define CZX_ABORT_TRAP 1
#else
#define CZX_ABORT_TRAP 0
#endif

#if CZX_ABORT_TRAP
thread_local sigjmp_buf *tAbortJump = nullptr;
std::mutex gHandlerMutex;
struct sigaction gPreviousAbortAction;  // written under gHandlerMutex before our handler is installed

void onAbort(int signal, siginfo_t *info, void *context) {
  sigjmp_buf *jump = tAbortJump;
  if (jump != nullptr) {
    tAbortJump = nullptr;
    siglongjmp(*jump, 1);  // back into runTrapped; restores the signal mask saved by sigsetjmp(…, 1)
  }
  // Not inside zxing-cpp: behave as whoever was installed before us.
  const struct sigaction &previous = gPreviousAbortAction;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;
  if (previous.sa_handler == SIG_DFL) {
    // Restore the default action and re-raise: it is delivered once this handler returns, so an external
    // `kill -ABRT` still terminates the process (abort() would re-raise by itself, kill does not).
    struct sigaction fallback;
    std::memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigaction(SIGABRT, &fallback, nullptr);
    raise(SIGABRT);
    return;
  }
  previous.sa_handler(signal);
}

// Installs onAbort unless it is already the SIGABRT action; re-checked on every call because another
// component (e.g. a crash reporter) may have replaced it since.
void ensureAbortHandler() {
  std::lock_guard<std::mutex> lock(gHandlerMutex);
  struct sigaction current;
  if (sigaction(SIGABRT, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == onAbort) return;
  struct sigaction ours;
  std::memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = onAbort;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  gPreviousAbortAction = current;
  sigaction(SIGABRT, &ours, nullptr);
}
#endif

// --- Surviving zxing-cpp's out-of-bounds reads ----------------------------------------------------------
// zxing-cpp 1.4.0's PDF417 decoder can index its Galois-field tables with a negative codeword count
// (ModulusGF::multiply via ModulusPoly::evaluateAt; zxing-cpp issue #517, fixed later) on a blurred or
// damaged PDF417. Debian builds it without bounds checks, so that is a read outside the table: harmless
// or SIGSEGV depending on what lies there, which is why a batch of photographed labels died now and then.
// The faulting access is a read, so no memory was written; siglongjmp back out of the library abandons
// that call (its frames are not unwound: a few bitmaps leak), and the image is reported without
// zxing-cpp's reading. A fault anywhere else goes to whoever handled the signal before us.
thread_local sigjmp_buf *tFaultJump = nullptr;
std::mutex gFaultMutex;
struct sigaction gPreviousFaultAction[2];  // SIGSEGV, SIGBUS; written under gFaultMutex before installing

void onFault(int signal, siginfo_t *info, void *context) {
  sigjmp_buf *jump = tFaultJump;
  if (jump != nullptr) {
    tFaultJump = nullptr;
    siglongjmp(*jump, 1);
  }
  const struct sigaction &previous = gPreviousFaultAction[signal == SIGBUS ? 1 : 0];
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  // Default action: restore it; returning re-executes the faulting access, which now terminates.
  struct sigaction fallback;
  std::memset(&fallback, 0, sizeof fallback);
  fallback.sa_handler = SIG_DFL;
  sigaction(signal, &fallback, nullptr);
}

void ensureFaultHandlers() {
  std::lock_guard<std::mutex> lock(gFaultMutex);
  const int signals[2] = {SIGSEGV, SIGBUS};
  for (int i = 0; i < 2; ++i) {
    struct sigaction current;
    if (sigaction(signals[i], nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == onFault) continue;
    struct sigaction ours;
    std::memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = onFault;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    gPreviousFaultAction[i] = current;
    sigaction(signals[i], &ours, nullptr);
  }
}

thread_local bool tFaulted = false;

// Runs body under the fault trap; false (and tFaulted) if it faulted.
template <class Body> bool guarded(Body body) {
  ensureFaultHandlers();
  sigjmp_buf jump;
  if (sigsetjmp(jump, 1) != 0) {
    tFaulted = true;
    return false;
  }
  tFaultJump = &jump;
  body();
  tFaultJump = nullptr;
  return true;
}

bool readGuarded(const ZXing::ImageView &view, const ZXing::DecodeHints &hints, ZXing::Results &out) {
  return guarded([&] {
    ZXing::Results found = ZXing::ReadBarcodes(view, hints);
    out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  });
}

// Runs ReadBarcodes; returns false if it aborted (then `out` is left untouched). Only linear formats
// with an asserting zxing-cpp go through the abort trap; every call goes through the fault trap.
bool readTrapped(const ZXing::ImageView &view, const ZXing::DecodeHints &hints, ZXing::Results &out) {
#if CZX_ABORT_TRAP
  const bool linear = !(hints.formats() & ZXing::BarcodeFormats(BarcodeFormat::LinearCodes)).empty() ||
                      hints.formats().empty();
  if (linear) {
    ensureAbortHandler();
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) != 0) {
      tFaultJump = nullptr;  // set by readGuarded in the frame the assertion left
      return false;          // tAbortJump was cleared by the handler
    }
    tAbortJump = &jump;
    readGuarded(view, hints, out);
    tAbortJump = nullptr;
    return true;
  }
#endif
  readGuarded(view, hints, out);
  return true;
}

int readImpl(const uint8_t *lum, int width, int height, int rowStride, const czx_options *options,
             czx_result **results, size_t *count, int *aborts, char *err, size_t errSize) {
  if (aborts != nullptr) *aborts = 0;
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
    // BarcodeFormats is a Flags<BarcodeFormat> over the same bits (ZX_DECLARE_FLAGS in BarcodeFormat.h); an
    // empty set means "all" to DecodeHints::hasFormat.
    auto all = ZXing::BarcodeFormats(static_cast<BarcodeFormat>(o.formats));
    if (all.empty()) all = BarcodeFormat::Any;
    auto matrix = all & ZXing::BarcodeFormats(BarcodeFormat::MatrixCodes);
    auto linear = all & ZXing::BarcodeFormats(BarcodeFormat::LinearCodes);

    ZXing::DecodeHints hints;
    hints.setTryHarder(o.try_harder != 0);
    hints.setTryRotate(o.try_rotate != 0);
    hints.setTryDownscale(o.try_downscale != 0);
    hints.setIsPure(o.is_pure != 0);
    hints.setBinarizer(static_cast<ZXing::Binarizer>(o.binarizer & 3));
    const uint8_t maxSymbols = static_cast<uint8_t>(o.max_symbols <= 0 || o.max_symbols > 255 ? 255 : o.max_symbols);
    hints.setMaxNumberOfSymbols(maxSymbols);
    hints.setReturnCodabarStartEnd(o.codabar_start_end != 0);
    hints.setReturnErrors(false);  // only results whose checksums/ECC verified
    // Read EAN-2/EAN-5 add-ons when present (DecodeHints.h: "Read: read EAN-2/EAN-5 Add-On symbol if
    // found"); the result then holds main and add-on.
    hints.setEanAddOnSymbol(ZXing::EanAddOnSymbol::Read);
    ZXing::ImageView view(lum, width, height, ZXing::ImageFormat::Lum, rowStride);

    ZXing::Results found;
    int caught = 0;
    // Downscaled layers only exist from downscaleThreshold on ("Image size ( min(width, height) ) threshold
    // at which to start downscaled scanning", DecodeHints.h). Below it, one call over all formats shares a
    // single binarization; above it, matrix formats keep downscaling in a call of their own and linear
    // ones are read without. Whenever linear formats take part, downscaling is off, so this choice only
    // affects speed, never the assertion.
    const bool pyramid = o.try_downscale != 0 && std::min(width, height) >= hints.downscaleThreshold();
    if (matrix.empty() || linear.empty() || !pyramid) {
      ZXing::DecodeHints allHints = hints;
      allHints.setFormats(all);
      if (!linear.empty()) allHints.setTryDownscale(false);
      if (readTrapped(view, allHints, found)) {
        linear = ZXing::BarcodeFormats();  // done
        matrix = ZXing::BarcodeFormats();
      } else {
        ++caught;  // two identical linear codes: fall through to the separate, safer reads
      }
    }
    // Matrix codes compare by position (IsInside), never reaching the assertion: full settings.
    if (!matrix.empty()) {
      ZXing::DecodeHints matrixHints = hints;
      matrixHints.setFormats(matrix);
      if (!readTrapped(view, matrixHints, found)) ++caught;
    }
    // Linear codes: no downscaled layers (they abort on every linear code, see above). If the image holds
    // two identical linear codes, read a single linear symbol, which cannot be compared with another one.
    if (!linear.empty()) {
      ZXing::DecodeHints linearHints = hints;
      linearHints.setFormats(linear);
      linearHints.setTryDownscale(false);
      if (caught > 0 || !readTrapped(view, linearHints, found)) {
        if (caught == 0) ++caught;
        linearHints.setMaxNumberOfSymbols(1);
        if (!readTrapped(view, linearHints, found)) ++caught;
      }
    }
    if (aborts != nullptr) *aborts = caught;
    if (tFaulted) {
      tFaulted = false;
      setError(err, errSize, "zxing-cpp read outside its tables on this image (caught; its reading is left out)");
      return CZX_ERR_FAULT;
    }
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

#if CZX_ABORT_TRAP
// glibc's assert() calls __assert_fail (assert.h), which prints "file:line: function: Assertion `…'
// failed." to stderr and then calls abort(). Defined here, in the executable, it takes the place of
// libc's for the whole process (the dynamic linker binds libZXing's reference to the first definition
// in the global scope, the executable's). Inside a trapped read it goes straight back to runTrapped:
// no message (the case is expected and handled) and no signal. Anywhere else it does what glibc's does.
extern "C" void __assert_fail(const char *assertion, const char *file, unsigned int line,
                                           const char *function) noexcept {
  sigjmp_buf *jump = tAbortJump;
  if (jump != nullptr) {
    tAbortJump = nullptr;
    siglongjmp(*jump, 1);
  }
  std::fprintf(stderr, "%s:%u: %s%sAssertion `%s' failed.\n", file, line, function ? function : "",
               function ? ": " : "", assertion);
  std::fflush(stderr);
  std::abort();
}
#endif

struct czx_job {
  const uint8_t *lum;
  int width, height, rowStride;
  czx_options options;
  czx_result *results = nullptr;
  size_t count = 0;
  int rc = CZX_OK;
  int aborts = 0;
  char err[256] = {0};
  std::thread thread;

  void run() { rc = readImpl(lum, width, height, rowStride, &options, &results, &count, &aborts, err, sizeof err); }
};

extern "C" {

int czx_abort_trap(void) { return CZX_ABORT_TRAP; }

void czx_version(int *major, int *minor, int *patch) {
  *major = ZXING_VERSION_MAJOR;
  *minor = ZXING_VERSION_MINOR;
  *patch = ZXING_VERSION_PATCH;
}

int czx_fault_trap_selftest(void) {
  // The trap's own check: a read through a null pointer inside the guard, as zxing-cpp's out-of-bounds
  // table read would fault. 1 when it was caught and the thread goes on.
  static volatile int *volatile nowhere = nullptr;
  const bool finished = guarded([] { (void)*nowhere; });
  const bool caught = !finished && tFaulted;
  tFaulted = false;
  return caught ? 1 : 0;
}

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
             czx_result **results, size_t *count, int *aborts, char *err, size_t err_size) {
  return readImpl(lum, width, height, row_stride, options, results, count, aborts, err, err_size);
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

int czx_finish(czx_job *job, czx_result **results, size_t *count, int *aborts, char *err, size_t err_size) {
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
  if (aborts != nullptr) *aborts = job->aborts;
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
