import Foundation
import Testing

@testable import HTTPTransport

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct HTTPRequestTests {
  @Test func aRequestReachesTheHandlerWithLowerCasedHeadersAndItsBodyAndTheResponseComesBack() async throws {
    let served = try Served()
    let port = served.port
    let response = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      client.write(
        "POST /Capture/v1/api HTTP/1.1\r\nHost: localhost:\(port)\r\nOrigin: http://127.0.0.1:9\r\n"
          + "Content-Type: application/json\r\nAccess-Control-Request-Private-Network: true\r\n"
          + "Content-Length: 11\r\n\r\n{\"a\":\"bcd\"}")
      return client.readResponse()
    }
    await served.stop()
    let reply = try #require(response)
    #expect(reply.statusLine == "HTTP/1.1 200 OK")
    #expect(reply.headers["x-method"] == "POST")
    #expect(reply.headers["x-path"] == "/Capture/v1/api")
    #expect(reply.headers["content-type"] == "application/octet-stream")
    #expect(reply.headers["content-length"] == "11")
    #expect(reply.body == Array("{\"a\":\"bcd\"}".utf8))
    let request = try #require(served.recorder.requests.first)
    #expect(request.method == "POST")
    #expect(request.path == "/Capture/v1/api")
    #expect(request.headers["host"] == "localhost:\(port)")
    #expect(request.headers["origin"] == "http://127.0.0.1:9")
    #expect(request.headers["content-type"] == "application/json")
    #expect(request.headers["access-control-request-private-network"] == "true")
    #expect(request.body == Array("{\"a\":\"bcd\"}".utf8))
  }

  @Test func keepAliveAnswersSeveralRequestsOnOneConnectionInOrder() async throws {
    let served = try Served()
    let port = served.port
    let replies = try await onOwnThread { () -> [RawResponse] in
      let client = try RawClient(port: port)
      var replies: [RawResponse] = []
      for index in 0..<3 {
        client.write("GET /item/\(index) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        if let reply = client.readResponse() { replies.append(reply) }
      }
      for body in ["A", "B"] {
        client.write("POST /\(body) HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n\(body)")
        if let reply = client.readResponse() { replies.append(reply) }
      }
      // Two pipelined requests without bodies: answered in the order sent.
      client.write("GET /c HTTP/1.1\r\nHost: x\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n")
      if let reply = client.readResponse() { replies.append(reply) }
      if let reply = client.readResponse() { replies.append(reply) }
      return replies
    }
    await served.stop()
    #expect(replies.map(\.status) == [200, 200, 200, 200, 200, 200, 200])
    #expect(
      replies.map { $0.headers["x-path"] ?? "" } == ["/item/0", "/item/1", "/item/2", "/A", "/B", "/c", "/d"])
    #expect(replies[3].body == [UInt8(ascii: "A")])
    #expect(replies[4].body == [UInt8(ascii: "B")])
    let ids = served.recorder.requests.map(\.id)
    #expect(Set(ids).count == 7)
  }

  @Test func aPostWithContentLengthZeroIsAnsweredAndTheConnectionServesTheNextRequest() async throws {
    // libwebsockets 4.1 reports a body completion for Content-Length: 0 after the request was handed
    // over: it must not be taken for a pipelined request (which closes the connection).
    let served = try Served()
    let port = served.port
    let replies = try await onOwnThread { () -> [RawResponse] in
      let client = try RawClient(port: port)
      var replies: [RawResponse] = []
      client.write("POST /empty HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n\r\n")
      if let reply = client.readResponse() { replies.append(reply) }
      client.write("POST /next HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 2\r\n\r\nhi")
      if let reply = client.readResponse() { replies.append(reply) }
      return replies
    }
    await served.stop()
    #expect(replies.map(\.status) == [200, 200])
    #expect(replies.map { $0.headers["x-path"] ?? "" } == ["/empty", "/next"])
    #expect(replies.first?.body == [])
    #expect(served.recorder.requests.map(\.body) == [[], Array("hi".utf8)])
  }
}
