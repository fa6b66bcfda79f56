import Testing

@testable import HTTPTransport

@Suite struct HTTPServerPlaceholderTests {
  @Test func webSocketIDsDescribeThemselves() { #expect(WebSocketID(3).description == "ws#3") }
}
