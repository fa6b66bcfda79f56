extension StringProtocol {
  /// The text without `characters` at either end; spaces and tabs by default, which is what a person
  /// leaves around a value they type (a favourites list, an Origin header's optional whitespace, RFC
  /// 9110 §5.6.3). The one trim of the program: each caller names any other set it needs.
  public func trimmingSpaces(_ characters: Set<Character> = [" ", "\t"]) -> SubSequence {
    var start = startIndex
    var end = endIndex
    while start < end, characters.contains(self[start]) { start = index(after: start) }
    while end > start, characters.contains(self[index(before: end)]) { end = index(before: end) }
    return self[start..<end]
  }
}
