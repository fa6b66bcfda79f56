// See include/cwebsockets.h. Only this file includes libwebsockets.h.
#define _GNU_SOURCE
#include <malloc.h>
#include "cwebsockets.h"

#include <arpa/inet.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct cws_server {
  struct lws_context *context;
  struct lws_vhost *vhost;
  struct lws *listener;
  void *owner;
  cws_event_fn callback;
  struct lws_protocols protocols[2];
};

static struct cws_server *server_of(struct lws *wsi) {
  return (struct cws_server *)lws_context_user(lws_get_context(wsi));
}

static int deliver(struct lws *wsi, int event, const void *in, size_t len) {
  struct cws_server *server = server_of(wsi);
  if (!server || !server->callback) return 0;
  return server->callback(server->owner, wsi, event, (const uint8_t *)in, len);
}

static int on_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
  struct cws_server *server;
  switch (reason) {
  case LWS_CALLBACK_HTTP:
    return deliver(wsi, CWS_HTTP_REQUEST, in, in ? strlen((const char *)in) : 0);
  case LWS_CALLBACK_HTTP_BODY:
    return deliver(wsi, CWS_HTTP_BODY, in, len);
  case LWS_CALLBACK_HTTP_BODY_COMPLETION:
    return deliver(wsi, CWS_HTTP_BODY_DONE, NULL, 0);
  case LWS_CALLBACK_HTTP_WRITEABLE:
    return deliver(wsi, CWS_HTTP_WRITEABLE, NULL, 0);
  case LWS_CALLBACK_CLOSED_HTTP:
    deliver(wsi, CWS_HTTP_CLOSED, NULL, 0);
    return 0;
  case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
    return deliver(wsi, CWS_UPGRADE, in, in ? strlen((const char *)in) : 0);
  case LWS_CALLBACK_ESTABLISHED:
    return deliver(wsi, CWS_WS_OPEN, NULL, 0);
  case LWS_CALLBACK_RECEIVE:
    return deliver(wsi, CWS_WS_RECEIVE, in, len);
  case LWS_CALLBACK_SERVER_WRITEABLE:
    return deliver(wsi, CWS_WS_WRITEABLE, NULL, 0);
  case LWS_CALLBACK_CLOSED:
    deliver(wsi, CWS_WS_CLOSED, NULL, 0);
    return 0;
  case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
    // Sent once per protocol of the vhost; only protocols[0] is ours.
    server = (struct cws_server *)lws_context_user(lws_get_context(wsi));
    if (server && server->callback) server->callback(server->owner, NULL, CWS_WAKE, NULL, 0);
    return 0;
  case LWS_CALLBACK_RAW_RX_FILE:
    deliver(wsi, CWS_LISTENER_READABLE, NULL, 0);
    return 0;
  case LWS_CALLBACK_RAW_CLOSE_FILE:
    server = server_of(wsi);
    if (server && server->listener == wsi) server->listener = NULL;
    return 0;
  case LWS_CALLBACK_TIMER:
    return deliver(wsi, CWS_DEADLINE, NULL, 0);
  case LWS_CALLBACK_WSI_DESTROY:
    if (lws_get_opaque_user_data(wsi)) deliver(wsi, CWS_DESTROYED, NULL, 0);
    return 0;
  default:
    return lws_callback_http_dummy(wsi, reason, user, in, len);
  }
}

// libwebsockets 4.1 has one log emitter for the whole process (lws_set_log_level), not one per
// context, so the function that takes its lines is process-wide too.
static _Atomic(cws_log_fn) log_function = NULL;

static void emit_log(int level, const char *line) {
  cws_log_fn function = atomic_load(&log_function);
  if (function) function(level & LLL_ERR ? 1 : 0, line);
}

void cws_set_log(cws_log_fn function) { atomic_store(&log_function, function); }

