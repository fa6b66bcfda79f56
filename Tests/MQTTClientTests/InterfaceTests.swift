import Testing

@testable import MQTTClient

@Suite struct MQTTInterfaceTests {
  @Test func errorsDescribeThemselves() { #expect(MQTTError.notAuthorized("no").description == "no") }
}
