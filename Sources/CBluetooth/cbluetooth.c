#define _GNU_SOURCE  // accept4(2)
#include "cbluetooth.h"

#include "clazylibraries.h"

#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/rfcomm.h>
#include <bluetooth/sdp.h>
#include <bluetooth/sdp_lib.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static void copy_address(bdaddr_t *out, const uint8_t bytes[6]) { memcpy(out->b, bytes, 6); }

// libbluetooth is loaded by the first call that needs it, not at start-up (clazylibraries.h). The
// RFCOMM socket calls are plain sockets and do not; the HCI and SDP calls below do. 0 when it is
// loaded; else -1 with errno ELIBACC ("Can not access a needed shared library"), which the Swift side
// reports as it reports any errno.
static int need_library(void) {
  if (cll_load(CLL_BLUETOOTH) == 0) return 0;
  errno = ELIBACC;
  return -1;
}

int cbt_rfcomm_socket(void) { return socket(AF_BLUETOOTH, SOCK_STREAM | SOCK_CLOEXEC, BTPROTO_RFCOMM); }

int cbt_rfcomm_connect(int fd, const uint8_t address_le[6], uint8_t channel) {
  struct sockaddr_rc addr;
  memset(&addr, 0, sizeof addr);
  addr.rc_family = AF_BLUETOOTH;
  copy_address(&addr.rc_bdaddr, address_le);
  addr.rc_channel = channel;
  return connect(fd, (struct sockaddr *)&addr, sizeof addr);
}

int cbt_rfcomm_bind(int fd, const uint8_t local_le[6], uint8_t channel) {
  struct sockaddr_rc addr;
  memset(&addr, 0, sizeof addr);
  addr.rc_family = AF_BLUETOOTH;
  copy_address(&addr.rc_bdaddr, local_le);  // all zeros is BDADDR_ANY
  addr.rc_channel = channel;
  return bind(fd, (struct sockaddr *)&addr, sizeof addr);
}

int cbt_rfcomm_accept(int fd, uint8_t peer_le[6], uint8_t *channel) {
  struct sockaddr_rc addr;
  socklen_t length = sizeof addr;
  memset(&addr, 0, sizeof addr);
  int client = accept4(fd, (struct sockaddr *)&addr, &length, SOCK_CLOEXEC);
  if (client >= 0) {
    memcpy(peer_le, addr.rc_bdaddr.b, 6);
    *channel = addr.rc_channel;
  }
  return client;
}

int cbt_hci_socket_probe(void) {
  int sock = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
  if (sock < 0) return -1;
  close(sock);
  return 0;
}

int cbt_hci_device_list(uint16_t *ids, uint8_t *is_up, int max) {
  // The caller's arrays hold `max` entries: never write more. No room at all is the caller's error,
  // checked before any socket so it is reported the same on a kernel without Bluetooth.
  if (ids == NULL || is_up == NULL || max <= 0) {
    errno = EINVAL;
    return -1;
  }
  if (need_library() != 0) return -1;
  if (max > HCI_MAX_DEV) max = HCI_MAX_DEV;
  int sock = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
  if (sock < 0) return -1;
  struct hci_dev_list_req *list = calloc(1, sizeof(*list) + (size_t)max * sizeof(struct hci_dev_req));
  if (!list) {
    close(sock);
    errno = ENOMEM;
    return -1;
  }
  list->dev_num = (uint16_t)max;
  if (ioctl(sock, HCIGETDEVLIST, (void *)list) < 0) {
    int saved = errno;
    free(list);
    close(sock);
    errno = saved;
    return -1;
  }
  // HCIGETDEVLIST writes at most dev_num entries and sets dev_num to how many it wrote; clamped anyway.
  int count = list->dev_num < max ? list->dev_num : max;
  for (int i = 0; i < count; i++) {
    ids[i] = list->dev_req[i].dev_id;
    is_up[i] = hci_test_bit(HCI_UP, &list->dev_req[i].dev_opt) ? 1 : 0;
  }
  free(list);
  close(sock);
  return count;
}

int cbt_hci_device_address(int dev_id, uint8_t address_le[6]) {
  if (need_library() != 0) return -1;
  bdaddr_t addr;
  if (hci_devba(dev_id, &addr) < 0) return -1;
  memcpy(address_le, addr.b, 6);
  return 0;
}