cws_server *cws_server_create(void *owner, cws_event_fn callback, const cws_options *options) {
  struct cws_server *server = calloc(1, sizeof(*server));
  if (!server) return NULL;
  server->owner = owner;
  server->callback = callback;
  server->protocols[0].name = "capture";
  server->protocols[0].callback = on_event;
  // protocols[1] stays zero: the terminator.

  // Errors and warnings of the library go to cws_set_log's function, never to its default emitter
  // (which writes unprefixed "[date] E: …" lines to stderr); its notices ("lws_create_context: LWS:
  // 4.1.6…") are noise for a command-line tool.
  lws_set_log_level(LLL_ERR | LLL_WARN, emit_log);

  struct lws_context_creation_info info;
  memset(&info, 0, sizeof(info));
  // No listening port of the library's own: every connection comes through lws_adopt_socket_vhost,
  // from our own listening socket or one inherited from systemd (sd_listen_fds(3)).
  info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
  info.protocols = server->protocols;
  info.user = server;
  info.vhost_name = "capture";
  info.count_threads = 1;
  info.fd_limit_per_thread = options->fd_limit;
  info.max_http_header_data = (unsigned short)(options->max_header_bytes > 65535 ? 65535 : options->max_header_bytes);
  info.max_http_header_pool = (unsigned short)(options->header_pool > 65535 ? 65535 : options->header_pool);
  info.timeout_secs = options->timeout_seconds;
  info.timeout_secs_ah_idle = options->timeout_seconds;
  info.keepalive_timeout = (int)options->timeout_seconds;
  // No VHOST_UPG_STRICT_HOST_CHECK: the Host header is the service's to judge (it answers 403), not
  // the library's vhost matching. No signal handlers, no SSL.
  info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
  server->context = lws_create_context(&info);
  if (!server->context) {
    free(server);
    return NULL;
  }
  server->vhost = lws_get_vhost_by_name(server->context, "capture");
  if (!server->vhost) {
    lws_context_destroy(server->context);
    free(server);
    return NULL;
  }
  return server;
}

int cws_server_watch_listener(cws_server *server, int fd) {
  lws_sock_file_fd_type descriptor;
  descriptor.filefd = fd;
  server->listener =
      lws_adopt_descriptor_vhost(server->vhost, LWS_ADOPT_RAW_FILE_DESC, descriptor, NULL, NULL);
  return server->listener ? 0 : -1;
}

void cws_server_unwatch_listener(cws_server *server) {
  if (server->listener) lws_set_timeout(server->listener, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

int cws_accept(int listen_fd, char *peer, size_t capacity) {
  struct sockaddr_storage address;
  socklen_t length = sizeof(address);
  int fd = accept4(listen_fd, (struct sockaddr *)&address, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return fd;
  // An answer goes out in two writes (headers, then body): with Nagle's algorithm the second waits
  // for the client's ACK of the first, which a keep-alive client delays by up to 40 ms (delayed
  // ACK), so every request after the first on a connection took ~42 ms. Replies are whole messages:
  // send each write at once.
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (peer && capacity > 0) {
    peer[0] = 0;
    if (address.ss_family == AF_INET)
      inet_ntop(AF_INET, &((struct sockaddr_in *)&address)->sin_addr, peer, (socklen_t)capacity);
    else if (address.ss_family == AF_INET6)
      inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&address)->sin6_addr, peer, (socklen_t)capacity);
  }
  return fd;
}

struct lws *cws_server_adopt(cws_server *server, int fd, uint64_t tag) {
  struct lws *wsi = lws_adopt_socket_vhost(server->vhost, fd);
  if (wsi) lws_set_opaque_user_data(wsi, (void *)(uintptr_t)tag);
  return wsi;
}

int cws_server_service(cws_server *server) { return lws_service(server->context, 0); }

void cws_server_wake(cws_server *server) { lws_cancel_service(server->context); }

void cws_server_destroy(cws_server *server) {
  lws_context_destroy(server->context);
  free(server);
}

uint64_t cws_tag(struct lws *connection) {
  return (uint64_t)(uintptr_t)lws_get_opaque_user_data(connection);
}

static const struct {
  enum lws_token_indexes token;
  const char *name;
} methods[] = {
      {WSI_TOKEN_GET_URI, "GET"},         {WSI_TOKEN_POST_URI, "POST"},
      {WSI_TOKEN_OPTIONS_URI, "OPTIONS"}, {WSI_TOKEN_PUT_URI, "PUT"},
      {WSI_TOKEN_PATCH_URI, "PATCH"},     {WSI_TOKEN_DELETE_URI, "DELETE"},
      {WSI_TOKEN_HEAD_URI, "HEAD"},       {WSI_TOKEN_CONNECT, "CONNECT"},
};

int cws_request_method(struct lws *connection, char *dst, int capacity) {
  for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
    if (lws_hdr_total_length(connection, methods[i].token) > 0) {
      size_t n = strlen(methods[i].name);
      if ((int)n + 1 > capacity) return -1;
      memcpy(dst, methods[i].name, n + 1);
      return (int)n;
    }
  }
  return -1;
}

int cws_request_path(struct lws *connection, char *dst, int capacity) {
  for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
    if (lws_hdr_total_length(connection, methods[i].token) > 0)
      return lws_hdr_copy(connection, dst, capacity, methods[i].token);
  }
  return -1;
}

