import Testing

@testable import CaptureMQTT

@Suite struct CaptureMQTTInfoTests {
  @Test func registeredPorts() {
    #expect(CaptureMQTTInfo.defaultPort == 1883 && CaptureMQTTInfo.defaultTLSPort == 8883)
  }
}
