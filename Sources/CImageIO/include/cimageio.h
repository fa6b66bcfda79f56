// PNG (libpng 1.6) and JPEG (libjpeg-turbo) decoding from memory into 8-bit grayscale, for Swift.
// Pure C, no libpng/libjpeg types leak into this header, so Swift importers need neither header.
#ifndef CIMAGEIO_H
#define CIMAGEIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  CIMAGEIO_OK = 0,
  CIMAGEIO_CORRUPT = 1,      // not a valid/complete PNG or JPEG stream
  CIMAGEIO_UNSUPPORTED = 2,  // valid but not convertible (e.g. an unknown JPEG colour space)
  CIMAGEIO_NOMEM = 3,
  CIMAGEIO_TOO_LARGE = 4,    // more than CIMAGEIO_MAX_PIXELS pixels
  CIMAGEIO_ARGUMENT = 5,     // NULL pointers, zero sizes
};

// Upper bound on width * height, so a forged header cannot make us allocate gigabytes (256 MP is far above
// any camera or barcode image).
#define CIMAGEIO_MAX_PIXELS ((uint64_t)1 << 28)

// A decoded image: row-major, one byte per pixel, stride == width. `pixels` is malloc'd; release it with
// cimageio_free.
typedef struct cimageio_gray {
  uint8_t *pixels;
  int width;
  int height;
} cimageio_gray;

// Any PNG colour type, bit depth (1-16), palette, tRNS/alpha and interlace. Alpha is composited onto white
// (barcodes are dark on light; transparent pixels over black would swallow the bars).
int cimageio_decode_png(const uint8_t *data, size_t size, cimageio_gray *out, char *message,
                        size_t message_size);

// Baseline/progressive JPEG, grayscale/YCbCr/RGB/CMYK/YCCK. libjpeg errors never exit() the process and
// warnings are not printed. With `strict` != 0 a truncated stream ("Premature end of JPEG file") is an
// error (files); with 0 it is accepted as libjpeg does, grey-filling the rest (camera MJPEG frames).
int cimageio_decode_jpeg(const uint8_t *data, size_t size, int strict, cimageio_gray *out, char *message,
                         size_t message_size);

// Encoders for 8-bit gray images (stride == width): used by tests and to save frames. On success *out is a
// malloc'd buffer of *out_size bytes to release with cimageio_free.
int cimageio_encode_jpeg_gray(const uint8_t *pixels, int width, int height, int quality, uint8_t **out,
                              size_t *out_size, char *message, size_t message_size);
int cimageio_encode_png_gray(const uint8_t *pixels, int width, int height, uint8_t **out, size_t *out_size,
                             char *message, size_t message_size);

void cimageio_free(void *pointer);

#ifdef __cplusplus
}
#endif

#endif
