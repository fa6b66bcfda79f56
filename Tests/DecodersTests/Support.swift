import Glibc
import TestSupport
import Testing

@testable import Decoders

extension TemporaryDirectory {
  /// Writes `bytes` to `name` in the directory; the file's path.
  @discardableResult
  func write(_ name: String, _ bytes: [UInt8]) throws -> String {
    let target = file(name)
    let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw TestFailure("open \(target): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { throw TestFailure("write \(target): \(String(cString: strerror(errno)))") }
      offset += n
    }
    return target
  }
}

struct TestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Runs a tool and waits for it. posix_spawn with an explicit empty signal mask and default dispositions:
/// Swift Testing runs tests on Dispatch threads whose blocked signals a child would otherwise inherit
/// (docs/swift-on-linux.md, Tests). stdout/stderr go to /dev/null; a non-zero exit throws.
func run(_ arguments: [String]) throws {
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var empty = sigset_t()
  sigemptyset(&empty)
  posix_spawnattr_setsigmask(&attributes, &empty)
  var all = sigset_t()
  sigfillset(&all)
  posix_spawnattr_setsigdefault(&attributes, &all)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

  var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
  argv.append(nil)
  defer { for pointer in argv { free(pointer) } }
  var pid: pid_t = 0
  let rc = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
  guard rc == 0 else { throw TestFailure("spawn \(arguments[0]): \(String(cString: strerror(rc)))") }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 {
    guard errno == EINTR else { throw TestFailure("waitpid: \(String(cString: strerror(errno)))") }
  }
  // WIFEXITED/WEXITSTATUS are macros: exited normally when the low 7 bits are 0, status in bits 8-15.
  guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
    throw TestFailure("\(arguments.joined(separator: " ")) failed with wait status \(status)")
  }
}

/// The tool's path on PATH, or nil: for tests that need a tool the build does not (ImageMagick).
func which(_ name: String) -> String? {
  let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
  for dir in path.split(separator: ":") where access("\(dir)/\(name)", X_OK) == 0 { return "\(dir)/\(name)" }
  return nil
}

/// zint output, loaded. `--quietzones` gives matrix symbols the light margin their detectors need (zint adds
/// none by default; zxing-cpp 1.4.0 does not find a DataMatrix without it).
func zint(
  _ dir: TemporaryDirectory, _ name: String, _ symbology: String, _ data: String, _ extra: [String] = []
)
  throws -> GrayImage
{
  let path = dir.file(name + ".png")
  let scale = extra.contains { $0.hasPrefix("--scale=") } ? [] : ["--scale=2"]
  try run(["zint", "-b", symbology, "--quietzones", "-o", path, "-d", data] + scale + extra)
  return try ImageLoader.load(path: path)
}

/// A blank page with the images placed left to right, top-aligned, `gap` pixels apart and around.
func hstack(_ images: [GrayImage], gap: Int = 40) -> GrayImage {
  let width = images.reduce(gap) { $0 + $1.width + gap }
  let height = (images.map(\.height).max() ?? 0) + 2 * gap
  var pixels = [UInt8](repeating: 255, count: width * height)
  var left = gap
  for image in images {
    for y in 0..<image.height {
      for x in 0..<image.width { pixels[(y + gap) * width + left + x] = image.pixels[y * image.width + x] }
    }
    left += image.width + gap
  }
  return GrayImage(width: width, height: height, pixels: pixels)
}

/// Top to bottom, left-aligned.
func vstack(_ images: [GrayImage], gap: Int = 40) -> GrayImage {
  let width = (images.map(\.width).max() ?? 0) + 2 * gap
  let height = images.reduce(gap) { $0 + $1.height + gap }
  var pixels = [UInt8](repeating: 255, count: width * height)
  var top = gap
  for image in images {
    for y in 0..<image.height {
      for x in 0..<image.width { pixels[(y + top) * width + gap + x] = image.pixels[y * image.width + x] }
    }
    top += image.height + gap
  }
  return GrayImage(width: width, height: height, pixels: pixels)
}

/// Nearest-neighbour enlargement.
func scaled(_ image: GrayImage, by factor: Int) -> GrayImage {
  let width = image.width * factor
  let height = image.height * factor
  var pixels = [UInt8](repeating: 255, count: width * height)
  for y in 0..<height {
    for x in 0..<width { pixels[y * width + x] = image.pixels[(y / factor) * image.width + x / factor] }
  }
  return GrayImage(width: width, height: height, pixels: pixels)
}

/// Binary PGM (P5) bytes for an image, written by hand to exercise the PNM reader.
func pgm(_ image: GrayImage) -> [UInt8] {
  Array("P5\n# written by DecodersTests\n\(image.width) \(image.height)\n255\n".utf8) + image.pixels
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

let everything = BarcodeReader()
