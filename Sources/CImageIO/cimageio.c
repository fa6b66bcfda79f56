// PNG and JPEG to 8-bit gray, from memory, without ever terminating the process.
#include "cimageio.h"

#include <setjmp.h>
#include <stdio.h>  // jpeglib.h uses FILE and size_t without including their headers itself
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

static void set_message(char *message, size_t size, const char *text) {
  if (message == NULL || size == 0) return;
  snprintf(message, size, "%s", text);
}

void cimageio_free(void *pointer) { free(pointer); }

static int check_dimensions(uint64_t width, uint64_t height, char *message, size_t message_size) {
  if (width == 0 || height == 0) {
    set_message(message, message_size, "image has zero width or height");
    return CIMAGEIO_CORRUPT;
  }
  if (width * height > CIMAGEIO_MAX_PIXELS || width > 0x7fffffff || height > 0x7fffffff) {
    char text[96];
    snprintf(text, sizeof text, "image too large: %llux%llu", (unsigned long long)width,
             (unsigned long long)height);
    set_message(message, message_size, text);
    return CIMAGEIO_TOO_LARGE;
  }
  return CIMAGEIO_OK;
}

// ---------------------------------------------------------------------------------------------------------
// PNG: libpng's simplified API (png.h "simplified API"): "all valid color types, bit depths, and interlace
// methods are acceptable, and the input image is transformed as necessary to the requested in-memory format
// during png_image_finish_read()". It handles libpng's longjmp internally and reports failures in
// image.message instead of printing or aborting.

static uint8_t luma(unsigned r, unsigned g, unsigned b) {
  // ITU-R BT.601 weights in 10-bit fixed point, the same as ZXing's RGBToLum (ImageView.h).
  return (uint8_t)((306 * r + 601 * g + 117 * b + 0x200) >> 10);
}

// Colour images become gray the way zxing-cpp turns an RGB ImageView into luminance (luma above, on the
// 8-bit sRGB-encoded values as they are stored), which is what ZXingReader decodes: its loader hands the
// file's RGB bytes to ReadBarcodes. libpng's own RGB-to-gray (PNG_FORMAT_GRAY) works in linear light and
// gives coloured codes other gray levels, so a colour PNG is read as RGB and converted here.
int cimageio_decode_png(const uint8_t *data, size_t size, cimageio_gray *out, char *message,
                        size_t message_size) {
  if (data == NULL || out == NULL) {
    set_message(message, message_size, "NULL argument");
    return CIMAGEIO_ARGUMENT;
  }
  out->pixels = NULL;
  out->width = 0;
  out->height = 0;
  png_image image;
  memset(&image, 0, sizeof image);  // png.h: "initialized by setting the png_controlp field 'opaque' to NULL"
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data, size)) {
    set_message(message, message_size, image.message[0] ? image.message : "not a PNG image");
    png_image_free(&image);
    return CIMAGEIO_CORRUPT;
  }
  int rc = check_dimensions(image.width, image.height, message, message_size);
  if (rc != CIMAGEIO_OK) {
    png_image_free(&image);
    return rc;
  }
  // png.h: without this flag "input 16-bit per component data is assumed to be linear" and would be
  // brightened on conversion to sRGB 8-bit; 16-bit scans and PGMs are in practice gamma-encoded like
  // 8-bit ones. Must be set after begin_read, which initializes `flags`.
  image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  const int colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  image.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  size_t bytes = (size_t)image.width * (size_t)image.height;
  uint8_t *pixels = malloc(colour ? bytes * 3 : bytes);
  if (pixels == NULL) {
    png_image_free(&image);
    set_message(message, message_size, "out of memory");
    return CIMAGEIO_NOMEM;
  }
  // png.h: "for grayscale output the green channel is used" as the background when alpha is removed.
  png_color white = {255, 255, 255};
  if (!png_image_finish_read(&image, &white, pixels, (png_int_32)(colour ? image.width * 3 : image.width),
                             NULL)) {
    // e.g. a truncated file: "Not enough image data" / "IDAT: CRC error"
    set_message(message, message_size, image.message[0] ? image.message : "PNG decode failed");
    free(pixels);
    png_image_free(&image);  // finish_read cleans up, free is a documented no-op then
    return CIMAGEIO_CORRUPT;
  }
  if (colour) {
    // In place: pixel i's gray byte is written at i, after its RGB bytes at 3i..3i+2 have been read.
    for (size_t i = 0; i < bytes; ++i) pixels[i] = luma(pixels[3 * i], pixels[3 * i + 1], pixels[3 * i + 2]);
    uint8_t *shrunk = realloc(pixels, bytes);
    if (shrunk != NULL) pixels = shrunk;
  }
  out->pixels = pixels;
  out->width = (int)image.width;
  out->height = (int)image.height;
  return CIMAGEIO_OK;
}

