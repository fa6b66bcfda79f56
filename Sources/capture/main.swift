import CaptureCLI
import CaptureCore
import CaptureMQTT
import CaptureService
import Drivers

#if canImport(Glibc)
  import Glibc
#endif

// Before anything opens a descriptor: fds 0–2 are held (a closed one is /dev/null), so no internal
// descriptor can take the place of stdin, stdout or stderr; and SIGPIPE is ignored, so a reader that
// goes away is an EPIPE the output writer handles.
CaptureCLI.prepareProcess()

// The composition root: which drivers and which front ends exist is decided here, so CaptureCLI (and
// every other front end) sees only CaptureCore's protocols (docs/architecture.md §2): the drivers as
// a DeviceSystem, the Capture service and the MQTT fleet as FrontEnds, run by the command line's
// listen and serve.
let frontEnds = FrontEnds(
  fleet: { options throws(CaptureError) in try FleetOptions(options) },
  service: { address, log in
    ServiceFrontEnd(
      .init(host: address.host, port: address.port, allowedOrigins: address.allowedOrigins, log: log))
  },
  controller: { options, log throws(CaptureError) in try FleetControllerOptions.make(options, log: log) })
// argv as bytes: CommandLine.arguments decodes each argument lossily, and a file name need not be UTF-8.
let rawArguments = (1..<Int(CommandLine.argc)).map { index in
  CommandLine.unsafeArgv[index].map { Array(UnsafeBufferPointer(start: $0, count: strlen($0))) }.map {
    $0.map { UInt8(bitPattern: $0) }
  } ?? []
}
let status = await CaptureCLI.main(rawArguments: rawArguments, system: DriverSystem(), frontEnds: frontEnds)
// _exit, not exit: exit(3) runs the C++ static destructors of the zxing-cpp linked into capture, and a
// decode thread that --count, --timeout or a signal cut short may still be inside zxing-cpp or ZBar
// (a decode cannot be interrupted; its result is dropped). Destroying what it reads under it ended
// `listen --count 2 --dir` with SIGSEGV (exit 139) once on a loaded machine. capture writes its output
// with write(2) and registers no atexit handler; fflush covers any stdio buffer a library left.
fflush(nil)
_exit(status)
