import CaptureCore
import Decoders
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One read of SocketCam's frame sources. Files are decoded by a pool of worker threads, one per core
/// (decoding is CPU work and libpng, ZBar and zxing-cpp block: it stays off the cooperative pool), each
/// opening the next file only when it takes it, and results are reported in command-line order (then
/// name order inside a directory), so output is deterministic however the work is scheduled: a batch
/// prints what its images decoded one by one would.
///
/// Cancellation (--timeout, --count reached, SIGINT/SIGTERM, a stop trigger) ends the pass at once: no
/// further file is taken, a read waiting on a FIFO or a pipe wakes (`BoundedInput` polls the
/// `Cancellation`), the results still on their way are dropped unprinted, and `run` returns without
/// waiting for a decode already inside a C library to finish: that worker drops its result when it
/// returns.
final class FramePass: Sendable {
  enum Input: Sendable {
    /// An image named on the command line (`listed` false: any kind of file a read can wait on, a
    /// FIFO or `<(…)` too) or found in a --dir listing (regular files only).
    case file(FilePath, listed: Bool)
    case standardInput
    case failure(CaptureError)
    /// Something a --dir listing skipped, reported in its place in the order.
    case warning(String)
  }

  /// What one input gave.
  enum Outcome: Sendable {
    /// `problem`: a decoder failed on this image (its reading is missing; the others' are reported).
    case symbols([DecodedSymbol], origin: String, problem: String?)
    case failure(CaptureError)
    case warning(String)
  }

  let sources: [FrameSourceItem]
  let formats: Set<BarcodeFormat>
  /// Read EAN-2/EAN-5 add-ons (BarcodeReader.addOns).
  let addOns: Bool
  let device: DeviceInfo
  let warn: @Sendable (String) -> Void
  let untilFirstRead: Bool
  /// A camera removed while it is read (`listen --camera`) is waited for: deviceRemoval, then
  /// deviceArrival and its frames again once its node is back and opens, as a tty or an input device
  /// is (OpenRequest.reconnects). Without (trigger, serve), the removal is the read's error.
  let reconnects: Bool
  let emit: @Sendable (Event) -> Void
  /// Opens the camera of a `.camera` source: a V4L2Camera (the seam lets the driver tests script
  /// the frames and failures of a camera this machine does not have).
  let openCamera: CameraOpener

  /// How a camera is opened: its path and the format `--camera-format` forces, if any.
  typealias CameraOpener =
    @Sendable (FilePath, V4L2Camera.PixelFormat?) throws(ImageError) -> any CameraFrames

  static let v4l2: CameraOpener = { path, format throws(ImageError) in
    try V4L2Camera(pathBytes: path.bytes, displayPath: path.description, format: format)
  }

  init(
    sources: [FrameSourceItem], formats: Set<BarcodeFormat>, addOns: Bool, device: DeviceInfo,
    warn: @escaping @Sendable (String) -> Void, untilFirstRead: Bool, reconnects: Bool = false,
    openCamera: @escaping CameraOpener = FramePass.v4l2, emit: @escaping @Sendable (Event) -> Void
  ) {
    self.reconnects = reconnects
    self.openCamera = openCamera
    self.sources = sources
    self.formats = formats
    self.addOns = addOns
    self.device = device
    self.warn = warn
    self.untilFirstRead = untilFirstRead
    self.emit = emit
  }

  var isFinite: Bool { !sources.contains { $0.isEndless } }

  /// `ready` is called once the pass is reading: at once, for watched directories once the watch is
  /// armed (`runWatching`), for a camera once it is open and streaming. A camera that cannot be opened
  /// is given to `ready` when there is one (a service's trigger then fails with the reason, as an
  /// app's call can show it; the pass is over) and is an Error event otherwise (listen, trigger).
  func run(ready: (@Sendable (CaptureError?) -> Void)? = nil) async {
    if !watchedDirectories.isEmpty { return await runWatching(ready: { ready?(nil) }) }
    for source in sources {
      if case .camera(let path, let format) = source {
        await runCamera(path, format: format, ready: ready)
        return
      }
    }
    ready?(nil)
    await runFiles(expand())
  }

