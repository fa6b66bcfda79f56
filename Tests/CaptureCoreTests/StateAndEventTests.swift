import Testing

@testable import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

func tempDir() -> String {
  var template = Array("/tmp/capture-core-XXXXXX".utf8CString)
  let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
  return path
}

private func writeFile(_ path: String, _ text: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
  close(fd)
}

private func readFile(_ path: String) -> String? {
  guard let f = fopen(path, "r") else { return nil }
  defer { fclose(f) }
  var out = ""
  var buffer = [CChar](repeating: 0, count: 4096)
  while fgets(&buffer, 4096, f) != nil { out += String(cString: buffer) }
  return out
}

@Suite("State store")
struct StateStoreTests {
  @Test("a missing state file is the empty state")
  func missingFileIsEmpty() throws {
    let store = StateStore(directory: tempDir() + "/capture")
    let state = try store.load()
    #expect(state == StateFile())
    #expect(state.schemaVersion == 1)
  }

  @Test("update writes atomically with mode 0600 and a second load sees it")
  func updateRoundTrip() throws {
    let store = StateStore(directory: tempDir() + "/nested/capture")
    try store.update { (s: inout StateFile) throws(CaptureError) in
      s.socketCam.dataSources["38"] = 0
      s.socketCam.friendlyName = "Dock 4"
    }
    let again = try StateStore(directory: store.directory).load()
    #expect(again.socketCam.dataSources["38"] == 0)
    #expect(again.socketCam.friendlyName == "Dock 4")
    var info = stat()
    #expect(stat(store.path, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(access(store.path + ".tmp.\(getpid())", F_OK) != 0)
  }

  @Test("a corrupt state file is ESKT_INVALIDFORMAT naming the file, and is never overwritten")
  func corruptFileKept() throws {
    let store = StateStore(directory: tempDir())
    writeFile(store.path, "{not json")
    #expect(throws: CaptureError.self) { try store.load() }
    do {
      _ = try store.load()
    } catch {
      #expect(error.code == .invalidFormat)
      #expect(error.message.contains(store.path))
    }
    #expect(throws: CaptureError.self) {
      try store.update { (s: inout StateFile) throws(CaptureError) in s.socketCam.status = 1 }
    }
    #expect(readFile(store.path) == "{not json")
  }

  @Test("a state file from a newer capture is ESKT_INVALIDVERSION")
  func futureVersion() throws {
    let store = StateStore(directory: tempDir())
    writeFile(store.path, #"{"schemaVersion": 9, "devices": []}"#)
    do {
      _ = try store.load()
      Issue.record("expected an error")
    } catch {
      #expect(error.code == .invalidVersion)
    }
  }
}

@Suite("Events and decoded data")
struct EventTests {
  @Test(
    "timestamps print as ISO 8601 UTC with milliseconds",
    arguments: [
      (Int64(0), "1970-01-01T00:00:00.000Z"),
      (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
      (Int64(1_796_046_634_007), "2026-11-30T13:50:34.007Z"),
      (Int64(-1), "1969-12-31T23:59:59.999Z"),
    ])
  func iso8601(ms: Int64, text: String) {
    #expect(Timestamp(milliseconds: ms).iso8601 == text)
  }

  @Test("decoded text keeps valid UTF-8 and writes each invalid byte as \\xHH")
  func escapedText() {
    #expect(DecodedData.escapedText(Array("Grüße 東京".utf8)) == "Grüße 東京")
    #expect(DecodedData.escapedText([0x41, 0xFF, 0x42]) == "A\\xFFB")
    #expect(DecodedData.escapedText([0x00, 0xC3]) == "\u{0}\\xC3")
    #expect(DecodedData.escapedText([0xED, 0xA0, 0x80]) == "\\xED\\xA0\\x80")
  }

  @Test("event kinds parse by published name, case and separators ignored")
  func eventKinds() {
    #expect(EventKind.parse("decodedData") == .decodedData)
    #expect(EventKind.parse("decoded-data") == .decodedData)
    #expect(EventKind.parse("DEVICEARRIVAL") == .deviceArrival)
    #expect(EventKind.parse("nope") == nil)
    #expect(EventKind.decodedData.sdkID.rawValue == 5)
  }
}
