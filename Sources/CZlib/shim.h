// zlib (Debian's zlib1g-dev): crc32 for the MQTT spool's record checksums (docs/fleet.md §6).
#include <zlib.h>
