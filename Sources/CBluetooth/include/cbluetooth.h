// A fixed-signature C layer over libbluetooth (BlueZ) for Swift. Swift cannot import HCIGETDEVLIST
// (an _IOR macro), BDADDR_ANY (a compound literal) or htobs() (docs/swift-on-linux.md), and sockaddr_rc and
// sdp_list_t are awkward to build from Swift, so each call the Bluetooth target needs is one function
// here taking plain bytes. Every address is 6 bytes in bdaddr_t order (little-endian, last byte of the
// printed form first); the Swift BluetoothAddress type is the one place that reverses them.
// Functions return -1 and leave errno set on failure, like the system calls they wrap.
#ifndef CBLUETOOTH_H
#define CBLUETOOTH_H

#include <stdint.h>

/// socket(AF_BLUETOOTH, SOCK_STREAM | SOCK_CLOEXEC, BTPROTO_RFCOMM).
int cbt_rfcomm_socket(void);
/// connect(2) with a sockaddr_rc for `address_le` and `channel` (1-30). The caller makes `fd`
/// non-blocking first when it wants a timeout.
int cbt_rfcomm_connect(int fd, const uint8_t address_le[6], uint8_t channel);
/// bind(2) to the local adapter `local_le` (all zeros = BDADDR_ANY, any adapter) and `channel` (0 for
/// a client socket: the adapter only).
int cbt_rfcomm_bind(int fd, const uint8_t local_le[6], uint8_t channel);
/// accept4(2) with SOCK_CLOEXEC; fills the peer's address and channel.
int cbt_rfcomm_accept(int fd, uint8_t peer_le[6], uint8_t *channel);

/// socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI), closed at once: 0 when the kernel has
/// Bluetooth sockets, -1 with errno (EAFNOSUPPORT without the bluetooth module, EPERM/EACCES when
/// refused). What `capture doctor` checks; it opens no adapter.
int cbt_hci_socket_probe(void);

/// HCIGETDEVLIST on a raw HCI socket: up to `max` device ids (at most HCI_MAX_DEV, 16); `is_up` gets
/// HCI_UP of each. Both arrays hold `max` entries. Returns the number of devices; -1 with errno EINVAL
/// when `max` <= 0 or an array is NULL.
int cbt_hci_device_list(uint16_t *ids, uint8_t *is_up, int max);
/// The BD address of HCI device `dev_id` (hci_devba).
int cbt_hci_device_address(int dev_id, uint8_t address_le[6]);
/// hci_inquiry for `length` × 1.28 s, flushing the cache, at most `max` answers: addresses (6 bytes
/// each) and 24-bit classes of device. Returns the number of answers; -1 with errno EINVAL when `max`
/// or `length` <= 0 or an array is NULL.
int cbt_hci_inquiry(int dev_id, int length, int max, uint8_t *addresses_le, uint32_t *classes);
/// hci_read_remote_name on device `dev_id`: a NUL-terminated name in `name` (`size` bytes); -1 with
/// errno EINVAL when `size` <= 0 or a pointer is NULL.
int cbt_hci_remote_name(int dev_id, const uint8_t address_le[6], char *name, int size, int timeout_ms);
/// SDP search (from local adapter `local_le`, zeros = any) of `address_le` for the Serial Port service class (0x1101): its RFCOMM channel (1-30),
/// or -1 with errno ENOENT when the device has no such service, or -1 with the connection's errno.
int cbt_sdp_serial_port_channel(const uint8_t local_le[6], const uint8_t address_le[6]);

/// SDP service search (from local adapter `local_le`, zeros = any) of `address_le` for the 128-bit UUID `uuid_be` (16 bytes, big-endian as
/// written): 1 when the device has a record with it, 0 when not, -1 with errno on failure.
int cbt_sdp_has_service_class(
    const uint8_t local_le[6], const uint8_t address_le[6], const uint8_t uuid_be[16]);

#endif
