import Testing

@testable import CaptureService

@Suite struct CaptureServiceInfoTests {
  @Test func defaultPortIsCaptureJSDefault() { #expect(CaptureServiceInfo.defaultPort == 18481) }
}
