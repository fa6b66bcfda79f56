import CaptureCore
import Decoders
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One read of SocketCam's frame sources. Files are decoded on every core at once and reported in
/// command-line order (then name order inside a directory), so output is deterministic however the
/// work is scheduled.
final class FramePass: Sendable {
  enum Input: Sendable {
    case file(String)
    case bytes([UInt8], origin: String)
    case failure(CaptureError)
  }

  let sources: [FrameSourceItem]
  let formats: Set<BarcodeFormat>
  let device: DeviceInfo
  let warn: @Sendable (String) -> Void
  let untilFirstRead: Bool
  let emit: @Sendable (Event) -> Void

  init(
    sources: [FrameSourceItem], formats: Set<BarcodeFormat>, device: DeviceInfo,
    warn: @escaping @Sendable (String) -> Void, untilFirstRead: Bool,
    emit: @escaping @Sendable (Event) -> Void
  ) {
    self.sources = sources
    self.formats = formats
    self.device = device
    self.warn = warn
    self.untilFirstRead = untilFirstRead
    self.emit = emit
  }

  var isFinite: Bool { !sources.contains { if case .camera = $0 { true } else { false } } }

  func run() async {
    for source in sources {
      if case .camera(let path) = source {
        await runCamera(path)
        return
      }
    }
    await runFiles(expand())
  }

  // MARK: files

  func expand() -> [Input] {
    var inputs: [Input] = []
    for source in sources {
      switch source {
      case .image(let path): inputs.append(.file(path))
      case .standardInput:
        switch readAll(fd: 0) {
        case .success(let bytes): inputs.append(.bytes(bytes, origin: "-"))
        case .failure(let error): inputs.append(.failure(error))
        }
      case .directory(let dir):
        switch listDirectory(dir) {
        case .success(let files): inputs += files.map { .file($0) }
        case .failure(let error): inputs.append(.failure(error))
        }
      case .camera: continue
      }
    }
    return inputs
  }

