internal import CDBus

/// Conversion between ``DBusValue`` and libdbus messages through the `DBusMessageIter` API
/// (`dbus_message_append_args`/`get_args` are variadic and cannot be called from Swift).
///
/// Writing is two passes: ``validate(body:)`` checks everything libdbus would refuse, then the append
/// pass runs. libdbus guards its API with `_dbus_return_val_if_fail`, and Debian's build makes such
/// a check failure fatal (it aborts the process), so an invalid path, signature or string must never
/// reach it.
enum Marshalling {
  /// The D-Bus specification limits container nesting to 32 arrays plus 32 structs, a total of 64;
  /// libdbus's body validator counts variants in the same total, and a receiver (the bus daemon
  /// included) drops a connection that sends a message nested deeper.
  static let maximumDepth = 64

  // MARK: - Validation

  /// Checks a message body: each value's signature is a single complete type, the whole signature
  /// fits in 255 bytes (DBUS_MAXIMUM_SIGNATURE_LENGTH), and every value is valid for its type.
  static func validate(body: [DBusValue]) throws(DBusError) {
    var signatureLength = 0
    for value in body {
      let signature = value.signature
      try checkSingleCompleteType(signature)
      signatureLength += signature.utf8.count
      try validate(value, depth: 0)
    }
    if signatureLength > 255 {
      throw .invalidArgs("the body signature is \(signatureLength) bytes; D-Bus allows at most 255")
    }
  }

  private static func validate(_ value: DBusValue, depth: Int) throws(DBusError) {
    switch value {
    case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double:
      return
    case .string(let string):
      try checkString(string)
    case .objectPath(let path):
      try checkObjectPath(path)
    case .signature(let signature):
      try checkSignature(signature)
    case .unixFD(let fd):
      if fd < 0 { throw .invalidArgs("\(fd) is not a file descriptor") }
    case .array(let elementSignature, let elements):
      try checkDepth(depth + 1)
      // The element signature itself was validated with the signature that contains it: the
      // argument's (in validate(body:)) or the enclosing variant's. Each element must have exactly
      // that type.
      for element in elements {
        if !conforms(element, to: elementSignature) {
          throw .invalidArgs(
            "an array of '\(elementSignature)' holds a value of type '\(element.signature)'")
        }
        try validate(element, depth: depth + 1)
      }
    case .dictEntry(let key, let value):
      try checkDepth(depth + 1)
      try validate(key, depth: depth + 1)
      try validate(value, depth: depth + 1)
    case .variant(let inner):
      try checkDepth(depth + 1)
      // A variant carries exactly one single complete type (spec, "Marshaling": VARIANT); a bare
      // dict entry is not one.
      try checkSingleCompleteType(inner.signature)
      try validate(inner, depth: depth + 1)
    case .structure(let fields):
      try checkDepth(depth + 1)
      if fields.isEmpty { throw .invalidArgs("a D-Bus struct needs at least one field") }
      for field in fields { try validate(field, depth: depth + 1) }
    }
  }

  private static func checkDepth(_ depth: Int) throws(DBusError) {
    if depth > maximumDepth {
      throw .invalidArgs("values nested deeper than \(maximumDepth) containers")
    }
  }

  /// A string argument: D-Bus strings are UTF-8 without NUL (spec, "Basic types": STRING). Swift
  /// strings are always well-formed UTF-8, so pure ASCII needs no further check; anything else also
  /// goes through libdbus's own rules (dbus_validate_utf8).
  static func checkString(_ string: String) throws(DBusError) {
    try Library.load()
    var ascii = true
    for byte in string.utf8 {
      if byte == 0 { throw .invalidArgs("a D-Bus string cannot contain NUL") }
      if byte >= 0x80 { ascii = false }
    }
    if ascii { return }
    let valid = string.withCString { dbus_validate_utf8($0, nil) != 0 }
    if !valid { throw .invalidArgs("not valid UTF-8 for D-Bus") }
  }

  static func checkObjectPath(_ path: String) throws(DBusError) {
    try Library.load()
    if path.utf8.contains(0) || !path.withCString({ dbus_validate_path($0, nil) != 0 }) {
      throw .invalidArgs("'\(printable(path))' is not a valid D-Bus object path")
    }
  }

  /// A `g` value: any sequence of complete types, at most 255 bytes.
  static func checkSignature(_ signature: String) throws(DBusError) {
    try Library.load()
    if signature.utf8.contains(0) || !signature.withCString({ dbus_signature_validate($0, nil) != 0 }) {
      throw .invalidArgs("'\(printable(signature))' is not a valid D-Bus signature")
    }
  }

