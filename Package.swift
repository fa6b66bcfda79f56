// swift-tools-version:6.0
import PackageDescription

/// Where `make deps` installs the zxing-cpp it builds (scripts/build-zxing-cpp): include/ZXing and
/// lib/libZXing.a. An absolute path: SwiftPM runs compilers and the linker from other directories.
let zxingCpp = Context.packageDirectory + "/.build/zxing-cpp/current"

/// Debian's multiarch triplet, where libdbus-1-dev puts dbus-arch-deps.h (/usr/lib/TRIPLET/dbus-1.0/include).
#if arch(x86_64)
  let multiarch = "x86_64-linux-gnu"
#elseif arch(arm64)
  let multiarch = "aarch64-linux-gnu"
#else
  #error("capture builds on Debian amd64 and arm64 (CLazyLibraries' trampolines)")
#endif

// Layers (docs/architecture.md §2): capture → front ends (CaptureCLI, CaptureService, CaptureMQTT) →
// CaptureContract → CaptureCore → Drivers → transports (Decoders, DBus/BlueZ, Bluetooth, HTTPTransport,
// MosquittoClient) → C shims. A front end never imports a driver, a device transport or another front end;
// the service and the fleet front end speak to their clients through transports of their own
// (HTTPTransport, MosquittoClient). CaptureCore is the lowest Swift module every layer above the C shims
// imports (the transports included), so the one thread type (ReaderThread) and the one blocking
// executor (BlockingExecutor) live there (docs/architecture.md §2, "Concurrency").
let package = Package(
  name: "capture",
  products: [
    .executable(name: "capture", targets: ["capture"]),
    .library(name: "CaptureCLI", targets: ["CaptureCLI"]),
    .library(name: "CaptureCore", targets: ["CaptureCore"]),
  ],
  targets: [
    // The executable is the composition root: it picks the drivers and the front ends; CaptureCLI sees
    // only CaptureCore (and the contract), and runs the front ends it is given (FrontEnd).
    .executableTarget(
      name: "capture",
      dependencies: ["CaptureCLI", "CaptureCore", "Drivers", "CaptureService", "CaptureMQTT"]),
    .target(name: "CaptureCLI", dependencies: ["CaptureCore", "CaptureContract"]),
    // The published contract every front end renders the same way: the JSON of events, devices and
    // errors, and the exit-status rule (docs/architecture.md §1), and the one reader of JSON from
    // outside (JSONParser: a service request, a remote command). Below the front ends, above the model.
    .target(name: "CaptureContract", dependencies: ["CaptureCore"]),
    // Fleets (`--mqtt`): events spooled and published to an MQTT broker, remote commands; a front end of
    // the engine over the MQTT transport (libmosquitto).
    .target(name: "CaptureMQTT", dependencies: ["CaptureCore", "CaptureContract", "MosquittoClient"]),
    // libmosquitto (Debian's libmosquitto-dev 2.0) behind a small C shim; MosquittoClient runs its network
    // loop on a thread of its own.
    .target(name: "CMosquitto", dependencies: ["CLazyLibraries"]),
    .target(name: "MosquittoClient", dependencies: ["CMosquitto", "CLazyLibraries", "CaptureCore"]),
    // The Capture service for CaptureJS web apps (`capture serve`): a front end of the engine over the
    // HTTP + WebSocket transport.
    .target(name: "CaptureService", dependencies: ["CaptureCore", "CaptureContract", "HTTPTransport"]),
    // libwebsockets behind a C shim (its header is too large and macro-laden to import): one event
    // loop thread serves every HTTP and WebSocket connection.
    .target(name: "CWebSockets", dependencies: ["CLazyLibraries"]),
    .target(name: "HTTPTransport", dependencies: ["CWebSockets", "CLazyLibraries", "CaptureCore"]),
    .target(name: "CaptureCore"),
    // ZBar, libdbus, libwebsockets, libmosquitto and libbluetooth are loaded when a command first needs
    // them, not at start-up: trampolines of the functions capture calls, filled in by cll_load
    // (docs/architecture.md, "Libraries loaded on demand"). Their transports call cll_load before
    // anything else; no target links them.
    .target(name: "CLazyLibraries"),
    .target(name: "Drivers", dependencies: ["CaptureCore", "Decoders", "BlueZ", "Bluetooth"]),
    // BlueZ over D-Bus: a general libdbus client, then one Swift type per BlueZ interface. Drivers reach
    // BlueZ only through its typed API and do not import DBus.
    // No pkgConfig: it would link libdbus-1 (CLazyLibraries loads it). Its headers' two directories
    // (pkg-config --cflags dbus-1) are given to the one module that imports CDBus.
    .systemLibrary(name: "CDBus", providers: [.apt(["libdbus-1-dev"])]),
    .target(
      name: "DBus", dependencies: ["CDBus", "CLazyLibraries"],
      swiftSettings: [
        .unsafeFlags(["-Xcc", "-I/usr/include/dbus-1.0", "-Xcc", "-I/usr/lib/\(multiarch)/dbus-1.0/include"])
      ]),
    .target(name: "BlueZ", dependencies: ["DBus", "CaptureCore"]),
    // Bluetooth Classic: libbluetooth behind a C shim (macros Swift cannot import), then one
    // fakeable syscall seam in Swift.
    .target(name: "CBluetooth", dependencies: ["CLazyLibraries"]),
    .target(name: "Bluetooth", dependencies: ["CBluetooth", "CaptureCore"]),
    .target(name: "Decoders", dependencies: ["CZBar", "CZXing", "CImageIO", "CV4L2", "CLazyLibraries"]),
    // No pkgConfig: it would link libzbar (CLazyLibraries loads it); zbar.h is in /usr/include.
    .systemLibrary(name: "CZBar", providers: [.apt(["libzbar-dev"])]),
    // zxing-cpp is C++ only: a C-ABI shim keeps C++ interop out of every importer (docs/swift-on-linux.md).
    // zxing-cpp itself is the release pinned in deps/zxing-cpp.lock, built by `make deps`
    // (scripts/build-zxing-cpp) as a static library under .build/zxing-cpp/current and linked into
    // capture: headers and library come from there, never from the system (docs/packaging.md). Without
    // it the shim stops with "run make deps" (czxing.cpp). C++20: zxing-cpp 3's headers need it.
    .target(
      name: "CZXing",
      cxxSettings: [
        .define("ZX_USE_UTF8"), .unsafeFlags(["-I\(zxingCpp)/include"]),
      ],
      linkerSettings: [.unsafeFlags(["-Xlinker", "\(zxingCpp)/lib/libZXing.a"])]
    ),
    .target(
      name: "CImageIO",
      cSettings: [.unsafeFlags(["-I/usr/include/libpng16"])],
      linkerSettings: [.linkedLibrary("png16"), .linkedLibrary("jpeg")]
    ),
    // VIDIOC_* and V4L2_PIX_FMT_* are function-like macros Swift cannot import; a fixed-signature ioctl.
    .target(name: "CV4L2"),
    // The fakes (a Device, a DeviceSystem) and the temporary directory the test targets share; a
    // library of the tests only: no product target depends on it.
    .target(name: "TestSupport", dependencies: ["CaptureCore"], path: "Tests/TestSupport"),
    .testTarget(name: "CaptureCoreTests", dependencies: ["CaptureCore", "TestSupport"]),
    .testTarget(
      name: "CaptureCLITests",
      dependencies: ["CaptureCLI", "CaptureCore", "CaptureContract", "CaptureMQTT", "TestSupport"]),
    .testTarget(name: "DecodersTests", dependencies: ["Decoders", "Drivers", "CaptureCore", "TestSupport"]),
    .testTarget(name: "BlackBoxTests", dependencies: ["capture", "Simulators"]),
    .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"]),
    .testTarget(name: "BLETests", dependencies: ["BlueZ", "Drivers", "CaptureCore", "DBus"]),
    // Device simulators shared by the driver tests and the black-box tests.
    .target(name: "Simulators", path: "Tests/Simulators"),
    .testTarget(name: "DataManTests", dependencies: ["Drivers", "CaptureCore", "Simulators"]),
    .testTarget(name: "SerialTests", dependencies: ["Drivers", "CaptureCore", "Simulators", "TestSupport"]),
    .testTarget(name: "ClassicTests", dependencies: ["Bluetooth", "Drivers", "CaptureCore"]),
    .testTarget(name: "HIDTests", dependencies: ["Drivers", "CaptureCore"]),
    // capture doctor's checks: the rules over the probes' facts, and the probes over a fake /sys, /proc.
    .testTarget(
      name: "HostTests", dependencies: ["Drivers", "BlueZ", "Bluetooth", "CaptureCore", "TestSupport"]),
    .testTarget(name: "HTTPTransportTests", dependencies: ["HTTPTransport", "CaptureCore"]),
    .testTarget(name: "MosquittoClientTests", dependencies: ["MosquittoClient", "TestSupport"]),
    .testTarget(
      name: "CaptureMQTTTests",
      dependencies: ["CaptureMQTT", "CaptureCore", "CaptureContract", "MosquittoClient", "TestSupport"]),
    .testTarget(
      name: "CaptureServiceTests",
      dependencies: ["CaptureService", "CaptureCore", "CaptureContract", "HTTPTransport", "TestSupport"]),
  ],
  swiftLanguageModes: [.v6],
  cxxLanguageStandard: .cxx20
)
