// The functions of each library loaded on demand that capture calls (see include/clazylibraries.h).
// One X(name) per function; the link fails if a caller uses one that is not here. Sorted.
#ifndef CLL_SYMBOLS_H
#define CLL_SYMBOLS_H

#define CLL_ZBAR_SYMBOLS(X) \
  X(zbar_image_create) \
  X(zbar_image_destroy) \
  X(zbar_image_first_symbol) \
  X(zbar_image_scanner_create) \
  X(zbar_image_scanner_destroy) \
  X(zbar_image_scanner_request_dbus) \
  X(zbar_image_scanner_set_config) \
  X(zbar_image_set_data) \
  X(zbar_image_set_format) \
  X(zbar_image_set_size) \
  X(zbar_scan_image) \
  X(zbar_symbol_get_components) \
  X(zbar_symbol_get_data) \
  X(zbar_symbol_get_data_length) \
  X(zbar_symbol_get_loc_size) \
  X(zbar_symbol_get_loc_x) \
  X(zbar_symbol_get_loc_y) \
  X(zbar_symbol_get_type) \
  X(zbar_symbol_next) \
  X(zbar_symbol_set_first_symbol) \
  X(zbar_version) \
  /* end */

#define CLL_DBUS_SYMBOLS(X) \
  X(dbus_bus_get_unique_name) \
  X(dbus_bus_register) \
  X(dbus_connection_add_filter) \
  X(dbus_connection_can_send_type) \
  X(dbus_connection_close) \
  X(dbus_connection_dispatch) \
  X(dbus_connection_get_is_connected) \
  X(dbus_connection_list_registered) \
  X(dbus_connection_open_private) \
  X(dbus_connection_remove_filter) \
  X(dbus_connection_send) \
  X(dbus_connection_send_with_reply) \
  X(dbus_connection_set_dispatch_status_function) \
  X(dbus_connection_set_exit_on_disconnect) \
  X(dbus_connection_set_timeout_functions) \
  X(dbus_connection_set_watch_functions) \
  X(dbus_connection_try_register_object_path) \
  X(dbus_connection_unref) \
  X(dbus_connection_unregister_object_path) \
  X(dbus_error_free) \
  X(dbus_error_init) \
  X(dbus_error_is_set) \
  X(dbus_free) \
  X(dbus_free_string_array) \
  X(dbus_message_contains_unix_fds) \
  X(dbus_message_get_error_name) \
  X(dbus_message_get_interface) \
  X(dbus_message_get_member) \
  X(dbus_message_get_no_reply) \
  X(dbus_message_get_path) \
  X(dbus_message_get_sender) \
  X(dbus_message_get_type) \
  X(dbus_message_has_path) \
  X(dbus_message_is_signal) \
  X(dbus_message_iter_abandon_container) \
  X(dbus_message_iter_append_basic) \
  X(dbus_message_iter_append_fixed_array) \
  X(dbus_message_iter_close_container) \
  X(dbus_message_iter_get_arg_type) \
  X(dbus_message_iter_get_basic) \
  X(dbus_message_iter_get_element_type) \
  X(dbus_message_iter_get_fixed_array) \
  X(dbus_message_iter_get_signature) \
  X(dbus_message_iter_init) \
  X(dbus_message_iter_init_append) \
  X(dbus_message_iter_next) \
  X(dbus_message_iter_open_container) \
  X(dbus_message_iter_recurse) \
  X(dbus_message_new_error) \
  X(dbus_message_new_method_call) \
  X(dbus_message_new_method_return) \
  X(dbus_message_new_signal) \
  X(dbus_message_ref) \
  X(dbus_message_set_destination) \
  X(dbus_message_set_no_reply) \
  X(dbus_message_unref) \
  X(dbus_pending_call_cancel) \
  X(dbus_pending_call_get_completed) \
  X(dbus_pending_call_set_notify) \
  X(dbus_pending_call_steal_reply) \
  X(dbus_pending_call_unref) \
  X(dbus_signature_validate) \
  X(dbus_signature_validate_single) \
  X(dbus_threads_init_default) \
  X(dbus_timeout_get_data) \
  X(dbus_timeout_get_enabled) \
  X(dbus_timeout_get_interval) \
  X(dbus_timeout_handle) \
  X(dbus_timeout_set_data) \
  X(dbus_validate_bus_name) \
  X(dbus_validate_error_name) \
  X(dbus_validate_interface) \
  X(dbus_validate_member) \
  X(dbus_validate_path) \
  X(dbus_validate_utf8) \
  X(dbus_watch_get_data) \
  X(dbus_watch_get_enabled) \
  X(dbus_watch_get_flags) \
  X(dbus_watch_get_unix_fd) \
  X(dbus_watch_handle) \
  X(dbus_watch_set_data) \
  /* end */

