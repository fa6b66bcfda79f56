import Testing

@testable import MosquittoClient

@Suite struct MQTTInterfaceTests {
  @Test func errorsDescribeThemselves() { #expect(MQTTError.notAuthorized("no").description == "no") }
}