  // MARK: files

  /// The inputs in report order. Directories are listed here (names and stat(2) only: no file is
  /// opened until a worker takes it); standard input is read by a worker like any file.
  func expand() -> [Input] {
    var inputs: [Input] = []
    for source in sources {
      switch source {
      case .image(let path): inputs.append(.file(path, listed: false))
      case .standardInput: inputs.append(.standardInput)
      case .directory(let dir): inputs += listDirectory(dir)
      case .camera, .watchedDirectory: continue
      }
    }
    return inputs
  }

  /// The entries of `dir` in name (byte) order, dot files left out. A name is its bytes, UTF-8 or
  /// not. A subdirectory, a FIFO or device, a dangling symbolic link or a loop of them is skipped
  /// with a warning each; an entry that cannot even be looked at is an error (it counts toward the
  /// exit status) and the listing goes on.
  func listDirectory(_ dir: FilePath) -> [Input] {
    guard let handle = dir.opendir() else {
      return [.failure(CaptureError(Errno.current, "cannot open directory '\(dir)'", other: .unableReadFile))]
    }
    defer { closedir(handle) }
    var names: [[UInt8]] = []
    while let entry = readdir(handle) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
      if name.first == UInt8(ascii: ".") { continue }
      names.append(name)
    }
    names.sort { $0.lexicographicallyPrecedes($1) }
    let base = dir.bytes.last == UInt8(ascii: "/") ? dir.bytes : dir.bytes + [UInt8(ascii: "/")]
    return names.map { name in Self.classify(FilePath(bytes: base + name)) }
  }

  static func classify(_ path: FilePath) -> Input {
    var info = stat()
    let failed = path.withCString { stat($0, &info) == 0 ? 0 : errno }
    if failed == 0 {
      switch info.st_mode & S_IFMT {
      case S_IFREG: return .file(path, listed: true)
      case S_IFDIR: return .warning("skipping directory '\(path)' (--dir does not recurse)")
      case S_IFIFO: return .warning("skipping '\(path)': it is a FIFO, not a regular file")
      case S_IFCHR, S_IFBLK: return .warning("skipping '\(path)': it is a device, not a regular file")
      case S_IFSOCK: return .warning("skipping '\(path)': it is a socket, not a regular file")
      default: return .warning("skipping '\(path)': not a regular file")
      }
    }
    let failure = Errno(failed)
    var link = stat()
    switch failure.code {
    case ENOENT where path.withCString({ lstat($0, &link) }) == 0 && (link.st_mode & S_IFMT) == S_IFLNK:
      return .warning("skipping '\(path)': dangling symbolic link (its target does not exist)")
    case ELOOP:
      return .warning("skipping '\(path)': symbolic link loop (\(failure.message))")
    case ENOENT:
      // Removed between readdir and stat: gone, like a file never listed.
      return .warning("skipping '\(path)': it was removed while the directory was read")
    default:
      return .failure(CaptureError(failure, "cannot open '\(path)'", other: .unableReadFile))
    }
  }

  func runFiles(_ inputs: [Input]) async {
    guard !inputs.isEmpty else { return }
    let stop = Cancellation()
    let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    let workers = min(cores, inputs.count)
    let next = Counter()
    let (results, sink) = AsyncStream.makeStream(of: (Int, Outcome).self)
    // A decode's second thread (BarcodeReader.concurrentEngines) only helps while a core would
    // otherwise idle: fewer inputs than cores. A batch keeps every core busy with workers already, and
    // a thread per image would only add its start and compete with them. Same results either way.
    let reader = BarcodeReader(formats: formats, concurrentEngines: workers < cores, addOns: addOns)
    // Each worker ends with the pass: one-shot work for the BlockingExecutor, off the cooperative pool.
    for _ in 0..<workers {
      BlockingExecutor.shared.execute {
        while !stop.isCancelled {
          let i = next.take()
          guard i < inputs.count else { break }
          let outcome = Self.decode(inputs[i], reader, stop)
          // A result that arrives after the pass ended is never reported.
          if stop.isCancelled { break }
          sink.yield((i, outcome))
        }
      }
    }
    await withTaskCancellationHandler {
      // Re-order: results arrive in completion order, events leave in input order.
      var pending: [Int: Outcome] = [:]
      var expected = 0
      for await (index, outcome) in results {
        pending[index] = outcome
        while !stop.isCancelled, let ready = pending.removeValue(forKey: expected) {
          report(ready)
          expected += 1
        }
        if expected == inputs.count || stop.isCancelled { break }
      }
    } onCancel: {
      stop.cancel()
      sink.finish()
    }
    stop.cancel()
    sink.finish()
  }

  func report(_ outcome: Outcome) {
    switch outcome {
    case .failure(let error) where error.code == .cancel:
      return
    case .failure(let error):
      emit(Event(time: .now(), device: device, payload: .error(error)))
    case .warning(let text):
      warn(text)
    case .symbols(let symbols, let origin, let problem):
      if let problem { warn("'\(origin)': \(problem)") }
      for symbol in symbols {
        emit(
          Event(time: .now(), device: device, payload: .decodedData(Self.decodedData(symbol, origin: origin)))
        )
      }
    }
  }

  /// An EAN/UPC add-on is reported the way scanners with supplementals enabled transmit it: one code, the
  /// main symbol's data source, its digits immediately followed by the add-on's ("9781234567897" +
  /// "12345" → "978123456789712345"; EAN-13 + 2/5 makes 15/18 digits, UPC-A 14/17, UPC-E 10/13, EAN-8
  /// 10/13). The SDK has no data source of its own for an add-on (docs/capture-sdk.md §6.1).
  static func decodedData(_ symbol: DecodedSymbol, origin: String?) -> DecodedData {
    let addOn = symbol.addOn ?? []
    return DecodedData(
      dataSource: SymbologyMap.dataSource(symbol.format), bytes: symbol.bytes + addOn,
      points: symbol.points.map { DecodedData.Point(x: $0.x, y: $0.y) }, origin: origin,
      decodedText: symbol.decodedText.map { $0 + String(decoding: addOn, as: UTF8.self) })
  }

  /// Opens, reads (bounded by the format's header: `ImageLoader.readEncoded`) and decodes one input,
  /// on a worker thread: every wait is a poll(2) that `stop` ends.
  static func decode(_ input: Input, _ reader: BarcodeReader, _ stop: Cancellation) -> Outcome {
    let name: FilePath
    let listed: Bool
    let source: BoundedInput
    do throws(InputError) {
      switch input {
      case .failure(let error): return .failure(error)
      case .warning(let text): return .warning(text)
      case .standardInput:
        (name, listed) = ("-", false)
        source = try BoundedInput(descriptor: 0, wait: BoundedInput.Wait(cancellation: stop))
      case .file(let path, let inDirectory):
        (name, listed) = (path, inDirectory)
        source = try BoundedInput(
          path: path, accepting: inDirectory ? .regularFiles : .regularFilesAndStreams,
          wait: BoundedInput.Wait(cancellation: stop))
      }
    } catch {
      return .failure(inputError(error, name: Self.name(of: input)))
    }
    let origin = name == "-" ? "-" : name.description
    let bytes: [UInt8]
    do throws(InputError) {
      switch try ImageLoader.readEncoded({ (count: Int) throws(InputError) in try source.read(upTo: count) })
      {
      case .success(let read): bytes = read
      case .failure(let error): return .failure(imageError(error, name: origin))
      }
    } catch {
      return .failure(inputError(error, name: origin))
    }
    if listed && ImageFormat.sniff(bytes) == nil {
      // A file in a directory that is not an image is not the user's error: it is skipped, said.
      return .warning("skipping '\(origin)': not a PNG, JPEG or PNM image")
    }
    let image: GrayImage
    do { image = try ImageLoader.decode(bytes) } catch { return .failure(imageError(error, name: origin)) }
    if stop.isCancelled { return .failure(CaptureError(.cancel, "cancelled")) }
    let decoded = reader.decodeReporting(image)
    return .symbols(decoded.symbols, origin: origin, problem: decoded.problem)
  }

  static func name(of input: Input) -> String {
    switch input {
    case .file(let path, _): path.description
    default: "-"
    }
  }

  /// A failed open or read to SKT codes, as for every file: a missing file FILENOTFOUND (-63), a
  /// refused one FILEACCESSDENIED (-64), anything else (a directory, an I/O error, a FIFO in a
  /// directory) UNABLEREADFILE (-34); a deadline REQUESTTIMEDOUT, a cancellation CANCEL (not shown).
  static func inputError(_ error: InputError, name: String) -> CaptureError {
    let shown = name == "-" ? "standard input" : "'\(name)'"
    switch error {
    case .system(let errno):
      switch errno.code {
      case ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP, ENXIO:
        return CaptureError(.fileNotFound, "cannot open \(shown): \(errno.message)")
      case EACCES, EPERM:
        return CaptureError(.fileAccessDenied, "cannot open \(shown): \(errno.message)")
      default:
        return CaptureError(.unableReadFile, "cannot read \(shown): \(errno.message)")
      }
    default:
      return CaptureError(error, "cannot read \(shown)", other: .unableReadFile)
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
    case .unreadable(let m), .busy(let m), .removed(let m):
      return CaptureError(.unableReadFile, "cannot read \(shown): \(strip(m))")
    }
  }

  // MARK: camera

  /// The camera loop runs on a `ReaderThread`: V4L2Camera.nextFrame waits in poll(2) for each frame
  /// (up to its frame timeout), which must not hold a thread of the cooperative pool. Cancelling the
  /// calling task asks the loop to stop; it returns after the frame it is waiting for.
  func runCamera(_ path: FilePath, format: String? = nil, ready: (@Sendable (CaptureError?) -> Void)? = nil)
    async
  {
    let thread = ReaderThread(name: "camera")
    await withTaskCancellationHandler {
      do throws(Errno) {
        try thread.start {
          self.cameraLoop(path, format: format, ready: ready, stopping: { thread.isStopping })
        }
      } catch {
        if let ready {
          ready(CaptureError(error, "cannot start the thread of camera \(path)", other: .unableCreateThread))
        } else {
          emitNoThread(error, for: "camera \(path)")
        }
      }
      await thread.join()
    } onCancel: {
      thread.requestStop()
    }
  }

  /// A loop that found no thread to run on (EAGAIN): an error event, as any other failure of a source.
  func emitNoThread(_ error: Errno, for what: String) {
    emit(
      Event(
        time: .now(), device: device,
        payload: .error(CaptureError(error, "cannot start the thread of \(what)", other: .unableCreateThread))
      ))
  }

  /// How often a removed camera's node is looked for (as the serial reader looks for its tty).
  static let returnPollMicroseconds: useconds_t = 250_000

  private func cameraLoop(
    _ path: FilePath, format: String?, ready: (@Sendable (CaptureError?) -> Void)?, stopping: () -> Bool
  ) {
    // Checked by the command line against FrameSourceItem.cameraFormats, the same list.
    let forced = format.flatMap(V4L2Camera.PixelFormat.init(rawValue:))
    let shown = path.description
    // Held here only, so that the camera of a read that ended (its descriptor and buffers) is
    // released before its return is waited for.
    var current: (any CameraFrames)?
    do { current = try openCamera(path, forced) } catch {
      let failure = Self.cameraError(error, path: shown)
      if let ready {
        ready(failure)
      } else {
        emit(Event(time: .now(), device: device, payload: .error(failure)))
      }
      return
    }
    ready?(nil)
    while current != nil {
      guard readFrames(current.take()!, path: shown, stopping: stopping), !stopping() else { return }
      emit(Event(time: .now(), device: device, payload: .deviceRemoval))
      current = waitForReturn(path, format: forced, stopping: stopping)
      if current != nil { emit(Event(time: .now(), device: device, payload: .deviceArrival)) }
    }
  }

  /// Decodes `camera`'s frames until a stop, the first read (`untilFirstRead`) or a failure; true
  /// when it ended because the camera was removed and `reconnects` asks to wait for it.
  private func readFrames(_ camera: any CameraFrames, path: String, stopping: () -> Bool) -> Bool {
    let reader = BarcodeReader(formats: formats, addOns: addOns)
    let clock = ContinuousClock()
    // A code in view stays in view for many frames: reported once, and again only after it has been
    // out of sight (RepeatRule: 3 decoded frames of a step that reads it, and 1 s, without it).
    var repeats = RepeatRule<DecodedSymbol.Key>()
    // One step of the search a frame, in turn (BarcodeReader.videoStep): the decode period, which a new
    // code waits out before its frame is decoded, is one step's, not all four's.
    var sequence = 0
    while !stopping() {
      let frame: GrayImage
      do { frame = try camera.nextFrame() } catch {
        if case .removed = error, reconnects { return true }
        emit(Event(time: .now(), device: device, payload: .error(Self.cameraError(error, path: path))))
        return false
      }
      if stopping() { return false }
      let (symbols, step) = reader.decodeFrame(frame, sequence: sequence)
      sequence &+= 1
      var report = Set(repeats.frame(symbols.map(\.key), at: clock.now, step: step))
      var reported = 0
      for symbol in symbols where report.remove(symbol.key) != nil {
        emit(
          Event(
            time: .now(), device: device, payload: .decodedData(Self.decodedData(symbol, origin: path))))
        reported += 1
      }
      if untilFirstRead && reported > 0 { return false }
    }
    return false
  }

  /// Waits for a removed camera to come back: its node is looked for every 250 ms (udev makes it
  /// again when the camera is plugged in) and opened once there. A node that is back but cannot be
  /// used yet (udev still giving it its group, another program streaming from it) is tried again,
  /// with one warning. nil when the read stops first.
  private func waitForReturn(_ path: FilePath, format: V4L2Camera.PixelFormat?, stopping: () -> Bool)
    -> (any CameraFrames)?
  {
    var told = false
    while !stopping() {
      usleep(Self.returnPollMicroseconds)
      guard path.withCString({ access($0, F_OK) }) == 0, !stopping() else { continue }
      do {
        return try openCamera(path, format)
      } catch {
        if !told {
          told = true
          warn(
            "\(Self.cameraError(error, path: path.description).message); trying again until it can be used")
        }
      }
    }
    return nil
  }

  static func cameraError(_ error: ImageError, path: String) -> CaptureError {
    switch error {
    case .notFound(let m): CaptureError(.notAvailable, "camera \(path) is not available: \(m)")
    case .accessDenied(let m):
      HostExplanation.nodeDenied(path, kind: .video, context: "camera \(path)")
        ?? CaptureError(.fileAccessDenied, "camera \(path): \(m)")
    case .unsupportedFormat(let m): CaptureError(.notAvailable, "camera \(path) cannot be used: \(m)")
    // The serial and keyboard-wedge drivers' words and code for a node another program holds.
    case .busy: CaptureError(.notAvailable, "camera \(path) is busy (in use by another program)")
    case .removed: CaptureError(.notAvailable, "camera \(path) was removed")
    case .corrupt(let m), .unreadable(let m): CaptureError(.communicationError, "camera \(path): \(m)")
    }
  }
}

/// A camera as the frame loop reads it: one frame at a time, each call waiting for the next.
protocol CameraFrames: AnyObject {
  func nextFrame() throws(ImageError) -> GrayImage
}

extension V4L2Camera: CameraFrames {}

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
