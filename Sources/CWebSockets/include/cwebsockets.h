// A fixed-signature C layer over libwebsockets (Debian's libwebsockets-dev 4.1) for the HTTPTransport
// target. Swift does not import libwebsockets.h itself: the header is large, pulls in OpenSSL and its
// callbacks multiplex a dozen meanings onto `void *in`. Each function here takes plain bytes and one
// opaque connection pointer (`struct lws`), and the one callback the library makes is turned into a
// small set of events (enum cws_event).
//
// Every function except cws_server_wake must be called on the thread running cws_server_service (the
// event loop), as libwebsockets requires; cws_server_wake (lws_cancel_service) is its documented
// cross-thread entry point.
#ifndef CWEBSOCKETS_H
#define CWEBSOCKETS_H

#include <stddef.h>
#include <stdint.h>

struct lws;
typedef struct cws_server cws_server;

/// What happened on a connection. `data`/`length` carry the event's bytes where noted.
enum cws_event {
  /// The headers of a plain HTTP request are complete; `data` is the decoded path.
  CWS_HTTP_REQUEST = 1,
  /// A piece of the request body.
  CWS_HTTP_BODY = 2,
  /// The request body is complete.
  CWS_HTTP_BODY_DONE = 3,
  /// The HTTP connection can take more output (after cws_request_writeable).
  CWS_HTTP_WRITEABLE = 4,
  /// The HTTP connection closed (not one that became a WebSocket).
  CWS_HTTP_CLOSED = 5,
  /// A WebSocket upgrade request: return 0 to accept, 1 after writing a refusal with
  /// cws_write_response + cws_write_body, -1 to hang up. `data` is the upgrade's protocol name.
  CWS_UPGRADE = 6,
  /// The WebSocket handshake completed.
  CWS_WS_OPEN = 7,
  /// A piece of a WebSocket message (see cws_ws_* for its framing).
  CWS_WS_RECEIVE = 8,
  /// The WebSocket can take one more frame.
  CWS_WS_WRITEABLE = 9,
  /// The WebSocket closed, by either side or because the TCP connection dropped.
  CWS_WS_CLOSED = 10,
  /// cws_server_wake was called (from any thread).
  CWS_WAKE = 11,
  /// The watched listening socket is readable: accept(2) on it.
  CWS_LISTENER_READABLE = 12,
  /// The connection object is being freed; no event for it follows.
  CWS_DESTROYED = 13,
  /// The deadline set with cws_set_deadline has passed.
  CWS_DEADLINE = 14,
};

/// The one callback: `owner` is what cws_server_create was given. Return 0 to continue, -1 to close
/// the connection (after cws_ws_close_reason for a WebSocket), or what the event documents.
typedef int (*cws_event_fn)(
    void *owner, struct lws *connection, int event, const uint8_t *data, size_t length);

/// Takes one line of libwebsockets' log (`error` 1 for its errors, 0 for its warnings); the line ends
/// with a newline. Called on whichever thread logs (the event loop's, or the one creating a context).
typedef void (*cws_log_fn)(int error, const char *line);
/// Routes libwebsockets' errors and warnings, process-wide, to `function` (NULL drops them). Safe from
/// any thread.
void cws_set_log(cws_log_fn function);

typedef struct cws_options {
  /// Bytes of request line + headers one request may use (lws max_http_header_data, at most 65535).
  unsigned int max_header_bytes;
  /// Connections that may be parsing headers at once (lws max_http_header_pool).
  unsigned int header_pool;
  /// File descriptors the loop may handle (lws fd_limit_per_thread).
  unsigned int fd_limit;
  /// Seconds a connection has to complete its request headers, and an idle keep-alive connection
  /// stays open (lws timeout_secs, timeout_secs_ah_idle and keepalive_timeout).
  unsigned int timeout_seconds;
} cws_options;

/// A libwebsockets context with one vhost that listens on no port of its own (connections arrive
/// through cws_server_adopt). NULL when libwebsockets could not create it.
cws_server *cws_server_create(void *owner, cws_event_fn callback, const cws_options *options);
/// Watches `fd` (a listening socket, which libwebsockets takes and closes at destruction) for
/// readability: CWS_LISTENER_READABLE. 0, or -1.
int cws_server_watch_listener(cws_server *server, int fd);
/// Stops watching the listener (closes the descriptor given to cws_server_watch_listener).
void cws_server_unwatch_listener(cws_server *server);
/// accept4(2) on a listening socket: a non-blocking, close-on-exec connection with TCP_NODELAY, or
/// -1 with errno. `peer` gets the client's address as text (inet_ntop; empty for another family).
int cws_accept(int listen_fd, char *peer, size_t capacity);
/// Hands an accepted socket to libwebsockets as a new HTTP connection with `tag` (cws_tag, nonzero).
/// The connection, or NULL (then the socket has been closed).
struct lws *cws_server_adopt(cws_server *server, int fd, uint64_t tag);
/// Runs the event loop once (waits for events). Negative when the loop cannot continue.
int cws_server_service(cws_server *server);
/// Wakes the loop: CWS_WAKE follows on the loop thread. The one call that is safe from any thread.
void cws_server_wake(cws_server *server);
/// Destroys the context, closing every connection (their CLOSED events come first).
void cws_server_destroy(cws_server *server);

