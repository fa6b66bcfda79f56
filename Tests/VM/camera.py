#!/usr/bin/python3
"""The camera tier, inside the VM: vivid (the kernel's Virtual Video Test Driver) as the camera, the
scenario as what stands in front of it.

vivid is loaded with one HDMI capture input and one HDMI output (n_devs=1 node_types=0x101
num_inputs=1 input_types=0x3 num_outputs=1 output_types=0x1: bit 0 a video capture node, bit 8 a
video output node; input type 3 HDMI; output bit 1 HDMI; Documentation/admin-guide/media/vivid.rst).
With its capture node's "Loop Video" control on, what is written to the output node is what the
capture node delivers, through the same ioctls and buffers as a USB camera, provided that the two
have the same frame size and the same fourcc (vivid-vid-common.c, vivid_vid_can_loop) and that the
HDMI input has a signal (DV timings set; the admin guide's "Looping video" section). The output
thread only dequeues a buffer while another is queued behind it (vivid-kthread-out.c): the last frame
written stays on the output, so a code written once stays in view until the next frame replaces it.

Frames are drawn on the host at run time (zint, then ImageMagick to a PGM of the frame size: see
vm.py, draw_frames) and converted here to the pixel format under test: gray is the luma plane of every
YUV format, the even or odd bytes of the packed 4:2:2 ones, and R = G = B for RGB (with chroma at 128
the picture is the same gray). The output node is fed by memory-mapped streaming I/O (Writer).
"""

import ctypes
import errno
import fcntl
import mmap
import os
import struct
import subprocess
import threading
import time

VIVID_OPTIONS = ["n_devs=1", "node_types=0x101", "num_inputs=1", "input_types=0x3", "num_outputs=1",
                 "output_types=0x1"]
SYSFS = "/sys/class/video4linux"


class CameraFailure(Exception):
    pass


