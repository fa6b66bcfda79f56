// What Swift cannot import from <linux/videodev2.h>: the VIDIOC_* request numbers are _IOR/_IOWR macros and
// the V4L2_PIX_FMT_* codes are v4l2_fourcc() macros (docs/swift-on-linux.md: wrap such macros in static
// inline functions). The structs and V4L2_CAP_* constants import directly.
#ifndef CV4L2_H
#define CV4L2_H

#include <linux/videodev2.h>
#include <stdint.h>

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

// ioctl(2) is variadic, which Swift cannot call portably; this fixed-signature wrapper also retries EINTR
// (the V4L2 API documents that any ioctl may fail with EINTR when interrupted by a signal).
// Returns ioctl's result; errno is preserved for the caller.
int cv4l2_ioctl(int fd, unsigned long request, void *argument);

#endif