int cimageio_encode_png_gray(const uint8_t *pixels, int width, int height, uint8_t **out, size_t *out_size,
                             char *message, size_t message_size) {
  if (pixels == NULL || out == NULL || out_size == NULL || width <= 0 || height <= 0) {
    set_message(message, message_size, "bad argument");
    return CIMAGEIO_ARGUMENT;
  }
  *out = NULL;
  *out_size = 0;
  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = (png_uint_32)width;
  image.height = (png_uint_32)height;
  image.format = PNG_FORMAT_GRAY;
  png_alloc_size_t needed = 0;
  // png.h PNG_IMAGE_PNG_SIZE_MAX pattern: a NULL memory pointer asks for the size only.
  if (!png_image_write_to_memory(&image, NULL, &needed, 0, pixels, width, NULL)) {
    set_message(message, message_size, image.message);
    return CIMAGEIO_UNSUPPORTED;
  }
  uint8_t *buffer = malloc(needed);
  if (buffer == NULL) {
    set_message(message, message_size, "out of memory");
    return CIMAGEIO_NOMEM;
  }
  if (!png_image_write_to_memory(&image, buffer, &needed, 0, pixels, width, NULL)) {
    set_message(message, message_size, image.message);
    free(buffer);
    return CIMAGEIO_UNSUPPORTED;
  }
  *out = buffer;
  *out_size = needed;
  return CIMAGEIO_OK;
}

// ---------------------------------------------------------------------------------------------------------
// JPEG: libjpeg's default error manager calls exit() in error_exit and prints warnings to stderr
// (jpeglib.h struct jpeg_error_mgr). We replace error_exit with a longjmp back into the decode function,
// and output_message/emit_message with silent versions.

typedef struct {
  struct jpeg_error_mgr base;  // must be first: libjpeg passes &base as cinfo->err
  jmp_buf jump;
  int strict;
  int code;                    // CIMAGEIO_* to report after the longjmp
  char text[JMSG_LENGTH_MAX];  // jpeglib.h: "recommended size of format_message buffer"
} error_context;

static void on_error_exit(j_common_ptr cinfo) {
  error_context *context = (error_context *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, context->text);
  // JERR_CONVERSION_NOTIMPL etc. mean a valid file we cannot convert; everything else is bad data.
  int code = cinfo->err->msg_code;
  context->code = (code == JERR_CONVERSION_NOTIMPL || code == JERR_NOT_COMPILED || code == JERR_ARITH_NOTIMPL)
                      ? CIMAGEIO_UNSUPPORTED
                      : CIMAGEIO_CORRUPT;
  if (code == JERR_OUT_OF_MEMORY) context->code = CIMAGEIO_NOMEM;
  longjmp(context->jump, 1);
}

static void on_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void on_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // trace messages (jpeglib.h: msg_level >= 0 are traces)
  cinfo->err->num_warnings++;  // jpeglib.h: "emit_message should count warnings in num_warnings"
  error_context *context = (error_context *)cinfo->err;
  // The memory source reports running out of data as JWRN_JPEG_EOF and fakes an EOI marker
  // (jerror.h "Premature end of JPEG file"): a truncated file that would otherwise "decode".
  if (context->strict && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    (*cinfo->err->format_message)(cinfo, context->text);
    context->code = CIMAGEIO_CORRUPT;
    longjmp(context->jump, 1);
  }
}

static void install_error_handler(error_context *context, int strict) {
  memset(context, 0, sizeof *context);
  jpeg_std_error(&context->base);
  context->base.error_exit = on_error_exit;
  context->base.output_message = on_output_message;
  context->base.emit_message = on_emit_message;
  context->strict = strict;
}