  static func checkSingleCompleteType(_ signature: String) throws(DBusError) {
    try Library.load()
    // One basic type code or `v` is always a single complete type; skip the C call for them.
    if signature.utf8.count == 1, let code = signature.utf8.first, basicOrVariant.contains(code) { return }
    if signature.utf8.contains(0)
      || !signature.withCString({ dbus_signature_validate_single($0, nil) != 0 })
    {
      throw .invalidArgs("'\(printable(signature))' is not a single complete D-Bus type")
    }
  }

  private static let basicOrVariant: Set<UInt8> = Set("ybnqiuxtdsoghv".utf8)

  /// Whether `value` has exactly the type `signature` (itself a valid single complete type), compared
  /// byte by byte without building the value's signature.
  static func conforms(_ value: DBusValue, to signature: String) -> Bool {
    var signature = signature
    return signature.withUTF8 { bytes in
      var index = 0
      return match(value, bytes, &index) && index == bytes.count
    }
  }

  private static func match(_ value: DBusValue, _ signature: UnsafeBufferPointer<UInt8>, _ index: inout Int)
    -> Bool
  {
    guard index < signature.count else { return false }
    let code = signature[index]
    guard code == value.typeCode else { return false }
    index += 1
    switch value {
    case .array(let element, _):
      // Complete types are self-delimiting, so the element signature matches when it is a prefix here.
      var element = element
      return element.withUTF8 { elementBytes in
        guard signature.count - index >= elementBytes.count,
          elementBytes.elementsEqual(signature[index..<index + elementBytes.count])
        else { return false }
        index += elementBytes.count
        return true
      }
    case .dictEntry(let key, let value):
      guard match(key, signature, &index), match(value, signature, &index),
        index < signature.count, signature[index] == UInt8(ascii: "}")
      else { return false }
      index += 1
      return true
    case .structure(let fields):
      for field in fields where !match(field, signature, &index) { return false }
      guard index < signature.count, signature[index] == UInt8(ascii: ")") else { return false }
      index += 1
      return true
    default:
      return true
    }
  }

  static func checkInterface(_ name: String) throws(DBusError) {
    try Library.load()
    if name.utf8.contains(0) || !name.withCString({ dbus_validate_interface($0, nil) != 0 }) {
      throw .invalidArgs("'\(printable(name))' is not a valid D-Bus interface name")
    }
  }

  static func checkMember(_ name: String) throws(DBusError) {
    try Library.load()
    if name.utf8.contains(0) || !name.withCString({ dbus_validate_member($0, nil) != 0 }) {
      throw .invalidArgs("'\(printable(name))' is not a valid D-Bus member name")
    }
  }

  static func checkBusName(_ name: String) throws(DBusError) {
    try Library.load()
    if name.utf8.contains(0) || !name.withCString({ dbus_validate_bus_name($0, nil) != 0 }) {
      throw .invalidArgs("'\(printable(name))' is not a valid D-Bus bus name")
    }
  }

  static func isValidErrorName(_ name: String) -> Bool {
    (try? Library.load()) != nil && !name.utf8.contains(0)
      && name.withCString { dbus_validate_error_name($0, nil) != 0 }
  }

