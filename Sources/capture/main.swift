import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

exit(await CaptureCLI.main(Array(CommandLine.arguments.dropFirst())))
