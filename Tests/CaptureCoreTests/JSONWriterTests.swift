import Testing

@testable import CaptureCore

/// JSON.write's object keys: UTF-8 byte order (code-point order, RFC 3629 §1), every run the same,
/// whatever the strings' storage (small, native, non-ASCII).
@Suite struct JSONWriterTests {
  @Test(
    "object keys are written in UTF-8 byte order: prefixes first, upper case before lower, non-ASCII last")
  func keysInByteOrder() {
    let object = JSON.object([
      "time": .number(1), "event": .number(2), "eventId": .number(3), "Zeta": .number(4), "é": .number(5),
      "e": .number(6), "a long key that is not a small string": .number(7), "": .number(8),
      "\u{7F}": .number(9), "\u{2028}": .number(10),
    ])
    #expect(
      object.serialized
        == #"{"":8,"Zeta":4,"a long key that is not a small string":7,"e":6,"event":2,"eventId":3,"time":1,"\u007f":9,"é":5,"\u2028":10}"#
    )
  }

  @Test("precedes agrees with comparing the UTF-8 bytes one by one, for small, long and non-ASCII strings")
  func precedesIsByteOrder() {
    let words = [
      "", "a", "b", "ab", "abc", "A", "é", "e\u{301}", "ü", "z", "zz", String(repeating: "k", count: 40),
      String(repeating: "k", count: 41), "日本", "\u{10FFFF}", "eventId", "event",
    ]
    for a in words {
      for b in words {
        #expect(JSON.precedes(a, b) == a.utf8.lexicographicallyPrecedes(b.utf8), "\(a) vs \(b)")
      }
    }
  }
}