int cimageio_decode_jpeg(const uint8_t *data, size_t size, int strict, cimageio_gray *out, char *message,
                         size_t message_size) {
  if (data == NULL || out == NULL) {
    set_message(message, message_size, "NULL argument");
    return CIMAGEIO_ARGUMENT;
  }
  out->pixels = NULL;
  out->width = 0;
  out->height = 0;
  if (size == 0) {
    set_message(message, message_size, "empty JPEG data");
    return CIMAGEIO_CORRUPT;
  }
  struct jpeg_decompress_struct cinfo;
  error_context context;
  // Written between setjmp and longjmp, so volatile (C11 7.13.2.1: otherwise indeterminate after longjmp).
  uint8_t *volatile pixels = NULL;
  JSAMPLE *volatile row = NULL;
  install_error_handler(&context, strict);
  // Zeroed before setjmp: jpeg_create_decompress can fail (JERR_BAD_LIBVER, JERR_BAD_STRUCT_SIZE, out of
  // memory) and longjmp here before it has set anything, and jpeg_destroy_decompress (jcomapi.c
  // jpeg_destroy) only skips a structure whose `mem` is NULL. setjmp itself must come first, because
  // create's own errors already end in error_exit's longjmp.
  memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = &context.base;
  if (setjmp(context.jump)) {
    jpeg_destroy_decompress(&cinfo);
    free(pixels);
    free(row);
    set_message(message, message_size, context.text);
    return context.code;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  int rc = check_dimensions(cinfo.image_width, cinfo.image_height, message, message_size);
  if (rc != CIMAGEIO_OK) {
    jpeg_destroy_decompress(&cinfo);
    return rc;
  }
  int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  int gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  // A colour JPEG is decoded to RGB and turned to gray with luma, as zxing-cpp does with the RGB bytes
  // ZXingReader's loader gives it (libjpeg-turbo's own JCS_GRAYSCALE output is the Y channel, which
  // differs where YCbCr-to-RGB clamps). libjpeg-turbo cannot go from CMYK/YCCK to gray or RGB, so those
  // are decoded as CMYK and converted below.
  cinfo.out_color_space = cmyk ? JCS_CMYK : (gray ? JCS_GRAYSCALE : JCS_RGB);
  jpeg_start_decompress(&cinfo);
  size_t width = cinfo.output_width;
  size_t height = cinfo.output_height;
  pixels = malloc(width * height);
  if (pixels == NULL) {
    jpeg_destroy_decompress(&cinfo);
    set_message(message, message_size, "out of memory");
    return CIMAGEIO_NOMEM;
  }
  if (!gray) {
    row = malloc(width * 4);
    if (row == NULL) {
      jpeg_destroy_decompress(&cinfo);
      free(pixels);
      set_message(message, message_size, "out of memory");
      return CIMAGEIO_NOMEM;
    }
  }
  // CMYK JPEGs written by Adobe software (APP14 marker: jpeglib.h saw_Adobe_marker) store inverted ink
  // values, i.e. 255 means no ink; others store ink directly.
  int inverted = cinfo.saw_Adobe_marker;
  while (cinfo.output_scanline < cinfo.output_height) {
    size_t y = cinfo.output_scanline;
    if (gray) {
      JSAMPROW target = pixels + y * width;
      jpeg_read_scanlines(&cinfo, &target, 1);
      continue;
    }
    JSAMPROW target = row;
    jpeg_read_scanlines(&cinfo, &target, 1);
    if (!cmyk) {
      for (size_t x = 0; x < width; ++x) pixels[y * width + x] = luma(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
      continue;
    }
    for (size_t x = 0; x < width; ++x) {
      unsigned c = row[4 * x], m = row[4 * x + 1], yy = row[4 * x + 2], k = row[4 * x + 3];
      if (!inverted) {
        c = 255 - c;
        m = 255 - m;
        yy = 255 - yy;
        k = 255 - k;
      }
      pixels[y * width + x] = luma(c * k / 255, m * k / 255, yy * k / 255);
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  free(row);
  out->pixels = pixels;
  out->width = (int)width;
  out->height = (int)height;
  return CIMAGEIO_OK;
}

int cimageio_encode_jpeg_gray(const uint8_t *pixels, int width, int height, int quality, uint8_t **out,
                              size_t *out_size, char *message, size_t message_size) {
  if (pixels == NULL || out == NULL || out_size == NULL || width <= 0 || height <= 0 || width > 65500 ||
      height > 65500) {
    set_message(message, message_size, "bad argument");
    return CIMAGEIO_ARGUMENT;
  }
  *out = NULL;
  *out_size = 0;
  struct jpeg_compress_struct cinfo;
  error_context context;
  // jpeg_mem_dest (jpeglib.h) mallocs and grows *buffer itself; we own it after finish or on error.
  unsigned char *volatile buffer = NULL;
  unsigned long buffer_size = 0;
  install_error_handler(&context, 0);
  // Zeroed before setjmp, as in cimageio_decode_jpeg: a failing jpeg_create_compress leaves `mem` NULL.
  memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = &context.base;
  if (setjmp(context.jump)) {
    jpeg_destroy_compress(&cinfo);
    free(buffer);
    set_message(message, message_size, context.text);
    return context.code == CIMAGEIO_CORRUPT ? CIMAGEIO_UNSUPPORTED : context.code;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, (unsigned char **)&buffer, &buffer_size);
  cinfo.image_width = (JDIMENSION)width;
  cinfo.image_height = (JDIMENSION)height;
  cinfo.input_components = 1;
  cinfo.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality < 1 ? 1 : (quality > 100 ? 100 : quality), TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW source = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * (size_t)width);
    jpeg_write_scanlines(&cinfo, &source, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  *out = buffer;
  *out_size = buffer_size;
  return CIMAGEIO_OK;
}
