extension StringProtocol {
  /// The text without `characters` at either end; spaces and tabs by default, which is what a person
  /// leaves around a value they type (a favourites list) and what HTTP allows around a field value
  /// (RFC 9110 §5.6.3, optional whitespace). The one trim of the program: each caller names any
  /// other set it needs.
  public func trimmingSpaces(_ characters: Set<Character> = [" ", "\t"]) -> SubSequence {
    var start = startIndex
    var end = endIndex
    while start < end, characters.contains(self[start]) { start = index(after: start) }
    while end > start, characters.contains(self[index(before: end)]) { end = index(before: end) }
    return self[start..<end]
  }
}