/// The tag given to cws_server_adopt.
uint64_t cws_tag(struct lws *connection);

/// The request method ("GET", "POST", "OPTIONS", …) into `dst` (NUL-terminated). Its length, or -1.
int cws_request_method(struct lws *connection, char *dst, int capacity);
/// The request's path (decoded, without the query) into `dst` (NUL-terminated). Its length, or -1.
int cws_request_path(struct lws *connection, char *dst, int capacity);
/// Every header libwebsockets parsed, as lower-case name, NUL, value, NUL, … into `dst`. Returns the
/// bytes written; `*incomplete` is 1 when a header the request sent could not be read whole (it did
/// not fit `dst`, or libwebsockets could not copy it) and was left out.
size_t cws_request_headers(struct lws *connection, uint8_t *dst, size_t capacity, int *incomplete);
/// The Content-Length header's value, or -1 when absent or not a number.
int64_t cws_request_content_length(struct lws *connection);
/// 1 when the request's Transfer-Encoding is chunked.
int cws_request_is_chunked(struct lws *connection);

/// Asks for CWS_HTTP_WRITEABLE / CWS_WS_WRITEABLE.
void cws_request_writeable(struct lws *connection);

/// malloc_trim(0) (glibc malloc.h): gives freed heap back to the system.
void cws_release_free_heap(void);
/// 1 when the socket has unsent output (libwebsockets holds what the kernel did not take).
int cws_is_choked(struct lws *connection);
/// Writes an HTTP status line and headers: `headers` is name, NUL, value, NUL, … (names without the
/// colon); Content-Length is `content_length`; `close_after` adds "connection: close". `upgrade_refusal`
/// writes the status line as HTTP/1.1 itself: during LWS_CALLBACK_HTTP_CONFIRM_UPGRADE libwebsockets
/// 4.1 has not yet recorded the request's version and would answer "HTTP/1.0". 0, or -1.
int cws_write_response(
    struct lws *connection, unsigned int status, const uint8_t *headers, size_t headers_length,
    uint64_t content_length, int close_after, int upgrade_refusal);
/// Writes body bytes of the response. 0, or -1.
int cws_write_body(struct lws *connection, const uint8_t *data, size_t length, int final);
/// The response is complete: wait for the next request on the connection. Nonzero when the
/// connection must close instead (return -1 then).
int cws_transaction_completed(struct lws *connection);
/// Closes the connection at the loop's next turn.
void cws_kill(struct lws *connection);
/// CWS_DEADLINE `seconds` from now (replacing an earlier deadline); a negative value cancels it
/// (lws_set_timer_usecs).
void cws_set_deadline(struct lws *connection, int seconds);
/// Closes the connection `seconds` from now unless it closes sooner.
void cws_set_kill_timeout(struct lws *connection, int seconds);
/// Stops (0) or resumes (1) reading the connection (lws_rx_flow_control). Resume before asking for
/// CWS_HTTP_WRITEABLE: libwebsockets 4.1 holds the writeable of a connection it does not read.
void cws_rx_allow(struct lws *connection, int allow);
/// Clears the connection's pending timeout (its request is complete; the answer is ours to give).
void cws_clear_timeout(struct lws *connection);

/// Writes one whole text frame. 0, or -1.
int cws_ws_write_text(struct lws *connection, const uint8_t *data, size_t length);
/// The close frame's code and reason for the close that follows the callback's -1.
void cws_ws_close_reason(struct lws *connection, uint16_t code, const uint8_t *reason, size_t length);
/// For CWS_WS_RECEIVE: the piece starts a message / ends its frame's payload and the frame is final /
/// the frame is binary.
int cws_ws_is_first_fragment(struct lws *connection);
int cws_ws_is_final_fragment(struct lws *connection);
int cws_ws_is_binary(struct lws *connection);
/// Payload bytes of the current frame still to come.
size_t cws_ws_remaining_payload(struct lws *connection);

#endif
