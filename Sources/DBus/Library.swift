internal import CLazyLibraries

/// libdbus is loaded when the module first needs it, not at start-up (capture's one-shot commands that
/// never talk to a bus do not map it, nor libsystemd and the libraries under it; docs/architecture.md,
/// "Libraries loaded on demand"). The calls into libdbus that need nothing libdbus made call `load`
/// first: a connection's opening, and Marshalling's validators (a name, a path, a signature: a match
/// rule is checked, and a message's names are, before any connection or message exists). Every other
/// call works on a connection or a message, which came after one of those.
enum Library {
  static func load() throws(DBusError) {
    guard cll_load(CLL_DBUS) != 0 else { return }
    throw .failed("libdbus cannot be loaded: \(String(cString: cll_error()))")
  }
}
