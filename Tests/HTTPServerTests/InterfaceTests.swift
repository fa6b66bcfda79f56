import Testing

@testable import HTTPServer

@Suite struct HTTPServerPlaceholderTests {
  @Test func webSocketIDsDescribeThemselves() { #expect(WebSocketID(3).description == "ws#3") }
}
