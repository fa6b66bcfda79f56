#include "cv4l2.h"

#include <errno.h>
#include <sys/ioctl.h>

int cv4l2_ioctl(int fd, unsigned long request, void *argument) {
  int result;
  do {
    result = ioctl(fd, request, argument);
  } while (result == -1 && errno == EINTR);
  return result;
}

int cv4l2_buffer_ioctl(int fd, unsigned long request, cv4l2_buffer *b) {
  if (b->buffer.type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE) {
    b->buffer.m.planes = b->planes;
    b->buffer.length = VIDEO_MAX_PLANES;
  }
  return cv4l2_ioctl(fd, request, b);
}