#define CLL_WEBSOCKETS_SYMBOLS(X) \
  X(lws_add_http_header_by_name) \
  X(lws_add_http_header_by_token) \
  X(lws_add_http_header_content_length) \
  X(lws_add_http_header_status) \
  X(lws_adopt_descriptor_vhost) \
  X(lws_adopt_socket_vhost) \
  X(lws_callback_http_dummy) \
  X(lws_callback_on_writable) \
  X(lws_cancel_service) \
  X(lws_close_reason) \
  X(lws_context_destroy) \
  X(lws_context_user) \
  X(lws_create_context) \
  X(lws_finalize_http_header) \
  X(lws_frame_is_binary) \
  X(lws_get_context) \
  X(lws_get_opaque_user_data) \
  X(lws_get_vhost_by_name) \
  X(lws_hdr_copy) \
  X(lws_hdr_custom_copy) \
  X(lws_hdr_custom_length) \
  X(lws_hdr_total_length) \
  X(lws_http_transaction_completed) \
  X(lws_is_final_fragment) \
  X(lws_is_first_fragment) \
  X(lws_remaining_packet_payload) \
  X(lws_rx_flow_control) \
  X(lws_send_pipe_choked) \
  X(lws_service) \
  X(lws_set_log_level) \
  X(lws_set_opaque_user_data) \
  X(lws_set_timeout) \
  X(lws_set_timer_usecs) \
  X(lws_token_to_string) \
  X(lws_write) \
  /* end */

#define CLL_MOSQUITTO_SYMBOLS(X) \
  X(mosquitto_connect) \
  X(mosquitto_connect_callback_set) \
  X(mosquitto_destroy) \
  X(mosquitto_disconnect) \
  X(mosquitto_disconnect_callback_set) \
  X(mosquitto_int_option) \
  X(mosquitto_lib_init) \
  X(mosquitto_log_callback_set) \
  X(mosquitto_loop) \
  X(mosquitto_message_callback_set) \
  X(mosquitto_new) \
  X(mosquitto_publish) \
  X(mosquitto_publish_callback_set) \
  X(mosquitto_reconnect) \
  X(mosquitto_strerror) \
  X(mosquitto_subscribe) \
  X(mosquitto_threaded_set) \
  X(mosquitto_tls_insecure_set) \
  X(mosquitto_tls_opts_set) \
  X(mosquitto_tls_set) \
  X(mosquitto_user_data_set) \
  X(mosquitto_username_pw_set) \
  X(mosquitto_will_set) \
  /* end */

#define CLL_BLUETOOTH_SYMBOLS(X) \
  X(hci_close_dev) \
  X(hci_devba) \
  X(hci_inquiry) \
  X(hci_open_dev) \
  X(hci_read_remote_name) \
  X(sdp_close) \
  X(sdp_connect) \
  X(sdp_get_access_protos) \
  X(sdp_get_proto_port) \
  X(sdp_list_append) \
  X(sdp_list_free) \
  X(sdp_record_free) \
  X(sdp_service_search_attr_req) \
  X(sdp_service_search_req) \
  X(sdp_uuid128_create) \
  X(sdp_uuid16_create) \
  /* end */

#endif