  /// Regular files in name (byte) order; non-images are skipped with a warning, dot files silently.
  func listDirectory(_ dir: String) -> Result<[String], CaptureError> {
    guard let handle = opendir(dir) else {
      return .failure(CaptureError(Errno.current, "cannot open directory '\(dir)'", other: .unableReadFile))
    }
    defer { closedir(handle) }
    var names: [String] = []
    while let entry = readdir(handle) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name.hasPrefix(".") { continue }
      names.append(name)
    }
    names.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    let base = dir.hasSuffix("/") ? dir : dir + "/"
    var files: [String] = []
    for name in names {
      let path = base + name
      var info = stat()
      guard stat(path, &info) == 0 else { continue }
      if (info.st_mode & S_IFMT) == S_IFDIR {
        warn("skipping directory '\(path)' (--dir does not recurse)")
      } else if !ImageLoader.isImageFile(path: path) {
        warn("skipping '\(path)': not a PNG, JPEG or PNM image")
      } else {
        files.append(path)
      }
    }
    return .success(files)
  }

  func runFiles(_ inputs: [Input]) async {
    guard !inputs.isEmpty else { return }
    let workers = max(1, min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), inputs.count))
    let next = Counter()
    let (results, sink) = AsyncStream.makeStream(of: (Int, Result<[DecodedSymbol], CaptureError>).self)
    let formats = self.formats
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<workers {
        group.addTask {
          let reader = BarcodeReader(formats: formats)
          while !Task.isCancelled {
            let i = next.take()
            guard i < inputs.count else { break }
            sink.yield((i, Self.decode(inputs[i], reader)))
          }
        }
      }
      // Re-order: results arrive in completion order, events leave in input order.
      var pending: [Int: Result<[DecodedSymbol], CaptureError>] = [:]
      var expected = 0
      for await (index, result) in results {
        pending[index] = result
        while let ready = pending.removeValue(forKey: expected) {
          report(ready, origin: Self.origin(inputs[expected]))
          expected += 1
        }
        if expected == inputs.count || Task.isCancelled { break }
      }
      sink.finish()
      group.cancelAll()
    }
  }

  static func origin(_ input: Input) -> String? {
    switch input {
    case .file(let path): path
    case .bytes(_, let origin): origin
    case .failure: nil
    }
  }

  func report(_ result: Result<[DecodedSymbol], CaptureError>, origin: String?) {
    switch result {
    case .failure(let error) where error.code == .cancel:
      return
    case .failure(let error):
      emit(Event(time: .now(), device: device, payload: .error(error)))
    case .success(let symbols):
      for symbol in symbols {
        emit(
          Event(time: .now(), device: device, payload: .decodedData(Self.decodedData(symbol, origin: origin)))
        )
      }
    }
  }

  static func decodedData(_ symbol: DecodedSymbol, origin: String?) -> DecodedData {
    DecodedData(
      dataSource: SymbologyMap.dataSource(symbol.format), bytes: symbol.bytes,
      points: symbol.points.map { DecodedData.Point(x: $0.x, y: $0.y) }, origin: origin)
  }

  static func decode(_ input: Input, _ reader: BarcodeReader) -> Result<[DecodedSymbol], CaptureError> {
    do {
      switch input {
      case .failure(let error): return .failure(error)
      case .file(let path): return .success(reader.decode(try ImageLoader.load(path: path)))
      case .bytes(let bytes, _): return .success(reader.decode(try ImageLoader.decode(bytes)))
      }
    } catch {
      return .failure(imageError(error, name: origin(input) ?? "image"))
    }
  }

  /// Image errors to SKT codes: a missing file is FILENOTFOUND (-63), a denied one FILEACCESSDENIED
  /// (-64), anything unreadable or corrupt UNABLEREADFILE (-34); the message names the file.
  static func imageError(_ error: ImageError, name: String) -> CaptureError {
    let shown = name == "-" ? "standard input" : "'\(name)'"
    // The loader's messages may start with the path already; say it once.
    func strip(_ text: String) -> String {
      text.hasPrefix(name + ": ") ? String(text.dropFirst(name.count + 2)) : text
    }
    switch error {
    case .notFound(let m): return CaptureError(.fileNotFound, "cannot open \(shown): \(strip(m))")
    case .accessDenied(let m): return CaptureError(.fileAccessDenied, "cannot open \(shown): \(strip(m))")
    case .corrupt(let m): return CaptureError(.unableReadFile, "cannot decode \(shown): \(strip(m))")
    case .unsupportedFormat(let m):
      return CaptureError(.unableReadFile, "cannot decode \(shown): \(strip(m))")
    case .unreadable(let m): return CaptureError(.unableReadFile, "cannot read \(shown): \(strip(m))")
    }
  }

  /// Standard input to its end; cancellable so --timeout and SIGINT/SIGTERM stop a listen on a pipe
  /// that never closes.
  func readAll(fd: Int32) -> Result<[UInt8], CaptureError> {
    do { return .success(try SystemFile.readAll(fd: fd, cancellable: true)) } catch {
      if error.code == ECANCELED {
        return .failure(CaptureError(.cancel, "reading standard input was cancelled"))
      }
      return .failure(CaptureError(error, "cannot read standard input", other: .unableReadFile))
    }
  }

  // MARK: camera

  /// A code in view stays in view for many frames: report it again only after it has been out of
  /// sight for this long, so a webcam at 30 fps does not repeat one label thirty times a second.
  static let repeatAfter: Duration = .seconds(1)

  func runCamera(_ path: String) async {
    let camera: V4L2Camera
    do { camera = try V4L2Camera(path: path) } catch {
      emit(Event(time: .now(), device: device, payload: .error(Self.cameraError(error, path: path))))
      return
    }
    let reader = BarcodeReader(formats: formats)
    let clock = ContinuousClock()
    var lastSeen: [DecodedSymbol.Key: ContinuousClock.Instant] = [:]
    while !Task.isCancelled {
      let frame: GrayImage
      do { frame = try camera.nextFrame() } catch {
        emit(Event(time: .now(), device: device, payload: .error(Self.cameraError(error, path: path))))
        return
      }
      let now = clock.now
      var reported = 0
      for symbol in reader.decode(frame) {
        let key = symbol.key
        defer { lastSeen[key] = now }
        if let seen = lastSeen[key], now - seen < Self.repeatAfter { continue }
        emit(
          Event(time: .now(), device: device, payload: .decodedData(Self.decodedData(symbol, origin: path))))
        reported += 1
      }
      if untilFirstRead && reported > 0 { return }
      await Task.yield()
    }
  }

  static func cameraError(_ error: ImageError, path: String) -> CaptureError {
    switch error {
    case .notFound(let m): CaptureError(.notAvailable, "camera \(path) is not available: \(m)")
    case .accessDenied(let m): CaptureError(.fileAccessDenied, "camera \(path): \(m)")
    case .unsupportedFormat(let m): CaptureError(.notAvailable, "camera \(path) cannot be used: \(m)")
    case .corrupt(let m), .unreadable(let m): CaptureError(.communicationError, "camera \(path): \(m)")
    }
  }
}

extension DecodedSymbol {
  struct Key: Hashable {
    var format: BarcodeFormat
    var bytes: [UInt8]
  }
  var key: Key { Key(format: format, bytes: bytes) }
}

/// Hands out input indexes to the decoding workers.
final class Counter: Sendable {
  private let value = Atomic<Int>(0)
  func take() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
}
