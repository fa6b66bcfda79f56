// What Swift cannot import from <linux/videodev2.h>: the VIDIOC_* request numbers are _IOR/_IOWR macros and
// the V4L2_PIX_FMT_* codes are v4l2_fourcc() macros (docs/swift-on-linux.md: wrap such macros in static
// inline functions). The structs and V4L2_CAP_* constants import directly.
#ifndef CV4L2_H
#define CV4L2_H

#include <linux/videodev2.h>
#include <stdint.h>
#include <string.h>

static inline unsigned long cv4l2_vidioc_querycap(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long cv4l2_vidioc_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long cv4l2_vidioc_g_fmt(void) { return VIDIOC_G_FMT; }
static inline unsigned long cv4l2_vidioc_s_fmt(void) { return VIDIOC_S_FMT; }
static inline unsigned long cv4l2_vidioc_reqbufs(void) { return VIDIOC_REQBUFS; }
static inline unsigned long cv4l2_vidioc_querybuf(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long cv4l2_vidioc_qbuf(void) { return VIDIOC_QBUF; }
static inline unsigned long cv4l2_vidioc_dqbuf(void) { return VIDIOC_DQBUF; }
static inline unsigned long cv4l2_vidioc_streamon(void) { return VIDIOC_STREAMON; }
static inline unsigned long cv4l2_vidioc_streamoff(void) { return VIDIOC_STREAMOFF; }

static inline uint32_t cv4l2_pix_fmt_grey(void) { return V4L2_PIX_FMT_GREY; }
static inline uint32_t cv4l2_pix_fmt_yuyv(void) { return V4L2_PIX_FMT_YUYV; }
static inline uint32_t cv4l2_pix_fmt_mjpeg(void) { return V4L2_PIX_FMT_MJPEG; }
static inline uint32_t cv4l2_pix_fmt_jpeg(void) { return V4L2_PIX_FMT_JPEG; }
// Packed 4:2:2 with luma at every other byte, the planar YUV formats (luma plane first) and 24-bit RGB.
static inline uint32_t cv4l2_pix_fmt_uyvy(void) { return V4L2_PIX_FMT_UYVY; }
static inline uint32_t cv4l2_pix_fmt_yvyu(void) { return V4L2_PIX_FMT_YVYU; }
static inline uint32_t cv4l2_pix_fmt_vyuy(void) { return V4L2_PIX_FMT_VYUY; }
static inline uint32_t cv4l2_pix_fmt_nv12(void) { return V4L2_PIX_FMT_NV12; }
static inline uint32_t cv4l2_pix_fmt_nv21(void) { return V4L2_PIX_FMT_NV21; }
static inline uint32_t cv4l2_pix_fmt_nv16(void) { return V4L2_PIX_FMT_NV16; }
static inline uint32_t cv4l2_pix_fmt_nv61(void) { return V4L2_PIX_FMT_NV61; }
static inline uint32_t cv4l2_pix_fmt_yuv420(void) { return V4L2_PIX_FMT_YUV420; }
static inline uint32_t cv4l2_pix_fmt_yvu420(void) { return V4L2_PIX_FMT_YVU420; }
static inline uint32_t cv4l2_pix_fmt_yuv422p(void) { return V4L2_PIX_FMT_YUV422P; }
static inline uint32_t cv4l2_pix_fmt_rgb24(void) { return V4L2_PIX_FMT_RGB24; }
static inline uint32_t cv4l2_pix_fmt_bgr24(void) { return V4L2_PIX_FMT_BGR24; }
// The non-contiguous planar formats of the multi-planar API: each plane in a buffer plane of its own,
// the luma plane first (videodev2.h; the V4L2 documentation's pixfmt-yuv-planar).
static inline uint32_t cv4l2_pix_fmt_nv12m(void) { return V4L2_PIX_FMT_NV12M; }
static inline uint32_t cv4l2_pix_fmt_nv21m(void) { return V4L2_PIX_FMT_NV21M; }
static inline uint32_t cv4l2_pix_fmt_nv16m(void) { return V4L2_PIX_FMT_NV16M; }
static inline uint32_t cv4l2_pix_fmt_nv61m(void) { return V4L2_PIX_FMT_NV61M; }
static inline uint32_t cv4l2_pix_fmt_yuv420m(void) { return V4L2_PIX_FMT_YUV420M; }
static inline uint32_t cv4l2_pix_fmt_yvu420m(void) { return V4L2_PIX_FMT_YVU420M; }
static inline uint32_t cv4l2_pix_fmt_yuv422m(void) { return V4L2_PIX_FMT_YUV422M; }
static inline uint32_t cv4l2_pix_fmt_yvu422m(void) { return V4L2_PIX_FMT_YVU422M; }

// The frame format as capture uses it, for either buffer type: struct v4l2_pix_format (single-planar)
// or struct v4l2_pix_format_mplane, which videodev2.h declares __attribute__((packed)), so Swift
// cannot address its fields; these helpers read and write it in C. For the multi-planar type,
// bytesperline and sizeimage are plane 0's: the luma plane, all capture reads.
typedef struct {
  uint32_t width;
  uint32_t height;
  uint32_t pixelformat;
  uint32_t bytesperline;
  uint32_t sizeimage;
  uint32_t num_planes;  // 1 for the single-planar type
} cv4l2_frame_format;

static inline cv4l2_frame_format cv4l2_format_get(const struct v4l2_format *format) {
  cv4l2_frame_format out = {0, 0, 0, 0, 0, 1};
  if (format->type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE) {
    const struct v4l2_pix_format_mplane *mp = &format->fmt.pix_mp;
    out.width = mp->width;
    out.height = mp->height;
    out.pixelformat = mp->pixelformat;
    out.bytesperline = mp->plane_fmt[0].bytesperline;
    out.sizeimage = mp->plane_fmt[0].sizeimage;
    out.num_planes = mp->num_planes;
  } else {
    out.width = format->fmt.pix.width;
    out.height = format->fmt.pix.height;
    out.pixelformat = format->fmt.pix.pixelformat;
    out.bytesperline = format->fmt.pix.bytesperline;
    out.sizeimage = format->fmt.pix.sizeimage;
  }
  return out;
}

// What VIDIOC_S_FMT is asked for, on top of what VIDIOC_G_FMT returned: the pixel format, the size
// when nonzero, progressive frames, and bytesperline and sizeimage 0 for every plane (the V4L2
// documentation, pixfmt-v4l2: an application may set bytesperline to zero to get a reasonable
// default; the previous format's line length would otherwise be kept as padding).
static inline void cv4l2_format_request(struct v4l2_format *format, uint32_t pixelformat, uint32_t width,
                                        uint32_t height) {
  if (format->type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE) {
    struct v4l2_pix_format_mplane *mp = &format->fmt.pix_mp;
    mp->pixelformat = pixelformat;
    if (width) mp->width = width;
    if (height) mp->height = height;
    mp->field = V4L2_FIELD_NONE;
    for (int plane = 0; plane < VIDEO_MAX_PLANES; plane++) {
      mp->plane_fmt[plane].bytesperline = 0;
      mp->plane_fmt[plane].sizeimage = 0;
    }
  } else {
    format->fmt.pix.pixelformat = pixelformat;
    if (width) format->fmt.pix.width = width;
    if (height) format->fmt.pix.height = height;
    format->fmt.pix.field = V4L2_FIELD_NONE;
    format->fmt.pix.bytesperline = 0;
    format->fmt.pix.sizeimage = 0;
  }
}

// A buffer of either type, with room for every plane (VIDIOC_QUERYBUF, VIDIOC_QBUF, VIDIOC_DQBUF).
// For the multi-planar type the kernel reads and writes the planes through m.planes, with length the
// number of elements there: VIDEO_MAX_PLANES, which videobuf2 accepts for any format (it refuses
// fewer elements than the format has planes, or more than VIDEO_MAX_PLANES). Swift may move a value
// between calls, so m.planes is set by cv4l2_buffer_ioctl at each call, never kept.
typedef struct {
  struct v4l2_buffer buffer;
  struct v4l2_plane planes[VIDEO_MAX_PLANES];
} cv4l2_buffer;

static inline cv4l2_buffer cv4l2_buffer_make(uint32_t type, uint32_t index) {
  cv4l2_buffer b;
  memset(&b, 0, sizeof b);
  b.buffer.type = type;
  b.buffer.memory = V4L2_MEMORY_MMAP;
  b.buffer.index = index;
  if (type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE) b.buffer.length = VIDEO_MAX_PLANES;
  return b;
}

static inline uint32_t cv4l2_buffer_index(const cv4l2_buffer *b) { return b->buffer.index; }
static inline uint32_t cv4l2_buffer_flags(const cv4l2_buffer *b) { return b->buffer.flags; }

// Plane 0 of a buffer as mmap(2) and the frame need it: its length and mmap offset (after
// VIDIOC_QUERYBUF), and the bytes the driver filled (after VIDIOC_DQBUF). For the multi-planar type,
// data_offset is where the data starts in the plane, and it is included in bytesused (videodev2.h,
// struct v4l2_plane).
typedef struct {
  uint32_t length;
  uint32_t offset;
  uint32_t bytesused;
  uint32_t data_offset;
} cv4l2_plane0;

static inline cv4l2_plane0 cv4l2_buffer_plane0(const cv4l2_buffer *b) {
  cv4l2_plane0 out = {0, 0, 0, 0};
  if (b->buffer.type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE) {
    out.length = b->planes[0].length;
    out.offset = b->planes[0].m.mem_offset;
    out.bytesused = b->planes[0].bytesused;
    out.data_offset = b->planes[0].data_offset;
  } else {
    out.length = b->buffer.length;
    out.offset = b->buffer.m.offset;
    out.bytesused = b->buffer.bytesused;
  }
  return out;
}

// ioctl(2) is variadic, which Swift cannot call portably; this fixed-signature wrapper also retries EINTR
// (the V4L2 API documents that any ioctl may fail with EINTR when interrupted by a signal).
// Returns ioctl's result; errno is preserved for the caller.
int cv4l2_ioctl(int fd, unsigned long request, void *argument);

// VIDIOC_QUERYBUF, VIDIOC_QBUF or VIDIOC_DQBUF on `b`, its m.planes pointed at its own planes first
// for the multi-planar type; as cv4l2_ioctl otherwise.
int cv4l2_buffer_ioctl(int fd, unsigned long request, cv4l2_buffer *b);

#endif
