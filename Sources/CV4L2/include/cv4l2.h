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

// ioctl(2) is variadic, which Swift cannot call portably; this fixed-signature wrapper also retries EINTR
// (the V4L2 API documents that any ioctl may fail with EINTR when interrupted by a signal).
// Returns ioctl's result; errno is preserved for the caller.
int cv4l2_ioctl(int fd, unsigned long request, void *argument);

#endif
