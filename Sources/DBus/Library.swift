internal import CLazyLibraries

/// libdbus is loaded when the first connection or message needs it, not at start-up (capture's one-shot
/// commands that never talk to a bus do not map it, nor libsystemd and the libraries under it;
/// docs/architecture.md, "Libraries loaded on demand"). Every entry into libdbus this module has (a
/// connection, a message of our own) calls `load` first; the rest work on what those made.
enum Library {
  static func load() throws(DBusError) {
    guard cll_load(CLL_DBUS) != 0 else { return }
    throw .failed("libdbus cannot be loaded: \(String(cString: cll_error()))")
  }
}
