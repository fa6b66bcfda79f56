#if canImport(Glibc)
  import Glibc
#endif

/// What a serial scanner is, as far as the host can tell without talking to it (SPP-mode commands are
/// not public, docs/device-protocols.md §5.3): the USB device behind the tty when there is one, from
/// the strings its descriptors gave the kernel (sysfs `manufacturer`, `product`, `idVendor`,
/// `idProduct`; Documentation/ABI/stable/sysfs-bus-usb), else "serial scanner" and the tty's name
/// under /dev (`ttyS0`, `pts/3`, `rfcomm0`), which says which line it is when nothing says more.
enum TTYModel {
  /// `path` (a /dev/serial/by-id link is followed) → the model text. `sysfs` is the sysfs mount point,
  /// a directory tree in tests.
  static func describe(path: String, sysfs: String = "/sys") -> String {
    let device = resolved(path) ?? path
    let name = device.hasPrefix("/dev/") ? String(device.dropFirst(5)) : basename(device)
    if let usb = usbDevice(tty: basename(device), sysfs: sysfs) {
      let words = [attribute("manufacturer", in: usb), attribute("product", in: usb)].compactMap { $0 }
      if !words.isEmpty { return words.joined(separator: " ") }
      if let vendor = attribute("idVendor", in: usb), let product = attribute("idProduct", in: usb) {
        return "USB serial \(vendor):\(product)"
      }
    }
    return "serial scanner \(name)"
  }

  /// The USB device directory a tty hangs off: `class/tty/NAME/device` is the USB interface (cdc-acm:
  /// ttyACM*) or the usb-serial port below it (ttyUSB*); the device with `idVendor` is at most a few
  /// levels up. Nil for a tty with no device (pts) or one not on USB (ttyS*, rfcomm*).
  static func usbDevice(tty: String, sysfs: String) -> String? {
    guard !tty.isEmpty, !tty.contains("/"), tty != ".", tty != ".." else { return nil }
    guard var directory = resolved("\(sysfs)/class/tty/\(tty)/device") else { return nil }
    for _ in 0..<4 {
      if access(directory + "/idVendor", R_OK) == 0 { return directory }
      guard let slash = directory.lastIndex(of: "/"), slash != directory.startIndex else { return nil }
      directory = String(directory[..<slash])
    }
    return nil
  }

  /// One sysfs attribute, trimmed, at most 128 bytes of it (a USB string descriptor holds at most 126
  /// UTF-16 code units): nil when missing, empty or unreadable.
  static func attribute(_ name: String, in directory: String) -> String? {
    let fd = open(directory + "/" + name, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    let text = String(decoding: buffer[0..<count], as: UTF8.self)
      .filter { !$0.isNewline && $0 != "\0" }
      .trimmingSpaces
    return text.isEmpty ? nil : text
  }

  static func resolved(_ path: String) -> String? {
    guard let real = realpath(path, nil) else { return nil }
    defer { free(real) }
    return String(cString: real)
  }

  static func basename(_ path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
  }
}

extension String {
  fileprivate var trimmingSpaces: String {
    var scalars = Substring(self)
    while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
    while scalars.last == " " || scalars.last == "\t" { scalars.removeLast() }
    return String(scalars)
  }
}