int cbt_hci_inquiry(int dev_id, int length, int max, uint8_t *addresses_le, uint32_t *classes) {
  // max 0 would mean "unlimited" to hci_inquiry (up to 255 answers) for arrays that hold none.
  if (addresses_le == NULL || classes == NULL || max <= 0 || length <= 0) {
    errno = EINVAL;
    return -1;
  }
  if (need_library() != 0) return -1;
  inquiry_info *info = NULL;
  int count = hci_inquiry(dev_id, length, max, NULL, &info, IREQ_CACHE_FLUSH);
  if (count < 0) return -1;
  for (int i = 0; i < count && i < max; i++) {
    memcpy(addresses_le + 6 * i, info[i].bdaddr.b, 6);
    classes[i] = (uint32_t)info[i].dev_class[0] | ((uint32_t)info[i].dev_class[1] << 8) |
                 ((uint32_t)info[i].dev_class[2] << 16);
  }
  free(info);
  return count < max ? count : max;
}

int cbt_hci_remote_name(int dev_id, const uint8_t address_le[6], char *name, int size, int timeout_ms) {
  // size - 1 bytes of name and the NUL: size <= 0 would make memset's length huge.
  if (name == NULL || address_le == NULL || size <= 0) {
    errno = EINVAL;
    return -1;
  }
  if (need_library() != 0) return -1;
  int dd = hci_open_dev(dev_id);
  if (dd < 0) return -1;
  bdaddr_t addr;
  copy_address(&addr, address_le);
  memset(name, 0, (size_t)size);
  int result = hci_read_remote_name(dd, &addr, size - 1, name, timeout_ms);
  int saved = errno;
  hci_close_dev(dd);
  errno = saved;
  return result < 0 ? -1 : 0;
}

/// An SDP session with the device at `address_le` from local adapter `local_le` (zeros: any adapter,
/// the kernel picks); NULL with errno set.
static sdp_session_t *open_sdp_session(const uint8_t local_le[6], const uint8_t address_le[6]) {
  if (need_library() != 0) return NULL;
  bdaddr_t local;
  copy_address(&local, local_le);
  bdaddr_t target;
  copy_address(&target, address_le);
  return sdp_connect(&local, &target, SDP_RETRY_IF_BUSY);
}

int cbt_sdp_serial_port_channel(const uint8_t local_le[6], const uint8_t address_le[6]) {
  sdp_session_t *session = open_sdp_session(local_le, address_le);
  if (!session) return -1;
  uuid_t serial;
  sdp_uuid16_create(&serial, SERIAL_PORT_SVCLASS_ID);
  sdp_list_t *search = sdp_list_append(NULL, &serial);
  uint32_t range = 0x0000ffff;
  sdp_list_t *attributes = sdp_list_append(NULL, &range);
  sdp_list_t *records = NULL;
  int status = sdp_service_search_attr_req(session, search, SDP_ATTR_REQ_RANGE, attributes, &records);
  int saved = errno;
  sdp_list_free(search, NULL);
  sdp_list_free(attributes, NULL);
  int channel = -1;
  if (status == 0) {
    saved = ENOENT;
    for (sdp_list_t *r = records; r && channel < 0; r = r->next) {
      sdp_record_t *record = r->data;
      sdp_list_t *protocols = NULL;
      if (sdp_get_access_protos(record, &protocols) == 0) {
        int port = sdp_get_proto_port(protocols, RFCOMM_UUID);
        if (port > 0) channel = port;
        for (sdp_list_t *p = protocols; p; p = p->next) sdp_list_free(p->data, NULL);
        sdp_list_free(protocols, NULL);
      }
    }
    for (sdp_list_t *r = records; r;) {
      sdp_list_t *next = r->next;
      sdp_record_free(r->data);
      free(r);
      r = next;
    }
  } else if (saved == 0) {
    saved = EIO;
  }
  sdp_close(session);
  if (channel < 0) errno = saved;
  return channel;
}

int cbt_sdp_has_service_class(
    const uint8_t local_le[6], const uint8_t address_le[6], const uint8_t uuid_be[16]) {
  sdp_session_t *session = open_sdp_session(local_le, address_le);
  if (!session) return -1;
  uuid_t wanted;
  sdp_uuid128_create(&wanted, uuid_be);
  sdp_list_t *search = sdp_list_append(NULL, &wanted);
  sdp_list_t *handles = NULL;
  // SDP_ServiceSearchRequest: the record handles whose ServiceClassIDList (or any UUID attribute)
  // holds the UUID (Core spec Vol 3 Part B 4.5); one handle is enough to answer.
  int status = sdp_service_search_req(session, search, 1, &handles);
  int saved = errno;
  sdp_list_free(search, NULL);
  int found = handles != NULL;
  sdp_list_free(handles, free);
  sdp_close(session);
  if (status != 0) {
    errno = saved ? saved : EIO;
    return -1;
  }
  return found;
}