  /// The name in an error message, with control characters shown as `?` so a hostile name cannot
  /// write escape sequences to a terminal.
  static func printable(_ string: String) -> String {
    String(string.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
  }

  // MARK: - Appending

  /// Appends `body` (validated first) to `message`.
  static func append(_ body: [DBusValue], to message: OpaquePointer) throws(DBusError) {
    try validate(body: body)
    let appended = withUnsafeTemporaryAllocation(of: DBusMessageIter.self, capacity: 1) { iter in
      let iter = iter.baseAddress!
      dbus_message_iter_init_append(message, iter)
      for value in body where !append(value, iter) { return false }
      return true
    }
    if !appended { throw .noMemory() }
  }

  /// Appends one validated value; false when libdbus is out of memory. Each container gets its own
  /// sub-iterator at a fixed address for the open/close pair (libdbus keeps writer state in it).
  private static func append(_ value: DBusValue, _ iter: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
    switch value {
    case .byte(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_BYTE, &v) != 0
    case .boolean(let b):
      // dbus_bool_t is 32 bits; only 0 and 1 are valid booleans on the wire.
      var v: dbus_bool_t = b ? 1 : 0
      return dbus_message_iter_append_basic(iter, CDBUS_TYPE_BOOLEAN, &v) != 0
    case .int16(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_INT16, &v) != 0
    case .uint16(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_UINT16, &v) != 0
    case .int32(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_INT32, &v) != 0
    case .uint32(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_UINT32, &v) != 0
    case .int64(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_INT64, &v) != 0
    case .uint64(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_UINT64, &v) != 0
    case .double(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_DOUBLE, &v) != 0
    case .unixFD(var v): return dbus_message_iter_append_basic(iter, CDBUS_TYPE_UNIX_FD, &v) != 0
    case .string(let s): return appendString(s, CDBUS_TYPE_STRING, iter)
    case .objectPath(let s): return appendString(s, CDBUS_TYPE_OBJECT_PATH, iter)
    case .signature(let s): return appendString(s, CDBUS_TYPE_SIGNATURE, iter)
    case .array(let elementSignature, let elements):
      return container(iter, CDBUS_TYPE_ARRAY, elementSignature) { sub in
        if elementSignature == "y" {
          // Fixed-size elements go in one copy (dbus_message_iter_append_fixed_array).
          var bytes = [UInt8]()
          bytes.reserveCapacity(elements.count)
          for case .byte(let b) in elements { bytes.append(b) }
          return bytes.withUnsafeBufferPointer { buffer in
            var base = buffer.baseAddress
            return withUnsafeMutablePointer(to: &base) {
              dbus_message_iter_append_fixed_array(sub, CDBUS_TYPE_BYTE, $0, Int32(buffer.count)) != 0
            }
          }
        }
        for element in elements where !append(element, sub) { return false }
        return true
      }
    case .variant(let inner):
      return container(iter, CDBUS_TYPE_VARIANT, inner.signature) { append(inner, $0) }
    case .structure(let fields):
      return container(iter, CDBUS_TYPE_STRUCT, nil) { sub in
        for field in fields where !append(field, sub) { return false }
        return true
      }
    case .dictEntry(let key, let value):
      return container(iter, CDBUS_TYPE_DICT_ENTRY, nil) { append(key, $0) && append(value, $0) }
    }
  }

  private static func appendString(
    _ string: String, _ type: Int32, _ iter: UnsafeMutablePointer<DBusMessageIter>
  ) -> Bool {
    // append_basic takes the address of a `const char *` for string-like types.
    string.withCString { cString in
      var pointer: UnsafePointer<CChar>? = cString
      return dbus_message_iter_append_basic(iter, type, &pointer) != 0
    }
  }

  private static func container(
    _ iter: UnsafeMutablePointer<DBusMessageIter>, _ type: Int32, _ signature: String?,
    _ body: (UnsafeMutablePointer<DBusMessageIter>) -> Bool
  ) -> Bool {
    withUnsafeTemporaryAllocation(of: DBusMessageIter.self, capacity: 1) { sub in
      let sub = sub.baseAddress!
      let opened: Bool
      if let signature {
        opened = signature.withCString { dbus_message_iter_open_container(iter, type, $0, sub) != 0 }
      } else {
        opened = dbus_message_iter_open_container(iter, type, nil, sub) != 0
      }
      guard opened else { return false }
      guard body(sub) else {
        // Leaves the parent usable (and frees the sub-writer) after a failed append.
        dbus_message_iter_abandon_container(iter, sub)
        return false
      }
      return dbus_message_iter_close_container(iter, sub) != 0
    }
  }

  // MARK: - Reading

  /// Every argument of `message`. libdbus has validated received messages against their signature,
  /// so reading cannot fail.
  static func body(of message: OpaquePointer) -> [DBusValue] {
    withUnsafeTemporaryAllocation(of: DBusMessageIter.self, capacity: 1) { iter in
      let iter = iter.baseAddress!
      // dbus_message_iter_init returns FALSE for an empty body.
      guard dbus_message_iter_init(message, iter) != 0 else { return [] }
      var values: [DBusValue] = []
      repeat {
        values.append(read(iter))
      } while dbus_message_iter_next(iter) != 0
      return values
    }
  }

  /// The first argument when it is a string (for arg0 matching), without reading the rest.
  static func firstStringArgument(of message: OpaquePointer) -> String? {
    withUnsafeTemporaryAllocation(of: DBusMessageIter.self, capacity: 1) { iter in
      let iter = iter.baseAddress!
      guard dbus_message_iter_init(message, iter) != 0,
        dbus_message_iter_get_arg_type(iter) == CDBUS_TYPE_STRING
      else { return nil }
      return readString(iter)
    }
  }

  private static func readString(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> String {
    var pointer: UnsafePointer<CChar>? = nil
    dbus_message_iter_get_basic(iter, &pointer)
    return pointer.map { String(cString: $0) } ?? ""
  }

  private static func read(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> DBusValue {
    let type = dbus_message_iter_get_arg_type(iter)
    switch type {
    case CDBUS_TYPE_BYTE: return .byte(basic(iter, UInt8.self))
    case CDBUS_TYPE_BOOLEAN: return .boolean(basic(iter, dbus_bool_t.self) != 0)
    case CDBUS_TYPE_INT16: return .int16(basic(iter, Int16.self))
    case CDBUS_TYPE_UINT16: return .uint16(basic(iter, UInt16.self))
    case CDBUS_TYPE_INT32: return .int32(basic(iter, Int32.self))
    case CDBUS_TYPE_UINT32: return .uint32(basic(iter, UInt32.self))
    case CDBUS_TYPE_INT64: return .int64(basic(iter, Int64.self))
    case CDBUS_TYPE_UINT64: return .uint64(basic(iter, UInt64.self))
    case CDBUS_TYPE_DOUBLE: return .double(basic(iter, Double.self))
    // get_basic on a UNIX_FD returns a new descriptor (dup) that the caller owns.
    case CDBUS_TYPE_UNIX_FD: return .unixFD(basic(iter, Int32.self))
    case CDBUS_TYPE_STRING: return .string(readString(iter))
    case CDBUS_TYPE_OBJECT_PATH: return .objectPath(readString(iter))
    case CDBUS_TYPE_SIGNATURE: return .signature(readString(iter))
    case CDBUS_TYPE_ARRAY: return readArray(iter)
    case CDBUS_TYPE_VARIANT:
      return recurse(iter) { .variant(read($0)) }
    case CDBUS_TYPE_STRUCT:
      return recurse(iter) { sub in .structure(readAll(sub)) }
    case CDBUS_TYPE_DICT_ENTRY:
      return recurse(iter) { sub in
        let key = read(sub)
        dbus_message_iter_next(sub)
        return .dictEntry(key, read(sub))
      }
    default:
      // Unreachable for a validated message; keep the reader total instead of trapping.
      return .structure([])
    }
  }

  /// get_basic copies a fixed-size value into the given storage.
  private static func basic<T: BitwiseCopyable & Numeric>(
    _ iter: UnsafeMutablePointer<DBusMessageIter>, _: T.Type
  ) -> T {
    var value: T = 0
    withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(iter, $0) }
    return value
  }

  private static func readAll(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> [DBusValue] {
    var values: [DBusValue] = []
    while dbus_message_iter_get_arg_type(iter) != CDBUS_TYPE_INVALID {
      values.append(read(iter))
      dbus_message_iter_next(iter)
    }
    return values
  }

  private static func recurse<R>(
    _ iter: UnsafeMutablePointer<DBusMessageIter>, _ body: (UnsafeMutablePointer<DBusMessageIter>) -> R
  ) -> R {
    withUnsafeTemporaryAllocation(of: DBusMessageIter.self, capacity: 1) { sub in
      dbus_message_iter_recurse(iter, sub.baseAddress!)
      return body(sub.baseAddress!)
    }
  }

  private static func readArray(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> DBusValue {
    let elementType = dbus_message_iter_get_element_type(iter)
    let elementSignature: String
    if let basic = basicSignature(elementType) {
      elementSignature = basic
    } else {
      // The iterator's signature is the array's own ("a..."); libdbus returns a malloc'd copy.
      let full = dbus_message_iter_get_signature(iter)
      defer { dbus_free(full) }
      elementSignature = full.map { String(String(cString: $0).dropFirst()) } ?? ""
    }
    return recurse(iter) { sub in
      if elementType == CDBUS_TYPE_BYTE {
        // Fixed-size elements in one copy (dbus_message_iter_get_fixed_array).
        var base: UnsafeRawPointer? = nil
        var count: Int32 = 0
        dbus_message_iter_get_fixed_array(sub, &base, &count)
        guard let base, count > 0 else { return .array(elementSignature: "y", []) }
        let bytes = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: Int(count))
        return .array(elementSignature: "y", bytes.map { .byte($0) })
      }
      return .array(elementSignature: elementSignature, readAll(sub))
    }
  }

  /// The one-character signature of a basic type code, without asking libdbus for a string.
  private static func basicSignature(_ type: Int32) -> String? {
    switch type {
    case CDBUS_TYPE_BYTE: "y"
    case CDBUS_TYPE_BOOLEAN: "b"
    case CDBUS_TYPE_INT16: "n"
    case CDBUS_TYPE_UINT16: "q"
    case CDBUS_TYPE_INT32: "i"
    case CDBUS_TYPE_UINT32: "u"
    case CDBUS_TYPE_INT64: "x"
    case CDBUS_TYPE_UINT64: "t"
    case CDBUS_TYPE_DOUBLE: "d"
    case CDBUS_TYPE_STRING: "s"
    case CDBUS_TYPE_OBJECT_PATH: "o"
    case CDBUS_TYPE_SIGNATURE: "g"
    case CDBUS_TYPE_UNIX_FD: "h"
    case CDBUS_TYPE_VARIANT: "v"
    default: nil
    }
  }
}