// Headers libwebsockets does not know are kept by name only (LWS_WITH_CUSTOM_HEADERS) and 4.1 has
// no way to list them, so the ones a browser's CORS and Private Network Access preflight and fetch
// metadata send are looked up by name.
static const char *const custom_headers[] = {
    "access-control-request-method:", "access-control-request-private-network:",
    "sec-fetch-site:", "sec-fetch-mode:", "sec-fetch-dest:", "x-requested-with:", "keep-alive:",
};

// Copies one header's value (its fragments joined by lws_hdr_copy / lws_hdr_custom_copy) after its
// name, straight into dst: no intermediate buffer, so no value is too long to read while it fits
// the request's header space. 0 when it did not fit or could not be copied.
static int append_header(uint8_t *dst, size_t *used, size_t capacity, const char *name, size_t name_length,
                         int value_length, struct lws *connection, int token, const char *custom_name,
                         int custom_length) {
  // lws_hdr_copy wants room for the joined fragments and a NUL; a separator per fragment at most
  // doubles the value.
  size_t need = name_length + 1 + 2 * (size_t)value_length + 2;
  if (need > capacity - *used) return 0;
  uint8_t *at = dst + *used;
  for (size_t i = 0; i < name_length; i++) {
    char c = name[i];
    at[i] = (uint8_t)((c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c);
  }
  at[name_length] = 0;
  char *value = (char *)at + name_length + 1;
  int room = (int)(2 * (size_t)value_length + 2);
  int copied = custom_name ? lws_hdr_custom_copy(connection, value, room, custom_name, custom_length)
                           : lws_hdr_copy(connection, value, room, (enum lws_token_indexes)token);
  if (copied < 0) return 0;
  value[copied] = 0;
  *used += name_length + 1 + (size_t)copied + 1;
  return 1;
}

size_t cws_request_headers(struct lws *connection, uint8_t *dst, size_t capacity, int *incomplete) {
  size_t used = 0;
  *incomplete = 0;
  for (int token = 0; token < (int)WSI_TOKEN_COUNT; token++) {
    const char *name = (const char *)lws_token_to_string((enum lws_token_indexes)token);
    if (!name) continue;
    size_t name_length = strlen(name);
    // Request-line tokens ("get ", "post ", …) and HTTP/2 pseudo-headers are not headers.
    if (name_length < 2 || name[name_length - 1] != ':' || name[0] == ':') continue;
    int length = lws_hdr_total_length(connection, (enum lws_token_indexes)token);
    if (length <= 0) continue;
    if (!append_header(dst, &used, capacity, name, name_length - 1, length, connection, token, NULL, 0))
      *incomplete = 1;
  }
  for (size_t i = 0; i < sizeof(custom_headers) / sizeof(custom_headers[0]); i++) {
    const char *name = custom_headers[i];
    int name_length = (int)strlen(name);
    int length = lws_hdr_custom_length(connection, name, name_length);
    if (length < 0) continue;
    if (!append_header(dst, &used, capacity, name, (size_t)name_length - 1, length, connection, 0, name,
                       name_length))
      *incomplete = 1;
  }
  return used;
}

int64_t cws_request_content_length(struct lws *connection) {
  char value[32];
  int length = lws_hdr_total_length(connection, WSI_TOKEN_HTTP_CONTENT_LENGTH);
  if (length <= 0 || length >= (int)sizeof(value)) return length <= 0 ? -1 : INT64_MAX;
  if (lws_hdr_copy(connection, value, (int)sizeof(value), WSI_TOKEN_HTTP_CONTENT_LENGTH) < 0) return -1;
  int64_t result = 0;
  for (int i = 0; value[i]; i++) {
    if (value[i] < '0' || value[i] > '9') return -1;
    if (result > (INT64_MAX - 9) / 10) return INT64_MAX;
    result = result * 10 + (value[i] - '0');
  }
  return result;
}

int cws_request_is_chunked(struct lws *connection) {
  char value[64];
  int length = lws_hdr_total_length(connection, WSI_TOKEN_HTTP_TRANSFER_ENCODING);
  if (length <= 0) return 0;
  if (length >= (int)sizeof(value)) return 1;
  if (lws_hdr_copy(connection, value, (int)sizeof(value), WSI_TOKEN_HTTP_TRANSFER_ENCODING) < 0) return 1;
  return strcasestr(value, "chunked") != NULL;
}

void cws_request_writeable(struct lws *connection) { lws_callback_on_writable(connection); }

void cws_release_free_heap(void) { malloc_trim(0); }

int cws_is_choked(struct lws *connection) { return lws_send_pipe_choked(connection); }

static const char *reason_phrase(unsigned int status) {
  switch (status) {
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 426: return "Upgrade Required";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  default: return status < 400 ? "OK" : "Error";
  }
}

int cws_write_response(struct lws *connection, unsigned int status, const uint8_t *headers,
                       size_t headers_length, uint64_t content_length, int close_after,
                       int upgrade_refusal) {
  size_t capacity = LWS_PRE + 512 + headers_length * 2;
  uint8_t *buffer = malloc(capacity);
  if (!buffer) return -1;
  uint8_t *start = buffer + LWS_PRE, *p = start, *end = buffer + capacity - 1;
  int failed = 0;
  if (upgrade_refusal) {
    int n = snprintf((char *)p, (size_t)(end - p), "HTTP/1.1 %u %s\r\n", status, reason_phrase(status));
    if (n < 0 || n >= end - p) failed = 1; else p += n;
  } else {
    failed = lws_add_http_header_status(connection, status, &p, end);
  }
  size_t i = 0;
  char name[256];
  while (!failed && i < headers_length) {
    const uint8_t *n = headers + i;
    size_t nl = strnlen((const char *)n, headers_length - i);
    if (i + nl + 1 >= headers_length) break;
    const uint8_t *v = n + nl + 1;
    size_t vl = strnlen((const char *)v, headers_length - i - nl - 1);
    i += nl + 1 + vl + 1;
    if (nl == 0 || nl + 2 > sizeof(name)) continue;
    memcpy(name, n, nl);
    name[nl] = ':';
    name[nl + 1] = 0;
    failed = lws_add_http_header_by_name(connection, (const unsigned char *)name, v, (int)vl, &p, end);
  }
  if (!failed && close_after)
    failed = lws_add_http_header_by_token(connection, WSI_TOKEN_CONNECTION,
                                          (const unsigned char *)"close", 5, &p, end);
  if (!failed) failed = lws_add_http_header_content_length(connection, content_length, &p, end);
  if (!failed) failed = lws_finalize_http_header(connection, &p, end);
  int result = -1;
  if (!failed) {
    int n = lws_write(connection, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS);
    result = n < 0 ? -1 : 0;
  }
  free(buffer);
  return result;
}

int cws_write_body(struct lws *connection, const uint8_t *data, size_t length, int final) {
  uint8_t *buffer = malloc(LWS_PRE + length + 1);
  if (!buffer) return -1;
  if (length) memcpy(buffer + LWS_PRE, data, length);
  int n = lws_write(connection, buffer + LWS_PRE, length, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
  free(buffer);
  return n < 0 ? -1 : 0;
}

int cws_transaction_completed(struct lws *connection) {
  return lws_http_transaction_completed(connection);
}

void cws_kill(struct lws *connection) {
  lws_set_timeout(connection, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

void cws_set_deadline(struct lws *connection, int seconds) {
  lws_set_timer_usecs(connection, seconds < 0 ? -1 : (lws_usec_t)seconds * LWS_US_PER_SEC);
}

void cws_set_kill_timeout(struct lws *connection, int seconds) {
  lws_set_timeout(connection, PENDING_TIMEOUT_USER_OK, seconds);
}

void cws_rx_allow(struct lws *connection, int allow) { lws_rx_flow_control(connection, allow); }

void cws_clear_timeout(struct lws *connection) { lws_set_timeout(connection, NO_PENDING_TIMEOUT, 0); }

int cws_ws_write_text(struct lws *connection, const uint8_t *data, size_t length) {
  uint8_t *buffer = malloc(LWS_PRE + length + 1);
  if (!buffer) return -1;
  if (length) memcpy(buffer + LWS_PRE, data, length);
  int n = lws_write(connection, buffer + LWS_PRE, length, LWS_WRITE_TEXT);
  free(buffer);
  return n < 0 ? -1 : 0;
}

void cws_ws_close_reason(struct lws *connection, uint16_t code, const uint8_t *reason, size_t length) {
  // A close frame's payload is at most 125 bytes: 2 for the code, 123 for the reason (RFC 6455 §5.5).
  if (length > 123) length = 123;
  lws_close_reason(connection, (enum lws_close_status)code, (unsigned char *)reason, length);
}

int cws_ws_is_first_fragment(struct lws *connection) { return lws_is_first_fragment(connection); }
int cws_ws_is_final_fragment(struct lws *connection) { return lws_is_final_fragment(connection); }
int cws_ws_is_binary(struct lws *connection) { return lws_frame_is_binary(connection); }
size_t cws_ws_remaining_payload(struct lws *connection) { return lws_remaining_packet_payload(connection); }
