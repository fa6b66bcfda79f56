import CaptureCLI
import Drivers

#if canImport(Glibc)
  import Glibc
#endif

// Before anything opens a descriptor: fds 0–2 are held (a closed one is /dev/null), so no internal
// descriptor can take the place of stdin, stdout or stderr; and SIGPIPE is ignored, so a reader that
// goes away is an EPIPE the output writer handles.
CaptureCLI.prepareProcess()

// The composition root: which drivers exist is decided here, so CaptureCLI (and every other front
// end) sees only CaptureCore's protocols (docs/architecture.md §2).
exit(await CaptureCLI.main(Array(CommandLine.arguments.dropFirst()), system: DriverSystem()))
