import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// `capture __generate-docs DIR`: writes DIR/man/*.1 and DIR/completions/* from the command tree.
/// `make docs` runs it; a test regenerates into a temp dir and diffs against the checked-in copies.
enum GenerateDocsCommand {
  static func files() -> [(path: String, text: String)] {
    var files: [(String, String)] = [("man/capture.1", ManPage.overview())]
    for command in CommandTree.visibleCommands {
      files.append(("man/capture-\(command.name).1", ManPage.page(command)))
    }
    files.append(("completions/capture.bash", Completions.bash()))
    files.append(("completions/_capture", Completions.zsh()))
    files.append(("completions/capture.fish", Completions.fish()))
    return files
  }

  static func run(_ parsed: ParsedArguments, _ context: Context) throws(CaptureError) -> ResultCode {
    guard parsed.operands.count == 1 else { throw .invalidParameter("usage: capture __generate-docs DIR") }
    let dir = parsed.operands[0]
    for sub in ["", "/man", "/completions"] { mkdir(dir + sub, 0o755) }
    for (path, text) in files() {
      let full = dir + "/" + path
      do {
        try SystemFile.replace(path: full, directory: dir, with: Array(text.utf8), mode: 0o644)
      } catch {
        throw CaptureError(error, "cannot write \(full)", other: .unableWriteFile)
      }
    }
    return .noError
  }
}
