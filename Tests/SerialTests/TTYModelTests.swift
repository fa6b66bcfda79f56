import TestSupport
import Testing

@testable import Drivers

#if canImport(Glibc)
  import Glibc
#endif

/// A serial scanner's model: the USB device behind the tty, read from a sysfs tree laid out as the
/// kernel lays it out (class/tty/NAME/device → the interface; the USB device with idVendor above it).
@Suite struct TTYModelTests {
  final class Tree {
    let scratch = TemporaryDirectory()
    var root: String { scratch.path }

    func directory(_ path: String) { _ = system("mkdir -p '\(root)/\(path)'") }
    func file(_ path: String, _ text: String) {
      let fd = open("\(root)/\(path)", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
      _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      close(fd)
    }
    func link(_ path: String, to target: String) { _ = symlink(target, "\(root)/\(path)") }
  }

  /// cdc-acm: class/tty/ttyACM0/device is the USB interface 1-1:1.0; the device 1-1 is its parent.
  @Test func acmTTYIsNamedByItsUSBStrings() throws {
    let tree = Tree()
    tree.directory("devices/usb1/1-1/1-1:1.0/tty/ttyACM0")
    tree.file("devices/usb1/1-1/idVendor", "0c2e\n")
    tree.file("devices/usb1/1-1/idProduct", "0b01\n")
    tree.file("devices/usb1/1-1/manufacturer", "Honeywell Imaging & Mobility\n")
    tree.file("devices/usb1/1-1/product", "1900\n")
    tree.directory("class/tty/ttyACM0")
    tree.link("class/tty/ttyACM0/device", to: "\(tree.root)/devices/usb1/1-1/1-1:1.0")
    #expect(TTYModel.describe(path: "/dev/ttyACM0", sysfs: tree.root) == "Honeywell Imaging & Mobility 1900")
  }

  /// usb-serial: class/tty/ttyUSB0/device is the port ttyUSB0 below the interface, two levels under the
  /// device; without strings the ids name it.
  @Test func usbSerialWithoutStringsIsNamedByItsIDs() throws {
    let tree = Tree()
    tree.directory("devices/usb1/1-2/1-2:1.0/ttyUSB0")
    tree.file("devices/usb1/1-2/idVendor", "0403\n")
    tree.file("devices/usb1/1-2/idProduct", "6001\n")
    tree.directory("class/tty/ttyUSB0")
    tree.link("class/tty/ttyUSB0/device", to: "\(tree.root)/devices/usb1/1-2/1-2:1.0/ttyUSB0")
    #expect(TTYModel.describe(path: "/dev/ttyUSB0", sysfs: tree.root) == "USB serial 0403:6001")
  }

  @Test func ttyWithoutAUSBDeviceIsSerialScannerAndItsName() throws {
    let tree = Tree()
    // A platform UART: a device, but no USB ids anywhere above it.
    tree.directory("devices/platform/serial8250/tty/ttyS0")
    tree.directory("class/tty/ttyS0")
    tree.link("class/tty/ttyS0/device", to: "\(tree.root)/devices/platform/serial8250")
    #expect(TTYModel.describe(path: "/dev/ttyS0", sysfs: tree.root) == "serial scanner ttyS0")
    #expect(TTYModel.describe(path: "/dev/rfcomm0", sysfs: tree.root) == "serial scanner rfcomm0")
    #expect(TTYModel.describe(path: "/dev/pts/7", sysfs: tree.root) == "serial scanner pts/7")
    #expect(TTYModel.describe(path: "/tmp/x/scanner", sysfs: tree.root) == "serial scanner scanner")
  }
}
