import CaptureCLI
import Drivers

#if canImport(Glibc)
  import Glibc
#endif

// The composition root: which drivers exist is decided here, so CaptureCLI (and every other front
// end) sees only CaptureCore's protocols (docs/architecture.md §2).
exit(await CaptureCLI.main(Array(CommandLine.arguments.dropFirst()), system: DriverSystem()))