def run(command, log, check=True):
    done = subprocess.run(command, capture_output=True, text=True)
    log(f"  # {' '.join(command)} -> {done.returncode}")
    for line in (done.stdout + done.stderr).splitlines()[:40]:
        log(f"  #   {line}")
    if check and done.returncode != 0:
        raise CameraFailure(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def nodes():
    """vivid's nodes by their sysfs name: {"vid-cap": "/dev/videoN", "vid-out": "/dev/videoM"}."""
    found = {}
    if not os.path.isdir(SYSFS):
        return found
    for entry in os.listdir(SYSFS):
        try:
            with open(os.path.join(SYSFS, entry, "name")) as f:
                name = f.read().strip()
        except OSError:
            continue
        if name.startswith("vivid-"):
            found[name.split("-", 2)[2]] = f"/dev/{entry}"
    return found


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise CameraFailure(f"{what} not there after {seconds} s")


def unload(log):
    """vivid removed (its nodes go with it); a no-op when it is not loaded."""
    if os.path.isdir("/sys/module/vivid"):
        run(["modprobe", "-r", "vivid"], log)
    wait_for(lambda: not nodes(), 30, "vivid's nodes gone")


def load(log, multiplanar=False):
    """vivid loaded afresh; returns (capture node, output node) once udev-less devtmpfs has both."""
    unload(log)
    options = VIVID_OPTIONS + (["multiplanar=2"] if multiplanar else [])
    run(["modprobe", "vivid"] + options, log)
    found = wait_for(lambda: (lambda n: n if {"vid-cap", "vid-out"} <= set(n) and
                              all(os.path.exists(p) for p in n.values()) else None)(nodes()),
                     30, "vivid's capture and output nodes")
    return found["vid-cap"], found["vid-out"]


def dv_timings_index(device, width, height, log):
    """The index of a progressive W×H entry in the node's VIDIOC_ENUM_DV_TIMINGS list (v4l2-ctl
    --list-dv-timings prints "Index: N" then "Active width:"/"Active height:" lines)."""
    listing = run(["v4l2-ctl", "-d", device, "--list-dv-timings"], lambda _: None).stdout
    index = size = None
    for line in listing.splitlines():
        line = line.strip()
        if line.startswith("Index:"):
            if index is not None and size == (width, height):
                return index
            index, size = int(line.split(":")[1]), (None, None)
        elif line.startswith("Active width:"):
            size = (int(line.split(":")[1]), size[1] if size else None)
        elif line.startswith("Active height:"):
            size = (size[0] if size else None, int(line.split(":")[1]))
        elif line.startswith("Frame format:") and "progressive" not in line:
            size = (None, None)
    if index is not None and size == (width, height):
        return index
    raise CameraFailure(f"{device}: no {width}x{height} progressive DV timings")


def capture_format(capture, log):
    """The capture node's current (width, height, fourcc), as v4l2-ctl --get-fmt-video prints them."""
    shown = run(["v4l2-ctl", "-d", capture, "--get-fmt-video"], log).stdout
    size = fourcc = None
    for row in shown.splitlines():
        key, _, value = row.strip().partition(":")
        if key.strip() == "Width/Height":
            size = tuple(int(v) for v in value.strip().split("/"))
        elif key.strip() == "Pixel Format":
            fourcc = value.strip().split("'")[1]
    if size is None or fourcc is None:
        raise CameraFailure(f"{capture}: no format in {shown!r}")
    return size[0], size[1], fourcc


def configure(capture, output, width, height, fourcc, log, streaming=False):
    """The loop set up for W×H frames of `fourcc` on both sides; returns the output's line length and
    frame size as the driver set them. `streaming`: a reader already streams from the capture node,
    which then refuses new DV timings and formats (EBUSY): only the output side and the controls are
    set, and the caller passes the capture node's own size and format."""
    for device in (output,) if streaming else (capture, output):
        index = dv_timings_index(device, width, height, log)
        run(["v4l2-ctl", "-d", device, f"--set-dv-bt-timings=index={index}"], log)
    # Loop Video on; the OSD text (counters, the time) off, so nothing is drawn over the looped picture.
    run(["v4l2-ctl", "-d", capture, "-c", "loop_video=1,osd_text_mode=2"], log)
    spec = f"width={width},height={height},pixelformat={fourcc}"
    if not streaming:
        run(["v4l2-ctl", "-d", capture, f"--set-fmt-video={spec}"], log)
    run(["v4l2-ctl", "-d", output, f"--set-fmt-video-out={spec}"], log)
    shown = run(["v4l2-ctl", "-d", output, "--get-fmt-video-out"], log).stdout
    line, size = None, None
    for row in shown.splitlines():
        key, _, value = row.strip().partition(":")
        if key.strip() == "Bytes per Line" and line is None:
            line = int(value)
        elif key.strip() == "Size Image" and size is None:
            size = int(value)
    if not line or not size:
        raise CameraFailure(f"{output}: no line length or frame size in {shown!r}")
    return line, size


def read_pgm(path):
    """A binary PGM (P5, maxval 255) as (width, height, bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    fields, position = [], 0
    while len(fields) < 4:
        while data[position:position + 1].isspace():
            position += 1
        if data[position:position + 1] == b"#":
            position = data.index(b"\n", position) + 1
            continue
        end = position
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[position:end])
        position = end
    if fields[0] != b"P5" or fields[3] != b"255":
        raise CameraFailure(f"{path}: not an 8-bit binary PGM")
    width, height = int(fields[1]), int(fields[2])
    pixels = data[position + 1:position + 1 + width * height]
    if len(pixels) != width * height:
        raise CameraFailure(f"{path}: short")
    return width, height, pixels


def convert(gray, width, height, fourcc, line, size):
    """The gray picture in `fourcc`, with the driver's line length (`line`: bytes per line of the first
    plane) and frame size."""
    n = width * height
    if fourcc in ("YUYV", "YVYU", "UYVY", "VYUY"):
        packed = bytearray(b"\x80" * (2 * n))
        luma = 0 if fourcc in ("YUYV", "YVYU") else 1
        packed[luma::2] = gray
        rows, row_bytes = packed, 2 * width
    elif fourcc in ("RGB3", "BGR3"):
        packed = bytearray(3 * n)
        packed[0::3] = gray
        packed[1::3] = gray
        packed[2::3] = gray
        rows, row_bytes = packed, 3 * width
    else:
        rows, row_bytes = bytearray(gray), width
    if line != row_bytes:
        padded = bytearray(line * height)
        for y in range(height):
            padded[y * line:y * line + row_bytes] = rows[y * row_bytes:(y + 1) * row_bytes]
        rows = padded
    frame = bytearray(rows)
    # Chroma planes (NV12/NV21: one of W×H/2, NV16/NV61 and 422P: W×H, YU12/YV12: two of W×H/4): 128.
    frame += b"\x80" * (size - len(frame))
    return bytes(frame[:size])


def _iowr(number, size, direction=3):
    """The ioctl request number of VIDIOC_* (asm-generic/ioctl.h: dir << 30 | size << 16 | 'V' << 8 | nr;
    direction 3 read/write, 1 write)."""
    return direction << 30 | size << 16 | ord("V") << 8 | number


# videodev2.h on x86_64: struct v4l2_requestbuffers (20 bytes), struct v4l2_buffer (88: index, type,
# bytesused, flags, field, padding, timestamp, timecode, sequence, memory, m, length, reserved2,
# request_fd, padding) and struct v4l2_plane (64: bytesused, length, m, data_offset, reserved[11]).
REQUESTBUFFERS = struct.Struct("=IIIIB3x")
BUFFER = struct.Struct("=IIIII4xqqIIBBBB4sIIQIIi4x")
PLANE = struct.Struct("=IIQI44x")
VIDIOC_REQBUFS = _iowr(8, REQUESTBUFFERS.size)
VIDIOC_QUERYBUF = _iowr(9, BUFFER.size)
VIDIOC_QBUF = _iowr(15, BUFFER.size)
VIDIOC_DQBUF = _iowr(17, BUFFER.size)
VIDIOC_STREAMON = _iowr(18, 4, direction=1)
VIDIOC_STREAMOFF = _iowr(19, 4, direction=1)
BUF_TYPE_VIDEO_OUTPUT = 2
BUF_TYPE_VIDEO_OUTPUT_MPLANE = 10
MEMORY_MMAP = 1
OUTPUT_BUFFERS = 4


class Writer:
    """The output node, fed by memory-mapped streaming I/O from a thread (vivid refuses write(2) on it:
    EINVAL). show(name) puts a frame in view: written into a free buffer and queued (the first one
    twice, so the output streams with one frame held); `queued` records when each new frame's
    VIDIOC_QBUF returned (CLOCK_MONOTONIC), the moment it was on the output queue. Multi-planar
    devices get one plane per buffer: every format the scenarios write is one plane (NV12, not NV12M)."""

    def __init__(self, output, frames, width, height, fourcc, line, size, log, multiplanar=False):
        self.frames = {}
        for name, path in frames.items():
            w, h, gray = read_pgm(path)
            if (w, h) != (width, height):
                raise CameraFailure(f"{path} is {w}x{h}, not {width}x{height}")
            self.frames[name] = convert(gray, w, h, fourcc, line, size)
        self.size = size
        self.type = BUF_TYPE_VIDEO_OUTPUT_MPLANE if multiplanar else BUF_TYPE_VIDEO_OUTPUT
        self.fd = os.open(output, os.O_RDWR)
        self.log = log
        self.maps = []
        self.planes = []
        request = bytearray(REQUESTBUFFERS.pack(OUTPUT_BUFFERS, self.type, MEMORY_MMAP, 0, 0))
        fcntl.ioctl(self.fd, VIDIOC_REQBUFS, request)
        count = REQUESTBUFFERS.unpack(request)[0]
        if count < 2:
            raise CameraFailure(f"{output}: {count} output buffers")
        for index in range(count):
            buffer, plane = self.buffer(index)
            fcntl.ioctl(self.fd, VIDIOC_QUERYBUF, buffer)
            offset, length = self.placement(buffer, plane)
            self.maps.append(mmap.mmap(self.fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                                       offset=offset))
        self.free = list(range(count))
        self.streaming = False
        self.queued = []
        self.lock = threading.Condition()
        self.wanted = None
        self.shown = None
        self.stopped = False
        self.error = None
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def buffer(self, index, bytesused=0):
        """A v4l2_buffer for `index` (and, multi-planar, its one v4l2_plane, which m.planes points to)."""
        if self.type == BUF_TYPE_VIDEO_OUTPUT:
            return bytearray(BUFFER.pack(index, self.type, bytesused, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, b"",
                                         0, MEMORY_MMAP, 0, 0, 0, 0)), None
        plane = ctypes.create_string_buffer(PLANE.pack(bytesused, 0, 0, 0), PLANE.size)
        return bytearray(BUFFER.pack(index, self.type, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, b"", 0, MEMORY_MMAP,
                                     ctypes.addressof(plane), 1, 0, 0)), plane

    def placement(self, buffer, plane):
        fields = BUFFER.unpack(buffer)
        if plane is None:
            return fields[16] & 0xFFFFFFFF, fields[17]
        _, length, offset, _ = PLANE.unpack(plane.raw)
        return offset & 0xFFFFFFFF, length

    def queue(self, index, frame):
        self.maps[index][:len(frame)] = frame
        buffer, plane = self.buffer(index, len(frame))
        fcntl.ioctl(self.fd, VIDIOC_QBUF, buffer)

    def take(self):
        """A free buffer: one never queued, or one the output is done with (VIDIOC_DQBUF blocks until the
        output thread has moved past it, at most a frame period)."""
        if self.free:
            return self.free.pop(0)
        buffer, plane = self.buffer(0)
        fcntl.ioctl(self.fd, VIDIOC_DQBUF, buffer)
        return BUFFER.unpack(buffer)[0]

    def show(self, name, wait=True):
        with self.lock:
            self.wanted = name
            self.lock.notify_all()
            if wait:
                ok = self.lock.wait_for(lambda: self.shown == name or self.error, 30)
                if self.error:
                    raise CameraFailure(f"writing frames: {self.error}")
                if not ok:
                    raise CameraFailure(f"frame {name} not queued in 30 s")

    def loop(self):
        try:
            while True:
                with self.lock:
                    self.lock.wait_for(lambda: self.stopped or self.wanted != self.shown)
                    if self.stopped:
                        return
                    name = self.wanted
                frame = self.frames[name]
                for _ in range(1 if self.streaming else 2):
                    self.queue(self.take(), frame)
                if not self.streaming:
                    fcntl.ioctl(self.fd, VIDIOC_STREAMON, struct.pack("=i", self.type))
                    self.streaming = True
                with self.lock:
                    self.queued.append((name, time.monotonic()))
                    self.shown = name
                    self.lock.notify_all()
        except Exception as error:  # noqa: BLE001 (reported to the scenario by show)
            with self.lock:
                self.error = f"{type(error).__name__}: {error}"
                self.lock.notify_all()

    def close(self):
        with self.lock:
            self.stopped = True
            self.lock.notify_all()
        self.thread.join(10)
        if self.streaming:
            try:
                fcntl.ioctl(self.fd, VIDIOC_STREAMOFF, struct.pack("=i", self.type))
            except OSError as error:
                # A disconnected device (vivid's Disconnect control, camera-removal) answers ENODEV.
                if error.errno != errno.ENODEV:
                    raise
        for mapped in self.maps:
            mapped.close()
        os.close(self.fd)
