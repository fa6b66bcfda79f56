# -*- coding: utf-8 -*-
'''python3-dbusmock template: bluetoothd 5.66 as a GATT client sees it, plus simulated
Socket Mobile BLE readers (D600, S550, S370, S320, S721, a generic device).

Load it with `python3 -m dbusmock --system --template Tests/Rigs/bluez566.py [-p JSON]`
(Tests/Rigs/rig.py does that on a private bus). Everything a client sees lives under the
bus name org.bluez: an ObjectManager at `/`, `org.bluez.AgentManager1` on `/org/bluez`,
adapters at `/org/bluez/hciN`, devices at `/org/bluez/hciN/dev_AA_BB_CC_DD_EE_FF` and their
GATT objects at `<device>/serviceXXXX/charYYYY/descZZZZ` (hex attribute handles).

Tests drive the simulated world through `org.bluez.Mock` on `/org/bluez` (see the Manager
class below; README.md lists the same API).

Template parameters (JSON object given with -p; all optional):
  StateFile              path of a JSON file where the adapters, the simulated devices and
                         bluetoothd's "storage" (pairing, trust) are kept across a restart
                         of the mock (like /var/lib/bluetooth); restored when the mock starts
  TemporaryTimeout       seconds before a discovered, never connected, untrusted device is
                         removed once discovery stops (bluetoothd: 30)
  ChunkSize              bytes per notification for scan data / Direct events (MTU - 3; 20)
  ConnectDelay           seconds between Connect and the link coming up (0.01)
  ConnectFailDelay       seconds before Connect to an absent device fails (0.1)
  PairDelay              seconds a Pair takes (0.02)
  FoundDelay             seconds between discovery (re)starting and devices being found (0.02)
  ResolvedBeforeServices emit ServicesResolved=true before the GATT InterfacesAdded (false)
  ReplyAfterResolved     reply to Connect after the whole sequence instead of first (false)
  ImplicitPairing        an unpaired bonded-variant D600 pairs on first protected access, as
                         BlueZ does when the device answers "insufficient authentication"
                         (true); false: that access fails with NotPermitted "Not paired"
  BatteryPlugin          bluetoothd's battery plugin is loaded (Debian default, true): 0x180F
                         is claimed (not exported as GATT) and Battery1 is exported instead;
                         false (`bluetoothd -P battery`): 0x180F is a GATT service, no Battery1
'''

import json
import os
import sys
import time
from xml.etree import ElementTree

import dbus
import dbus.lowlevel
import dbus.service
from gi.repository import GLib

from dbusmock import mockobject
from dbusmock.mockobject import DBusMockObject

BUS_NAME = 'org.bluez'
MAIN_OBJ = '/'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

PROPS = 'org.freedesktop.DBus.Properties'
OM = 'org.freedesktop.DBus.ObjectManager'
MOCK = 'org.bluez.Mock'
AGENT_MANAGER = 'org.bluez.AgentManager1'
ADAPTER = 'org.bluez.Adapter1'
DEVICE = 'org.bluez.Device1'
BATTERY = 'org.bluez.Battery1'
SERVICE = 'org.bluez.GattService1'
CHAR = 'org.bluez.GattCharacteristic1'
DESC = 'org.bluez.GattDescriptor1'

# Adapter1.PowerState (BlueZ doc/adapter-api.txt): "on", "off", the two transitions, and
# "off-blocked" (rfkill blocks the controller). Powered is true only in "on". Debian 12's bluetoothd
# 5.66, as the VM tier runs it (no --experimental), exports no PowerState: clients also read sysfs.
POWER_STATES = ('on', 'off', 'off-enabling', 'on-disabling', 'off-blocked')

AGENT_CAPABILITIES = ('DisplayOnly', 'DisplayYesNo', 'KeyboardOnly', 'NoInputNoOutput', 'KeyboardDisplay')
DISCOVERY_FILTERS = ('UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern')

DEFAULTS = {
    'StateFile': '',
    'TemporaryTimeout': 30.0,
    'ChunkSize': 20,
    'ConnectDelay': 0.01,
    'ConnectFailDelay': 0.1,
    'PairDelay': 0.02,
    'FoundDelay': 0.02,
    'ResolvedBeforeServices': False,
    'ReplyAfterResolved': False,
    'ImplicitPairing': True,
    'BatteryPlugin': True,
}


# ---------------------------------------------------------------------------------------------
# Errors: the names and messages bluetoothd (src/error.c, gatt-client.c, device.c) sends
# ---------------------------------------------------------------------------------------------

def bluez_error(name, message):
    return dbus.exceptions.DBusException(message, name='org.bluez.Error.' + name)


def invalid_args(message='Invalid arguments in method call'):
    return bluez_error('InvalidArguments', message)


def failed(message):
    return bluez_error('Failed', message)


def in_progress():
    return bluez_error('InProgress', 'In Progress')


def busy():
    return bluez_error('InProgress', 'Operation already in progress')


def not_supported():
    return bluez_error('NotSupported', 'Operation is not supported')


def does_not_exist():
    return bluez_error('DoesNotExist', 'Does Not Exist')


def not_ready():
    return bluez_error('NotReady', 'Resource Not Ready')


def mock_error(message):
    return dbus.exceptions.DBusException(message, name='org.bluez.Mock.Error')


def dbus_error(name, message):
    return dbus.exceptions.DBusException(message, name='org.freedesktop.DBus.Error.' + name)


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

W = None  # the World, created by load()


def uuid128(u):
    '''"180f" / "0x180F" / full string → lowercase 128-bit string; ValueError if malformed.'''
    s = str(u).strip().lower()
    if s.startswith('0x'):
        s = s[2:]
    if len(s) == 4:
        int(s, 16)
        return '0000%s-0000-1000-8000-00805f9b34fb' % s
    if len(s) == 8:
        int(s, 16)
        return '%s-0000-1000-8000-00805f9b34fb' % s
    parts = s.split('-')
    if len(s) != 36 or [len(p) for p in parts] != [8, 4, 4, 4, 12]:
        raise ValueError('bad UUID ' + u)
    int(s.replace('-', ''), 16)
    return s


def swap_last_two_bytes(u):
    '''The D600 "no pairing" variant: the same UUID with its last two bytes swapped.'''
    return u[:-4] + u[-2:] + u[-4:-2]


def later(seconds, fn, *args):
    '''Run fn(*args) once from the main loop after `seconds` (0: when idle).'''
    def run():
        try:
            fn(*args)
        except Exception as e:  # keep the mock alive; the log says what broke
            log('error in timer %s: %r' % (getattr(fn, '__name__', fn), e))
        return False
    if seconds <= 0:
        return GLib.idle_add(run)
    return GLib.timeout_add(max(1, int(seconds * 1000)), run)


def cancel(source_id):
    if source_id:
        try:
            GLib.source_remove(source_id)
        except Exception:
            pass
    return None


def log(msg):
    try:
        os.write(sys.stdout.fileno(), ('%.3f bluez566: %s\n' % (time.time(), msg)).encode('utf-8', 'replace'))
    except OSError:
        pass


def emit(path, iface, member, signature, args):
    msg = dbus.lowlevel.SignalMessage(path, iface, member)
    msg.append(*args, signature=signature)
    W.bus.send_message(msg)


def properties_changed(path, iface, changed, invalidated=()):
    emit(path, PROPS, 'PropertiesChanged', 'sa{sv}as',
         [iface, dbus.Dictionary(changed, signature='sv'), dbus.Array(list(invalidated), signature='s')])


def interfaces_added(path, interfaces):
    emit('/', OM, 'InterfacesAdded', 'oa{sa{sv}}', [dbus.ObjectPath(path), interfaces])


def interfaces_removed(path, names):
    emit('/', OM, 'InterfacesRemoved', 'oas', [dbus.ObjectPath(path), dbus.Array(list(names), signature='s')])


def to_bytes(value):
    return bytes(bytearray(value))


def hex_bytes(s):
    s = ''.join(ch for ch in str(s) if ch not in ' :-')
    try:
        return bytes.fromhex(s)
    except ValueError as e:
        raise mock_error('not a hex string: %r' % s) from e


def chunks(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)] or [b'']


# ---------------------------------------------------------------------------------------------
# Device profiles: GATT tables (handles are assigned like an ATT database: service declaration,
# then per characteristic a declaration handle, a value handle and its descriptors).
# ---------------------------------------------------------------------------------------------

CCCD = uuid128('2902')

D600_UUIDS = {
    'scanner_service': '6cb501b7-96f6-4eef-acb1-d7535f153cf0',
    'scan_data': 'ce3e81b8-d871-4613-ba78-5ffc0b1520a6',
    'scan_control': '833a2364-bca0-4647-8113-478e1fc449ba',
    'ccid_status': '7c334bc2-1812-4c7e-a81d-591f92933c37',
    'ccid_pc_to_rdr': '91ace9fd-edd6-40b1-ba77-050a78cf9bc0',
    'ccid_rdr_to_pc': 'b4ca2d75-b855-4c1a-bf40-4a72ae46bd5a',
    'config_service': '7a4385c9-f7c7-4e22-9afd-16d68fc588ca',
    'config_io': '1254fc72-336e-4bb2-a0a8-71c7d28d73ce',
    'dfu_service': 'd7b82f8e-7d95-4143-8d97-b57fc21b025b',
    'dfu_to_rdr': 'ac38bccd-d1d6-4df6-ae84-ae6a951f9971',
    'dfu_to_pc': '9110bc7e-124b-4d93-b29b-bc7bf74ae964',
}

DIRECT_UUIDS = {
    'direct_service': '7a4385c9-f7c7-4e22-9afd-16d68fc588ca',
    'direct_command': '18227ca8-9574-4d92-850c-b55f84c6b577',
    'direct_response': '94382d3f-fd0f-4ee4-998c-046a6cdc67d6',
    'direct_events': '23d33996-e604-4f8b-baf7-547944030552',
}

CCID_CHARS = {
    'ccid_pc_to_rdr': '281ebed4-86c4-4253-84f1-57fb9ab2f72c',
    'ccid_rdr_to_pc': '811dc7a6-a573-4e15-89cc-7efacae04e3c',
    'ccid_status': 'eab75cab-c7dc-4db9-874c-4ad8ee0f180f',
}

S370_SERVICE = 'f91c914f-367c-4108-ac3e-3d3030373353'
S320_SERVICE = 'f91c914f-367c-4108-ac3e-3d3030323353'

MODELS = {'d600': 'D600', 'd600-nopair': 'D600', 's550': 'S550', 's370': 'S370', 's320': 'S320',
          's721': 'S721', 'generic': 'Generic', 'bredr': 'Classic'}

# The SDP service class Windows recognises Bluetooth barcode scanners in SPP mode by, which Socket
# Mobile Classic scanners list (docs/device-protocols.md §5.3).
SPP_SCANNER_CLASS = 'a1220169-e854-473e-9cb5-873acbdf1f13'


def C(uuid, flags, role=None, value=b''):
    return {'uuid': uuid128(uuid), 'flags': list(flags), 'role': role, 'value': bytes(value)}


def S(uuid, chars, start=None, protected=False):
    return {'uuid': uuid128(uuid), 'chars': chars, 'start': start, 'protected': protected}


def gap_service():
    return S('1800', [C('2a00', ['read'], 'gap_name'), C('2a01', ['read'], value=b'\x00\x00')])


def device_info_service():
    chars = [C('2a29', ['read'], 'info:Manufacturer'), C('2a24', ['read'], 'info:Model'),
             C('2a25', ['read'], 'info:Serial'), C('2a27', ['read'], 'info:Hardware'),
             C('2a26', ['read'], 'info:Firmware'), C('2a28', ['read'], 'info:Software'),
             C('2a50', ['read'], 'pnp_id')]
    return S('180a', chars)


def battery_service(power_state=False):
    chars = [C('2a19', ['read', 'notify'], 'battery_level')]
    if power_state:
        chars.append(C('2a1a', ['read'], value=b'\xbb'))
    return S('180f', chars)


def profile_table(profile):
    '''(advertised service UUIDs, GATT services) of a device kind.'''
    if profile in ('d600', 'd600-nopair'):
        u = dict(D600_UUIDS)
        if profile == 'd600-nopair':
            u = {k: swap_last_two_bytes(v) for k, v in u.items()}
        protected = profile == 'd600'
        services = [
            gap_service(),
            S('1801', [C('2a05', ['indicate'])]),
            device_info_service(),
            battery_service(),
            S(u['scanner_service'], [
                C(u['scan_data'], ['notify', 'indicate'], 'scan_data'),
                C(u['scan_control'], ['write'], 'scan_control'),
                C(u['ccid_status'], ['read', 'notify'], 'ccid_status', b'\x01\x00'),
                C(u['ccid_pc_to_rdr'], ['write'], 'ccid_pc_to_rdr'),
                C(u['ccid_rdr_to_pc'], ['read', 'notify', 'indicate'], 'ccid_rdr_to_pc'),
            ], protected=protected),
            S(u['config_service'], [C(u['config_io'], ['write', 'notify'], 'config_io')], protected=protected),
            S(u['dfu_service'], [
                C(u['dfu_to_rdr'], ['write-without-response', 'write'], 'dfu_to_rdr'),
                C(u['dfu_to_pc'], ['notify'], 'dfu_to_pc'),
            ]),
        ]
        return [u['scanner_service']], services
    if profile == 's550':
        services = [
            S('1801', [C('2a05', ['indicate']), C('2b2a', ['read'], value=bytes(16)),
                       C('2b29', ['read', 'write'], value=b'\x00')]),
            gap_service(),
            device_info_service(),
            S('1804', [C('2a07', ['read'], value=b'\x00')]),
            battery_service(power_state=True),
            S(DIRECT_UUIDS['direct_service'], [
                C(DIRECT_UUIDS['direct_command'], ['write'], 'direct_command'),
                C(DIRECT_UUIDS['direct_response'], ['read', 'indicate'], 'direct_response'),
                C(DIRECT_UUIDS['direct_events'], ['indicate'], 'direct_events'),
            ], start=0x0053),
        ]
        return [DIRECT_UUIDS['direct_service']], services
    if profile in ('s370', 's320'):
        service = S370_SERVICE if profile == 's370' else S320_SERVICE
        services = [
            gap_service(),
            S('1801', [C('2a05', ['indicate'])]),
            device_info_service(),
            battery_service(),
            S(service, [
                C(CCID_CHARS['ccid_pc_to_rdr'], ['write'], 'ccid_pc_to_rdr'),
                C(CCID_CHARS['ccid_rdr_to_pc'], ['indicate'], 'ccid_rdr_to_pc'),
                C(CCID_CHARS['ccid_status'], ['read', 'indicate'], 'ccid_status', b'\x01\x00'),
            ]),
        ]
        return [service], services
    if profile == 's721':
        return [], [gap_service(), S('1801', [C('2a05', ['indicate'])]), device_info_service(), battery_service()]
    if profile == 'generic':
        return [uuid128('180f')], [gap_service(), S('1801', [C('2a05', ['indicate'])]), device_info_service(),
                                   battery_service()]
    if profile == 'bredr':
        # A BR/EDR device: no GATT; its service UUIDs (EIR and SDP) are given by AddClassicDevice.
        return [], []
    raise mock_error('unknown profile %r (one of %s)' % (profile, ', '.join(sorted(MODELS))))


def layout(services):
    '''Assign attribute handles: [(service, start, [(char, decl, value, [desc handles])])].'''
    out = []
    h = 1
    for svc in services:
        if svc['start']:
            h = max(h, svc['start'])
        start = h
        h += 1
        chars = []
        for ch in svc['chars']:
            decl, val = h, h + 1
            h += 2
            descs = []
            if 'notify' in ch['flags'] or 'indicate' in ch['flags']:
                descs.append((CCCD, h))
                h += 1
            chars.append((ch, decl, val, descs))
        out.append((svc, start, chars))
    return out


# ---------------------------------------------------------------------------------------------
# D-Bus objects
# ---------------------------------------------------------------------------------------------

class Obj(DBusMockObject):
    '''A mock object with gdbus-like org.freedesktop.DBus.Properties behaviour.'''

    writable = {}  # (interface, property) -> signature

    def __init__(self, path, interface, props):
        DBusMockObject.__init__(self, W.bus_name, path, interface, props, None, False)
        self.logfile = W.main.logfile
        self.is_logfile_owner = False
        self.object_manager = W.main
        mockobject.objects[path] = self

    @dbus.service.method(dbus.INTROSPECTABLE_IFACE, in_signature='', out_signature='s',
                         path_keyword='object_path', connection_keyword='connection')
    def Introspect(self, object_path, connection):
        '''dbusmock's introspection without its org.freedesktop.DBus.Mock interface, and with
        read-only properties marked read-only.'''
        tree = ElementTree.fromstring(DBusMockObject.Introspect(self, object_path, connection))
        for iface in tree.findall('interface'):
            if iface.get('name') == mockobject.MOCK_IFACE:
                tree.remove(iface)
                continue
            for prop in iface.findall('property'):
                writable = (iface.get('name'), prop.get('name')) in self.writable
                prop.set('access', 'readwrite' if writable else 'read')
        return ElementTree.tostring(tree, encoding='unicode', method='xml')

    def drop(self):
        try:
            self.remove_from_connection()
        except Exception:
            pass
        mockobject.objects.pop(self.path, None)

    @dbus.service.method(PROPS, in_signature='ss', out_signature='v')
    def Get(self, interface_name, property_name, *_, **__):
        iface = self.props.get(interface_name)
        if iface is None:
            raise dbus_error('InvalidArgs', "No such interface '%s'" % interface_name)
        if property_name not in iface:
            raise dbus_error('InvalidArgs', "No such property '%s'" % property_name)
        return iface[property_name]

    @dbus.service.method(PROPS, in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface_name, *_, **__):
        iface = self.props.get(interface_name)
        if iface is None:
            raise dbus_error('InvalidArgs', "No such interface '%s'" % interface_name)
        return dbus.Dictionary(iface, signature='sv')

    @dbus.service.method(PROPS, in_signature='ssv', out_signature='')
    def Set(self, interface_name, property_name, value, *_, **__):
        iface = self.props.get(interface_name)
        if iface is None:
            raise dbus_error('InvalidArgs', "No such interface '%s'" % interface_name)
        if property_name not in iface:
            raise dbus_error('InvalidArgs', "No such property '%s'" % property_name)
        sig = self.writable.get((interface_name, property_name))
        if sig is None:
            raise dbus_error('PropertyReadOnly', "Property '%s' is not writable" % property_name)
        types = {'b': dbus.Boolean, 's': dbus.String, 'u': dbus.UInt32}
        if not isinstance(value, types[sig]):
            raise dbus_error('InvalidSignature', "Invalid signature for '%s'" % property_name)
        self.set_property(interface_name, property_name, value)

    def set_property(self, interface_name, name, value):
        raise dbus_error('PropertyReadOnly', "Property '%s' is not writable" % name)

    def update(self, interface_name, **changed):
        '''Store and announce changed properties (one PropertiesChanged).'''
        self.props[interface_name].update(changed)
        properties_changed(self.path, interface_name, changed)


class Manager(Obj):
    '''/org/bluez: AgentManager1 and the test control API org.bluez.Mock.'''

    def __init__(self):
        Obj.__init__(self, '/org/bluez', AGENT_MANAGER, {})

    # --- AgentManager1 -----------------------------------------------------------------------

    @dbus.service.method(AGENT_MANAGER, in_signature='os', out_signature='', sender_keyword='sender')
    def RegisterAgent(self, agent, capability, sender=None):
        '''One agent per client; capability one of the BlueZ names ("" = KeyboardDisplay).'''
        if capability == '':
            capability = 'KeyboardDisplay'
        if capability not in AGENT_CAPABILITIES:
            raise invalid_args()
        if sender in W.agents:
            raise bluez_error('AlreadyExists', 'Already Exists')
        W.agents[sender] = (str(agent), str(capability))
        log('agent %s %s registered by %s' % (agent, capability, sender))

    @dbus.service.method(AGENT_MANAGER, in_signature='o', out_signature='', sender_keyword='sender')
    def UnregisterAgent(self, agent, sender=None):
        '''Remove the caller's agent (DoesNotExist if it has none at that path).'''
        mine = W.agents.get(sender)
        if not mine or mine[0] != str(agent):
            raise does_not_exist()
        del W.agents[sender]
        if W.default_agent == sender:
            W.default_agent = None

    @dbus.service.method(AGENT_MANAGER, in_signature='o', out_signature='', sender_keyword='sender')
    def RequestDefaultAgent(self, agent, sender=None):
        '''Make the caller's agent the default one (DoesNotExist if it has none at that path).'''
        mine = W.agents.get(sender)
        if not mine or mine[0] != str(agent):
            raise does_not_exist()
        W.default_agent = sender

    # --- org.bluez.Mock: the simulated world -------------------------------------------------

    @dbus.service.method(MOCK, in_signature='ss', out_signature='o')
    def AddAdapter(self, name, address):
        '''AddAdapter(s name, s address) -> o: export adapter /org/bluez/<name> (e.g. "hci0"),
        powered, with the given public address. The rig adds hci0 (00:AA:01:00:00:01).'''
        if name in W.adapters:
            raise mock_error('adapter %s exists' % name)
        adapter = W.add_adapter(str(name), str(address).upper())
        W.save()
        return dbus.ObjectPath(adapter.path)

    @dbus.service.method(MOCK, in_signature='sss', out_signature='o')
    def AddAdapterInState(self, name, address, power_state):
        '''AddAdapterInState(s name, s address, s powerState) -> o: export /org/bluez/<name> with
        Adapter1.PowerState `powerState` ("on", "off", "off-blocked" = rfkill-blocked, or a
        transition "off-enabling"/"on-disabling"); Powered is true only for "on".'''
        if name in W.adapters:
            raise mock_error('adapter %s exists' % name)
        if power_state not in POWER_STATES:
            raise mock_error('power state %r is not one of %s' % (power_state, ', '.join(POWER_STATES)))
        adapter = W.add_adapter(str(name), str(address).upper(), power_state=str(power_state))
        W.save()
        return dbus.ObjectPath(adapter.path)

    @dbus.service.method(MOCK, in_signature='os', out_signature='')
    def SetPowerState(self, adapter, power_state):
        '''SetPowerState(o adapter, s powerState): what rfkill or the kernel does to the controller
        under bluetoothd: "off-blocked" = `rfkill block` (powered off: discovery ends, links drop),
        "off" = `rfkill unblock` (bluetoothd 5.66 does not power it on again by itself), "on".'''
        found = [a for a in W.adapters.values() if a.path == str(adapter)]
        if not found:
            raise mock_error('no adapter at %s' % adapter)
        if power_state not in POWER_STATES:
            raise mock_error('power state %r is not one of %s' % (power_state, ', '.join(POWER_STATES)))
        found[0].change_power_state(str(power_state))
        W.save()

    @dbus.service.method(MOCK, in_signature='sssnb', out_signature='o')
    def AddLEDevice(self, address, name, profile, rssi, known):
        '''AddLEDevice(s address, s name, s profile, n rssi, b known) -> o device path.
        profile: d600 | d600-nopair | s550 | s370 | s320 | s721 | generic.
        known=true: already paired, bonded and trusted; exported at once (no RSSI) like a bonded
        device bluetoothd loads from storage; in range. known=false: only "in range": it appears
        (InterfacesAdded) when a discovery whose filter matches it runs.'''
        peer = W.add_peer(str(address), str(name), str(profile), int(rssi), bool(known))
        W.save()
        return dbus.ObjectPath(peer.path)

    @dbus.service.method(MOCK, in_signature='ssuasnb', out_signature='o')
    def AddClassicDevice(self, address, name, cod, uuids, rssi, known):
        '''AddClassicDevice(s address, s name, u class, as uuids, n rssi, b known) -> o device path.
        A BR/EDR device (e.g. a Socket Mobile scanner in SPP mode): Device1 has Class (the 24-bit
        Class of Device) and UUIDs (16-bit or 128-bit given, listed as 128-bit lower case, as
        bluetoothd fills them from EIR and SDP), AddressType public, no ManufacturerData, no GATT.
        Found only by a discovery whose Transport is "bredr" or "auto". Connect: Connected=true and
        ServicesResolved=true; absent: Failed "br-connection-page-timeout". Pair as for LE devices
        (agent needed; Page Timeout when out of range). known: as AddLEDevice.'''
        peer = W.add_peer(str(address), str(name), 'bredr', int(rssi), bool(known),
                          cod=int(cod), uuids=[str(u) for u in uuids])
        W.save()
        return dbus.ObjectPath(peer.path)

    @dbus.service.method(MOCK, in_signature='ob', out_signature='')
    def SetInRange(self, device, in_range):
        '''SetInRange(o device, b inRange): the device comes into or goes out of radio range.
        Out of range: Connect fails (le-connection-abort-by-local); a connected device suffers a
        link loss. Into range while discovering: it is found.'''
        W.peer(device).set_in_range(bool(in_range))
        W.save()

    @dbus.service.method(MOCK, in_signature='o', out_signature='')
    def LinkLoss(self, device):
        '''LinkLoss(o device): the link drops (supervision timeout): one PropertiesChanged
        {Connected: false, ServicesResolved: false}, then InterfacesRemoved(Battery1). GATT objects
        and notify sessions stay; the device stays in range, so Connect brings it back.'''
        peer = W.peer(device)
        if not peer.connected:
            raise mock_error('%s is not connected' % peer.address)
        peer.link_down('link loss')

    @dbus.service.method(MOCK, in_signature='oay', out_signature='u', byte_arrays=True)
    def Scan(self, device, frame):
        '''Scan(o device, ay frame) -> u notifications: a D600 sends `frame` verbatim (include the
        0x00 terminator) on scan data, cut in ChunkSize pieces. 0 when dropped: not connected or
        no client notifying (a real reader drops it too).'''
        return W.peer(device, 'd600').send_stream('scan_data', to_bytes(frame))

    @dbus.service.method(MOCK, in_signature='oaay', out_signature='u', byte_arrays=True)
    def ScanFrames(self, device, frames):
        '''ScanFrames(o device, aay frames) -> u: several frames as one byte stream, so one
        notification can hold the end of a frame and the start of the next.'''
        return W.peer(device, 'd600').send_stream('scan_data', b''.join(to_bytes(f) for f in frames))

    @dbus.service.method(MOCK, in_signature='oss', out_signature='u')
    def ScanText(self, device, family, text):
        '''ScanText(o device, s family, s text) -> u: D600 frame = 2 hex digits of tag family
        (e.g. "4F" NFC Forum, "01" ISO 14443-A) + UTF-8 text + 0x00.'''
        family = str(family)
        if len(family) != 2:
            raise mock_error('family must be two hex digits')
        frame = family.encode('ascii') + str(text).encode('utf-8') + b'\x00'
        return W.peer(device, 'd600').send_stream('scan_data', frame)

    @dbus.service.method(MOCK, in_signature='ouay', out_signature='u', byte_arrays=True,
                         async_callbacks=('ok', 'err'))
    def Storm(self, device, count, frame, ok, err):
        '''Storm(o device, u count, ay frame) -> u notifications: a D600 sends `count` copies of
        `frame` as one stream, as fast as the mock can (batches from the main loop); the reply comes
        after the last notification was queued. 0 when nobody is notifying.'''
        W.peer(device, 'd600').storm(int(count), to_bytes(frame), ok, err)

    @dbus.service.method(MOCK, in_signature='osayy', out_signature='u', byte_arrays=True)
    def TagRead(self, device, uid_hex, data, protocol):
        '''TagRead(o device, s uidHex, ay data, y protocol) -> u: an S550 indicates a SpringCore
        Direct "Tag read" event on Direct_Events: CC 5B LEN(2, big endian) B0 + C1 04 (flags,
        interface 03, protocol, template 00) + C2 uid + C3 data; flags 0x20 (DataIsString) when
        data is printable UTF-8, else 0x00.'''
        data = to_bytes(data)
        uid = hex_bytes(uid_hex)
        info = bytes([0x20 if printable(data) else 0x00, 0x03, int(protocol) & 0xFF, 0x00])
        body = tlv(0xC1, info) + tlv(0xC2, uid) + tlv(0xC3, data)
        return W.peer(device, 's550').send_stream('direct_events', direct_message(0xB0, body))

    @dbus.service.method(MOCK, in_signature='oysy', out_signature='u')
    def TagInserted(self, device, index, uid_hex, protocol):
        '''TagInserted(o device, y index, s uidHex, y protocol) -> u: S550 B1 event with C0 index,
        C1 (00, 03, protocol, 00) and C2 uid.'''
        body = tlv(0xC0, bytes([int(index) & 0xFF])) + tlv(0xC1, bytes([0x00, 0x03, int(protocol) & 0xFF, 0x00])) \
            + tlv(0xC2, hex_bytes(uid_hex))
        return W.peer(device, 's550').send_stream('direct_events', direct_message(0xB1, body))

    @dbus.service.method(MOCK, in_signature='oy', out_signature='u')
    def TagRemoved(self, device, index):
        '''TagRemoved(o device, y index) -> u: S550 B1 event carrying only C0 index.'''
        body = tlv(0xC0, bytes([int(index) & 0xFF]))
        return W.peer(device, 's550').send_stream('direct_events', direct_message(0xB1, body))

    @dbus.service.method(MOCK, in_signature='oyay', out_signature='u', byte_arrays=True)
    def DirectEvent(self, device, event, body):
        '''DirectEvent(o device, y evt, ay tlvs) -> u: any S550 READER-class event
        (CC 5B LEN EVT tlvs), split in ChunkSize indications.'''
        return W.peer(device, 's550').send_stream('direct_events', direct_message(int(event), to_bytes(body)))

    @dbus.service.method(MOCK, in_signature='osay', out_signature='u', byte_arrays=True)
    def Notify(self, device, uuid, value):
        '''Notify(o device, s characteristicUUID, ay value) -> u: the device sends one
        notification/indication with exactly `value` on that characteristic (0 if dropped).'''
        peer = W.peer(device)
        try:
            u = uuid128(uuid)
        except ValueError as e:
            raise mock_error(str(e)) from e
        return peer.notify_uuid(u, to_bytes(value))

    @dbus.service.method(MOCK, in_signature='oy', out_signature='')
    def SetBattery(self, device, percent):
        '''SetBattery(o device, y percent): Battery1.Percentage follows (PropertiesChanged) while
        connected; the 0x2A19 value changes and is notified to notifying clients.'''
        W.peer(device).set_battery(int(percent))
        W.save()

    @dbus.service.method(MOCK, in_signature='oa{sv}', out_signature='')
    def SetDeviceInfo(self, device, info):
        '''SetDeviceInfo(o device, a{sv} info): Device Information strings; keys Manufacturer,
        Model, Serial, Firmware, Software, Hardware (defaults "Socket Mobile, Inc.", the profile's
        model, the address without colons, "1.50", "1.50", "1.0").'''
        peer = W.peer(device)
        for k, v in info.items():
            if k not in peer.info:
                raise mock_error('unknown key %s' % k)
            peer.info[str(k)] = str(v)
        W.save()

    @dbus.service.method(MOCK, in_signature='oqay', out_signature='', byte_arrays=True)
    def SetManufacturerData(self, device, company, data):
        '''SetManufacturerData(o device, q company, ay data): advertised manufacturer data
        (default: company 0xFFFF, the last three address bytes).'''
        peer = W.peer(device)
        peer.mfr = (int(company), to_bytes(data))
        if peer.dev:
            peer.dev.update(DEVICE, ManufacturerData=peer.mfr_prop())
        W.save()

    @dbus.service.method(MOCK, in_signature='o', out_signature='a(say)')
    def GetWrites(self, device):
        '''GetWrites(o device) -> a(say): (characteristic UUID, bytes) of every write the
        device received, oldest first (write-without-response to a characteristic without that
        flag never reaches the device and is not listed).'''
        return dbus.Array([dbus.Struct((u, dbus.ByteArray(b)), signature='say') for u, b in W.peer(device).writes],
                          signature='(say)')

    @dbus.service.method(MOCK, in_signature='o', out_signature='')
    def ClearWrites(self, device):
        '''ClearWrites(o device): forget the recorded writes (characteristic and CCCD writes).'''
        W.peer(device).writes = []
        W.peer(device).cccd_writes = []

    @dbus.service.method(MOCK, in_signature='o', out_signature='a(say)')
    def GetCccdWrites(self, device):
        '''GetCccdWrites(o device) -> a(say): (characteristic UUID, CCCD value) of every
        Client Characteristic Configuration write the device received, oldest first: 01 00
        (notify) or 02 00 (indicate) when the first notify session is armed on a link, 00 00 when
        the last one ends while connected. A StartNotify while another client's session already
        has the CCCD on writes nothing, as in bluetoothd.'''
        return dbus.Array([dbus.Struct((u, dbus.ByteArray(b)), signature='say')
                           for u, b in W.peer(device).cccd_writes], signature='(say)')

    @dbus.service.method(MOCK, in_signature='o', out_signature='ad')
    def GetConnectCalls(self, device):
        '''GetConnectCalls(o device) -> ad: the CLOCK_MONOTONIC time (s) of every Device1.Connect
        call the device got, oldest first — how a client's reconnect schedule looks from outside.'''
        return dbus.Array([dbus.Double(t) for t in W.peer(device).connect_calls], signature='d')

    @dbus.service.method(MOCK, in_signature='o', out_signature='a{sv}')
    def GetDiscovery(self, adapter):
        '''GetDiscovery(o adapter) -> a{sv}: Discovering (b), Sessions (u: clients with a discovery
        session), Patterns (as: the Pattern filter of each session's client, '' for none, sorted),
        Now (d: CLOCK_MONOTONIC, the clock of GetConnectCalls) and Finds (u: discovery rounds run so
        far; every device a round finds is announced before the round ends, so once Finds has grown,
        what it found has been sent) — whether and how a client watches for devices.'''
        a = W.adapters.get(str(adapter).rsplit('/', 1)[-1])
        if a is None or a.path != str(adapter):
            raise mock_error('no adapter %s' % adapter)
        patterns = sorted(a.filters.get(c, {}).get('Pattern', '') for c in a.sessions)
        return dbus.Dictionary({'Discovering': dbus.Boolean(a.discovering),
                                'Sessions': dbus.UInt32(len(a.sessions)),
                                'Patterns': dbus.Array(patterns, signature='s'),
                                'Now': dbus.Double(time.monotonic()),
                                'Finds': dbus.UInt32(a.finds)}, signature='sv')

    @dbus.service.method(MOCK, in_signature='o', out_signature='a{sv}')
    def GetState(self, device):
        '''GetState(o device) -> a{sv}: InRange, Exported, Connected, Connecting (a Connect is in
        flight: it succeeds if the device is in range when it ends), Paired, Bonded, Trusted,
        Battery, Mode (D600 operating mode set by config AE, 0xFF = never set), Registers (a{yay}),
        NotifySessions (a{sas}: characteristic UUID -> client unique names).'''
        return W.peer(device).state()

    @dbus.service.method(MOCK, in_signature='u', out_signature='')
    def SetChunkSize(self, n):
        '''SetChunkSize(u n): bytes per scan-data / Direct-event notification (MTU - 3), 1..512.
        MTU properties of connected characteristics become n + 3.'''
        if not 1 <= int(n) <= 512:
            raise mock_error('chunk size must be 1..512')
        W.params['ChunkSize'] = int(n)
        for peer in W.peers.values():
            peer.refresh_mtu()

    @dbus.service.method(MOCK, in_signature='a{sv}', out_signature='')
    def Configure(self, params):
        '''Configure(a{sv} params): change template parameters at run time (TemporaryTimeout,
        ChunkSize, ConnectDelay, ConnectFailDelay, PairDelay, FoundDelay, ResolvedBeforeServices,
        ReplyAfterResolved, ImplicitPairing, BatteryPlugin).'''
        for k, v in params.items():
            if k not in DEFAULTS or k == 'StateFile':
                raise mock_error('unknown parameter %s' % k)
            W.params[str(k)] = type(DEFAULTS[k])(v)

    @dbus.service.method(MOCK, in_signature='', out_signature='a{sv}')
    def GetParameters(self):
        '''GetParameters() -> a{sv}: the current template parameters.'''
        return dbus.Dictionary({k: v for k, v in W.params.items()}, signature='sv')


class Adapter(Obj):
    '''org.bluez.Adapter1 with per-client discovery sessions.'''

    writable = {(ADAPTER, 'Alias'): 's', (ADAPTER, 'Powered'): 'b', (ADAPTER, 'Discoverable'): 'b',
                (ADAPTER, 'DiscoverableTimeout'): 'u', (ADAPTER, 'Pairable'): 'b',
                (ADAPTER, 'PairableTimeout'): 'u'}

    def __init__(self, name, address, powered=True, power_state=None):
        if power_state is None:
            power_state = 'on' if powered else 'off'
        powered = power_state == 'on'
        self.name = name
        self.address = address
        self.filters = {}   # client -> filter dict (set with SetDiscoveryFilter)
        self.sessions = set()  # clients with a discovery session
        self.found_timer = None
        self.finds = 0  # discovery rounds run (find_devices with a session): GetDiscovery's Finds
        props = {
            'Address': dbus.String(address),
            'AddressType': dbus.String('public'),
            'Name': dbus.String('capture-rig'),
            'Alias': dbus.String('capture-rig'),
            'Class': dbus.UInt32(0),
            'Powered': dbus.Boolean(powered),
            'PowerState': dbus.String(power_state),
            'Discoverable': dbus.Boolean(False),
            'DiscoverableTimeout': dbus.UInt32(180),
            'Pairable': dbus.Boolean(True),
            'PairableTimeout': dbus.UInt32(0),
            'Discovering': dbus.Boolean(False),
            'UUIDs': dbus.Array([uuid128('1801'), uuid128('1800'), uuid128('180a')], signature='s'),
            'Modalias': dbus.String('usb:v1D6Bp0246d0542'),
            'Roles': dbus.Array(['central', 'peripheral'], signature='s'),
        }
        Obj.__init__(self, '/org/bluez/' + name, ADAPTER, props)

    @property
    def powered(self):
        return bool(self.props[ADAPTER]['Powered'])

    @property
    def discovering(self):
        return bool(self.sessions)

    @property
    def power_state(self):
        return str(self.props[ADAPTER]['PowerState'])

    def set_property(self, iface, name, value):
        if name == 'Powered':
            # bluetoothd 5.66 (src/adapter.c): the controller is rfkill-blocked, so the kernel refuses
            # Set Powered with MGMT_STATUS_RFKILLED, whose text is "Blocked through rfkill".
            if value and self.power_state == 'off-blocked':
                raise failed('Blocked through rfkill')
            if bool(value) != self.powered:
                # PowerState passes through the transition, then lands with Powered in one signal.
                self.update(ADAPTER, PowerState=dbus.String('off-enabling' if value else 'on-disabling'))
                self.change_power_state('on' if value else 'off')
            W.save()
            return
        if name == 'Alias' and value == '':
            value = self.props[ADAPTER]['Name']
        self.update(ADAPTER, **{name: value})
        W.save()

    def change_power_state(self, state):
        '''PowerState = state, Powered = (state == "on"); powering off ends discovery and drops links.'''
        was_powered = self.powered
        changed = {'PowerState': dbus.String(state)}
        if was_powered != (state == 'on'):
            changed['Powered'] = dbus.Boolean(state == 'on')
        self.update(ADAPTER, **changed)
        if was_powered and not self.powered:
            for client in list(self.sessions):
                self.sessions.discard(client)
            self.discovery_changed()
            for peer in W.peers.values():
                if peer.adapter is self and peer.connected:
                    peer.link_down('adapter powered off')

    # --- discovery ---------------------------------------------------------------------------

    @dbus.service.method(ADAPTER, in_signature='', out_signature='', sender_keyword='sender')
    def StartDiscovery(self, sender=None):
        '''Start a discovery session for the calling client (InProgress if it has one).'''
        if not self.powered:
            raise not_ready()
        if sender in self.sessions:
            raise busy()
        self.sessions.add(sender)
        log('discovery session for %s (%d)' % (sender, len(self.sessions)))
        later(0, self.discovery_changed)

    @dbus.service.method(ADAPTER, in_signature='', out_signature='', sender_keyword='sender')
    def StopDiscovery(self, sender=None):
        '''End the caller's session (Failed "No discovery started" if it has none).'''
        if not self.powered:
            raise not_ready()
        if sender not in self.sessions:
            raise failed('No discovery started')
        self.sessions.discard(sender)
        self.discovery_changed()

    @dbus.service.method(ADAPTER, in_signature='a{sv}', out_signature='', sender_keyword='sender')
    def SetDiscoveryFilter(self, properties, sender=None):
        '''Per-client filter: UUIDs as, RSSI n, Pathloss q, Transport s, DuplicateData b,
        Discoverable b, Pattern s. An empty dict clears it. Anything else: InvalidArguments.'''
        if not self.powered:
            raise not_ready()
        f = parse_filter(properties)
        if f:
            self.filters[sender] = f
        else:
            self.filters.pop(sender, None)
        if sender in self.sessions:
            later(W.params['FoundDelay'], self.find_devices)

    @dbus.service.method(ADAPTER, in_signature='', out_signature='as')
    def GetDiscoveryFilters(self):
        '''The filter keys this bluetoothd understands.'''
        return dbus.Array(DISCOVERY_FILTERS, signature='s')

    @dbus.service.method(ADAPTER, in_signature='o', out_signature='', async_callbacks=('ok', 'err'))
    def RemoveDevice(self, device, ok, err):
        '''Disconnect, then InterfacesRemoved for GATT objects (descriptors, characteristics,
        services) and Device1 last; pairing, trust and the GATT cache are forgotten.'''
        peer = W.peers.get(str(device))
        if peer is None or peer.dev is None or peer.adapter is not self:
            raise does_not_exist()
        peer.remove()
        W.save()
        ok()

    def client_gone(self, client):
        self.filters.pop(client, None)
        if client in self.sessions:
            self.sessions.discard(client)
            self.discovery_changed()

    def discovery_changed(self):
        '''Discovering follows "any session"; devices are found while it is true.'''
        on = bool(self.sessions)
        if bool(self.props[ADAPTER]['Discovering']) != on:
            self.update(ADAPTER, Discovering=dbus.Boolean(on))
            if on:
                self.found_timer = cancel(self.found_timer)
                self.found_timer = later(W.params['FoundDelay'], self.find_devices)
            else:
                self.found_timer = cancel(self.found_timer)
                for peer in W.peers.values():
                    if peer.adapter is self:
                        peer.discovery_stopped()
        elif on:
            later(W.params['FoundDelay'], self.find_devices)

    def matches(self, peer):
        '''Whether any session's filter lets this device through (what bluetoothd does).'''
        if not peer.in_range:
            return False
        for client in self.sessions:
            if filter_matches(self.filters.get(client, {}), peer):
                return True
        return False

    def find_devices(self):
        self.found_timer = None
        if not self.sessions:
            return
        self.finds += 1
        for peer in list(W.peers.values()):
            # a connected LE peripheral does not advertise, so discovery does not see it
            if peer.adapter is self and not peer.connected and self.matches(peer):
                peer.found()


def parse_filter(properties):
    f = {}
    for key, value in properties.items():
        key = str(key)
        if key == 'UUIDs':
            if not isinstance(value, dbus.Array):
                raise invalid_args()
            try:
                f['UUIDs'] = [uuid128(u) for u in value]
            except (ValueError, TypeError) as e:
                raise invalid_args() from e
        elif key == 'RSSI':
            if not isinstance(value, dbus.Int16):
                raise invalid_args()
            f['RSSI'] = int(value)
        elif key == 'Pathloss':
            if not isinstance(value, dbus.UInt16):
                raise invalid_args()
            f['Pathloss'] = int(value)
        elif key == 'Transport':
            if not isinstance(value, dbus.String) or value not in ('auto', 'le', 'bredr'):
                raise invalid_args()
            f['Transport'] = str(value)
        elif key in ('DuplicateData', 'Discoverable'):
            if not isinstance(value, dbus.Boolean):
                raise invalid_args()
            f[key] = bool(value)
        elif key == 'Pattern':
            if not isinstance(value, dbus.String):
                raise invalid_args()
            f['Pattern'] = str(value)
        else:
            raise invalid_args()
    if 'RSSI' in f and 'Pathloss' in f:
        raise invalid_args()
    return f


def filter_matches(f, peer):
    # Transport "le" scans only LE, "bredr" runs only an inquiry, "auto" (or none) both.
    transport = f.get('Transport', 'auto')
    if transport != 'auto' and transport != peer.transport:
        return False
    if 'RSSI' in f and peer.rssi < f['RSSI']:
        return False
    if 'Pathloss' in f:
        return False  # the simulated devices advertise no TX power, so no path loss is known
    if f.get('UUIDs') and not set(f['UUIDs']) & set(peer.adv_uuids):
        return False
    pattern = f.get('Pattern')
    if pattern and not (peer.address.startswith(pattern) or peer.name.startswith(pattern)):
        return False
    return True


class Device(Obj):
    '''org.bluez.Device1 (and Battery1 while connected).'''

    writable = {(DEVICE, 'Alias'): 's', (DEVICE, 'Trusted'): 'b', (DEVICE, 'Blocked'): 'b'}

    def __init__(self, peer):
        self.peer = peer
        Obj.__init__(self, peer.path, DEVICE, peer.device_props())

    def set_property(self, iface, name, value):
        p = self.peer
        if name == 'Alias':
            p.alias = str(value) or None
            self.update(DEVICE, Alias=dbus.String(p.alias or p.name))
        elif name == 'Trusted':
            p.trusted = bool(value)
            if p.trusted:
                p.temp_timer = cancel(p.temp_timer)
            self.update(DEVICE, Trusted=dbus.Boolean(p.trusted))
        elif name == 'Blocked':
            p.blocked = bool(value)
            self.update(DEVICE, Blocked=dbus.Boolean(p.blocked))
            if p.blocked and p.connected:
                p.link_down('blocked')
        W.save()

    @dbus.service.method(DEVICE, in_signature='', out_signature='', async_callbacks=('ok', 'err'))
    def Connect(self, ok, err):
        '''LE connect: reply, Connected=true, GATT InterfacesAdded, UUIDs, ServicesResolved=true,
        Battery1. Connected already: success. Pending: InProgress. Absent: Failed
        "le-connection-abort-by-local".'''
        self.peer.connect_calls.append(time.monotonic())
        self.peer.connect(ok, err)

    @dbus.service.method(DEVICE, in_signature='', out_signature='', async_callbacks=('ok', 'err'))
    def Disconnect(self, ok, err):
        '''PropertiesChanged{Connected:false, ServicesResolved:false}, InterfacesRemoved(Battery1),
        then the reply. Not connected: NotConnected.'''
        p = self.peer
        if p.connecting:
            p.abort_connect()
            ok()
            return
        if not p.connected:
            raise bluez_error('NotConnected', 'Not Connected')
        p.link_down('disconnect')
        ok()

    @dbus.service.method(DEVICE, in_signature='', out_signature='', sender_keyword='sender',
                         async_callbacks=('ok', 'err'))
    def Pair(self, sender=None, ok=None, err=None):
        '''Needs an agent (the caller's or the default one), else AuthenticationFailed. Just Works:
        no agent method is called. Connects if needed, then Paired=true, Bonded=true.'''
        self.peer.pair(sender, ok, err)

    @dbus.service.method(DEVICE, in_signature='', out_signature='')
    def CancelPairing(self):
        '''Cancel a pending Pair (it fails with AuthenticationCanceled); DoesNotExist if none.'''
        self.peer.cancel_pairing()

    @dbus.service.method(DEVICE, in_signature='s', out_signature='')
    def ConnectProfile(self, uuid):
        '''LE devices have no connectable profiles here: NotAvailable.'''
        raise bluez_error('NotAvailable', 'Operation currently not available')

    @dbus.service.method(DEVICE, in_signature='s', out_signature='')
    def DisconnectProfile(self, uuid):
        '''LE devices have no connectable profiles here: NotAvailable.'''
        raise bluez_error('NotAvailable', 'Operation currently not available')


class GattService(Obj):
    def __init__(self, peer, path, uuid, primary=True):
        self.peer = peer
        Obj.__init__(self, path, SERVICE, {
            'UUID': dbus.String(uuid), 'Device': dbus.ObjectPath(peer.path),
            'Primary': dbus.Boolean(primary)})


class GattChar(Obj):
    '''org.bluez.GattCharacteristic1 of a remote device (bluetoothd's gatt-client).'''

    def __init__(self, peer, path, service_path, spec, protected):
        self.peer = peer
        self.uuid = spec['uuid']
        self.flags = spec['flags']
        self.role = spec['role']
        self.static_value = spec['value']
        self.protected = protected
        self.sessions = {}      # client -> armed (CCCD written on the current link)
        self.notifying = False
        self.descs = []
        props = {'UUID': dbus.String(self.uuid), 'Service': dbus.ObjectPath(service_path),
                 'Flags': dbus.Array(self.flags, signature='s')}
        if self.can_notify:
            props['Notifying'] = dbus.Boolean(False)
        if 'notify' in self.flags:
            props['NotifyAcquired'] = dbus.Boolean(False)
        if 'write-without-response' in self.flags:
            props['WriteAcquired'] = dbus.Boolean(False)
        Obj.__init__(self, path, CHAR, props)

    @property
    def can_notify(self):
        return 'notify' in self.flags or 'indicate' in self.flags

    def device_value(self):
        '''What the device answers to a read right now.'''
        p = self.peer
        if self.role and self.role.startswith('info:'):
            return p.info[self.role[5:]].encode('utf-8')
        if self.role == 'battery_level':
            return bytes([p.battery])
        if self.role == 'gap_name':
            return p.name.encode('utf-8')
        if self.role == 'pnp_id':
            return bytes([0x01, 0xFF, 0xFF, 0x00, 0x00, 0x50, 0x01])
        return self.static_value

    def cache(self, value):
        '''bluetoothd stores every read or notified value and announces it, even when it repeats.'''
        self.props[CHAR]['Value'] = dbus.ByteArray(value)
        properties_changed(self.path, CHAR, {'Value': dbus.ByteArray(value)})

    def check_security(self):
        p = self.peer
        if self.protected and not p.paired:
            if not W.params['ImplicitPairing']:
                raise bluez_error('NotPermitted', 'Not paired')
            p.set_paired(True)

    @dbus.service.method(CHAR, in_signature='a{sv}', out_signature='ay')
    def ReadValue(self, options):
        '''Failed "Not connected"; NotPermitted "Read not permitted" without the read flag;
        option offset (q). The value is cached (PropertiesChanged Value) before the reply.'''
        if not self.peer.connected:
            raise failed('Not connected')
        offset = parse_offset(options)
        if 'read' not in self.flags:
            raise bluez_error('NotPermitted', 'Read not permitted')
        self.check_security()
        value = self.device_value()
        if offset > len(value):
            raise invalid_args('Invalid offset')
        self.cache(value)
        return dbus.ByteArray(value[offset:])

    @dbus.service.method(CHAR, in_signature='aya{sv}', out_signature='', byte_arrays=True)
    def WriteValue(self, value, options):
        '''Options type (request/command/reliable) and offset. Failed "Not connected";
        InvalidArguments "Invalid Length" above 512 bytes; NotSupported without write flags.'''
        p = self.peer
        if not p.connected:
            raise failed('Not connected')
        value = to_bytes(value)
        offset = parse_offset(options)
        kind = options.get('type')
        if kind is not None and not isinstance(kind, dbus.String):
            raise invalid_args()
        if len(value) > 512:
            raise invalid_args('Invalid Length')
        if kind is None:
            if 'reliable-write' in self.flags:
                kind = 'reliable'
            elif 'write' in self.flags:
                kind = 'request'
            elif 'write-without-response' in self.flags:
                kind = 'command'
            else:
                raise not_supported()
        elif kind not in ('request', 'command', 'reliable'):
            raise not_supported()
        if kind in ('request', 'reliable') and 'write' not in self.flags and 'reliable-write' not in self.flags:
            raise bluez_error('NotPermitted', 'Write not permitted')  # the device's ATT error
        self.check_security()
        if kind == 'command' and 'write-without-response' not in self.flags:
            log('write command to %s without write-without-response: dropped by the device' % self.uuid)
            return
        p.writes.append((self.uuid, value))
        p.sim.written(self, value, offset)

    @dbus.service.method(CHAR, in_signature='', out_signature='', sender_keyword='sender')
    def StartNotify(self, sender=None):
        '''Per client. NotSupported without notify/indicate; Failed "Already notifying" for a
        second session of the same client (InProgress while the link is down). Disconnected:
        success, armed on the next connection.'''
        if not self.can_notify:
            raise not_supported()
        if sender in self.sessions:
            if self.sessions[sender]:
                raise failed('Already notifying')
            raise in_progress()
        p = self.peer
        if p.connected:
            self.check_security()
        self.sessions[sender] = p.connected
        if p.connected:
            self.set_notifying(True)

    @dbus.service.method(CHAR, in_signature='', out_signature='', sender_keyword='sender')
    def StopNotify(self, sender=None):
        '''Ends the caller's session; Failed "No notify session started" without one.'''
        if sender not in self.sessions:
            raise failed('No notify session started')
        del self.sessions[sender]
        self.update_notifying()

    @dbus.service.method(CHAR, in_signature='a{sv}', out_signature='hq')
    def AcquireWrite(self, options):
        '''Not modelled: NotSupported.'''
        raise not_supported()

    @dbus.service.method(CHAR, in_signature='a{sv}', out_signature='hq')
    def AcquireNotify(self, options):
        '''Not modelled: NotSupported.'''
        raise not_supported()

    def set_notifying(self, on):
        if self.notifying != on:
            self.notifying = on
            self.update(CHAR, Notifying=dbus.Boolean(on))
            if self.peer.connected:
                self.write_cccd(on)

    def write_cccd(self, on):
        '''bluetoothd writes the device's CCCD only when the first session arms it on a link and when
        the last one ends: a second client's StartNotify reaches nobody but bluetoothd.'''
        value = (b'\x01\x00' if 'notify' in self.flags else b'\x02\x00') if on else b'\x00\x00'
        self.peer.cccd_writes.append((self.uuid, value))

    def update_notifying(self):
        if self.notifying and not any(self.sessions.values()):
            self.set_notifying(False)

    def client_gone(self, client):
        if client in self.sessions:
            del self.sessions[client]
            self.update_notifying()

    @property
    def armed(self):
        return self.peer.connected and any(self.sessions.values())

    def send(self, value):
        '''One notification/indication from the device; dropped unless a session is armed.'''
        if not self.armed:
            return False
        self.props[CHAR]['Value'] = dbus.ByteArray(value)
        properties_changed(self.path, CHAR, {'Value': dbus.ByteArray(value)})
        return True


class GattDesc(Obj):
    def __init__(self, char, path, uuid):
        self.char = char
        self.uuid = uuid
        Obj.__init__(self, path, DESC, {'UUID': dbus.String(uuid), 'Characteristic': dbus.ObjectPath(char.path),
                                        'Flags': dbus.Array(['read', 'write'], signature='s')})

    @dbus.service.method(DESC, in_signature='a{sv}', out_signature='ay')
    def ReadValue(self, options):
        '''CCCD value as the device holds it: 01 00 notify, 02 00 indicate, 00 00 off.'''
        if not self.char.peer.connected:
            raise failed('Not connected')
        offset = parse_offset(options)
        value = b'\x00\x00'
        if self.char.armed:
            value = b'\x01\x00' if 'notify' in self.char.flags else b'\x02\x00'
        self.props[DESC]['Value'] = dbus.ByteArray(value)
        properties_changed(self.path, DESC, {'Value': dbus.ByteArray(value)})
        return dbus.ByteArray(value[offset:])

    @dbus.service.method(DESC, in_signature='aya{sv}', out_signature='', byte_arrays=True)
    def WriteValue(self, value, options):
        '''The CCCD is written through StartNotify/StopNotify only: NotPermitted.'''
        if not self.char.peer.connected:
            raise failed('Not connected')
        raise bluez_error('NotPermitted', 'Write not permitted')


def parse_offset(options):
    offset = options.get('offset', dbus.UInt16(0))
    if not isinstance(offset, dbus.UInt16):
        raise invalid_args()
    return int(offset)


# ---------------------------------------------------------------------------------------------
# Simulated devices
# ---------------------------------------------------------------------------------------------

def printable(data):
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        return False
    return bool(text) and all(ch.isprintable() for ch in text)


def tlv(tag, value):
    n = len(value)
    if n < 0x80:
        length = bytes([n])
    elif n <= 0xFF:
        length = bytes([0x81, n])
    elif n <= 0xFFFF:
        length = bytes([0x82]) + n.to_bytes(2, 'big')
    else:
        length = bytes([0x83]) + n.to_bytes(3, 'big')
    return bytes([tag]) + length + value


def direct_message(evt, body, pcb=0xCC, cla=0x5B):
    '''SpringCore Direct message: PCB CLA LEN(2 big endian; 4 with PCB bit 4) EVT body.'''
    if len(body) > 0xFFFF:
        return bytes([pcb | 0x10, cla]) + len(body).to_bytes(4, 'big') + bytes([evt & 0xFF]) + body
    return bytes([pcb, cla]) + len(body).to_bytes(2, 'big') + bytes([evt & 0xFF]) + body


def encode_blocks(head, data, size=20):
    '''D600 config block framing: first block (n+1 | more) head data[:18]; continuation k:
    (n | 0x80 | 0x40 on even k | more) data[:19].'''
    first = data[:size - 2]
    rest = data[size - 2:]
    blocks = [bytes([(len(first) + 1) | (0x20 if rest else 0), head]) + first]
    k = 1
    while rest:
        part, rest = rest[:size - 1], rest[size - 1:]
        b0 = len(part) | 0x80 | (0x40 if k % 2 == 0 else 0) | (0x20 if rest else 0)
        blocks.append(bytes([b0]) + part)
        k += 1
    return blocks


class Simulator:
    '''Device firmware: reacts to writes. The base one only records them.'''

    def __init__(self, peer):
        self.peer = peer

    def written(self, char, value, offset):
        pass

    def state(self):
        return {}

    def load(self, saved):
        pass

    def save(self):
        return {}


class D600(Simulator):
    '''Config I/O: block-framed commands answered by notifications; scan control recorded.'''

    DELETE_BONDS = bytes.fromhex('FEDAFAED')
    DELETE_BONDS_AND_RESET = bytes.fromhex('DAFAEDFE')
    FACTORY_RESET = bytes.fromhex('FEEDFADA')

    def __init__(self, peer):
        Simulator.__init__(self, peer)
        self.cmd = None
        self.payload = bytearray()
        self.mode = 0xFF
        self.registers = {}

    def written(self, char, value, offset):
        if char.role == 'config_io':
            self.config_block(value)
        elif char.role == 'scan_control' and value:
            log('%s scan control %s' % (self.peer.address, value.hex()))

    def config_block(self, block):
        if not block:
            return
        b0 = block[0]
        if b0 & 0x80 == 0:
            if len(block) < 2:
                return
            n = b0 & 0x1F
            avail = block[2:]
            self.cmd = block[1]
            self.payload = bytearray(avail[:n - 1] if 1 <= n and n - 1 <= len(avail) else avail)
        else:
            if self.cmd is None:
                return
            n = b0 & 0x1F
            avail = block[1:]
            self.payload += avail[:n] if n <= len(avail) else avail
        if b0 & 0x20:
            return
        cmd, payload = self.cmd, bytes(self.payload)
        self.cmd, self.payload = None, bytearray()
        status, data = self.command(cmd, payload)
        log('%s config %02X %s -> status %02X %s' % (self.peer.address, cmd, payload.hex(), status, data.hex()))
        answer = encode_blocks(status, data)
        later(0, self.peer.send_blocks, 'config_io', answer)

    def command(self, cmd, payload):
        if cmd == 0xAE:
            if len(payload) >= 1 and payload[0] in (0x00, 0x02, 0x03, 0x07):
                self.mode = payload[0]
                return 0x00, b''
            return 0x01, b''
        if cmd == 0x0D:
            if not payload:
                return 0x01, b''
            self.registers[payload[0]] = payload[1:]
            return 0x00, b''
        if cmd == 0x0E:
            if not payload:
                return 0x01, b''
            return 0x00, self.registers.get(payload[0], bytes([payload[0]]))
        if cmd == 0x0F:
            magic = payload[:4]
            if magic == self.DELETE_BONDS:
                self.peer.forget_bond()
            elif magic == self.DELETE_BONDS_AND_RESET:
                self.peer.forget_bond()
                self.registers = {}
                self.mode = 0xFF
            elif magic == self.FACTORY_RESET:
                self.registers = {}
                self.mode = 0xFF
            else:
                return 0x02, b''
            W.save()
            return 0x00, b''
        return 0x00, b''

    def state(self):
        return {'Mode': dbus.Byte(self.mode),
                'Registers': dbus.Dictionary({dbus.Byte(k): dbus.ByteArray(v) for k, v in self.registers.items()},
                                             signature='yay')}

    def save(self):
        return {'mode': self.mode, 'registers': {str(k): v.hex() for k, v in self.registers.items()}}

    def load(self, saved):
        self.mode = saved.get('mode', 0xFF)
        self.registers = {int(k): bytes.fromhex(v) for k, v in saved.get('registers', {}).items()}


SIMULATORS = {'d600': D600, 'd600-nopair': D600}


class Peer:
    '''One simulated LE device plus what bluetoothd knows about it.'''

    def __init__(self, adapter, address, name, profile, rssi):
        self.adapter = adapter
        self.address = address
        self.name = name
        self.profile = profile
        self.adv_uuids, self.services = profile_table(profile)
        self.transport = 'le'
        self.cod = None          # Class of Device, BR/EDR only
        self.rssi = rssi
        self.in_range = True
        first = int(address.split(':')[0], 16)
        self.address_type = 'random' if first & 0xC0 == 0xC0 else 'public'
        self.path = '%s/dev_%s' % (adapter.path, address.replace(':', '_'))
        self.info = {'Manufacturer': 'Socket Mobile, Inc.', 'Model': MODELS[profile],
                     'Serial': address.replace(':', ''), 'Firmware': '1.50', 'Software': '1.50',
                     'Hardware': '1.0'}
        self.battery = 90
        self.mfr = (0xFFFF, bytes.fromhex(address.replace(':', ''))[-3:])
        # bluetoothd's view
        self.known = False
        self.paired = self.bonded = self.trusted = self.blocked = False
        self.alias = None
        self.uuids = list(self.adv_uuids)
        self.dev = None
        self.rssi_valid = False
        self.connected = False
        self.connecting = None   # (timer, ok, err)
        self.pairing = None      # (timer, ok, err)
        self.ever_connected = False
        self.temp_timer = None
        self.gatt = None         # [(obj)] in export order, when cached
        self.chars = []
        self.writes = []
        self.cccd_writes = []    # (characteristic UUID, CCCD value) as the device received them
        self.connect_calls = []  # time.monotonic() of every Device1.Connect, oldest first
        self.sim = SIMULATORS.get(profile, Simulator)(self)

    def make_bredr(self, cod, uuids):
        '''A BR/EDR device: public address, Class of Device, EIR/SDP UUIDs, no advertising data.'''
        if not 0 <= cod <= 0xFFFFFF:
            raise ValueError('class of device is 24 bits')
        self.transport = 'bredr'
        self.cod = cod
        self.address_type = 'public'
        self.adv_uuids = [uuid128(u) for u in uuids]
        self.uuids = list(self.adv_uuids)
        self.mfr = None

    # --- properties ----------------------------------------------------------------------

    def mfr_prop(self):
        return dbus.Dictionary({dbus.UInt16(self.mfr[0]): dbus.ByteArray(self.mfr[1])}, signature='qv')

    def device_props(self):
        d = {
            'Address': dbus.String(self.address),
            'AddressType': dbus.String(self.address_type),
            'Name': dbus.String(self.name),
            'Alias': dbus.String(self.alias or self.name),
            'Paired': dbus.Boolean(self.paired),
            'Bonded': dbus.Boolean(self.bonded),
            'Trusted': dbus.Boolean(self.trusted),
            'Blocked': dbus.Boolean(self.blocked),
            'LegacyPairing': dbus.Boolean(False),
        }
        if self.cod is not None:
            d['Class'] = dbus.UInt32(self.cod)
        if self.rssi_valid:
            d['RSSI'] = dbus.Int16(self.rssi)
        d['Connected'] = dbus.Boolean(self.connected)
        d['UUIDs'] = dbus.Array(self.uuids, signature='s')
        d['Adapter'] = dbus.ObjectPath(self.adapter.path)
        if self.mfr is not None:
            d['ManufacturerData'] = self.mfr_prop()
        d['ServicesResolved'] = dbus.Boolean(False)
        return d

    @property
    def temporary(self):
        return not (self.known or self.paired or self.bonded or self.trusted or self.ever_connected)

    def state(self):
        d = {'InRange': dbus.Boolean(self.in_range), 'Exported': dbus.Boolean(self.dev is not None),
             'Connected': dbus.Boolean(self.connected),
             'Connecting': dbus.Boolean(self.connecting is not None), 'Paired': dbus.Boolean(self.paired),
             'Bonded': dbus.Boolean(self.bonded), 'Trusted': dbus.Boolean(self.trusted),
             'Battery': dbus.Byte(self.battery), 'Profile': dbus.String(self.profile),
             'Transport': dbus.String(self.transport),
             'NotifySessions': dbus.Dictionary({c.uuid: dbus.Array(list(c.sessions), signature='s')
                                                for c in self.chars if c.sessions}, signature='sas')}
        d.update(self.sim.state())
        return dbus.Dictionary(d, signature='sv')

    # --- export ---------------------------------------------------------------------------

    def export(self):
        if self.dev is None:
            self.dev = Device(self)
            interfaces_added(self.path, {DEVICE: self.dev.props[DEVICE]})

    def found(self):
        '''An advertisement reached a discovering adapter.'''
        self.temp_timer = cancel(self.temp_timer)
        if self.dev is None:
            self.rssi_valid = True
            self.export()
            log('found %s %s' % (self.address, self.name))
        elif not self.rssi_valid or self.dev.props[DEVICE].get('RSSI') != self.rssi:
            self.rssi_valid = True
            self.dev.update(DEVICE, RSSI=dbus.Int16(self.rssi))

    def discovery_stopped(self):
        if self.dev is None:
            return
        if self.rssi_valid:
            self.rssi_valid = False
            self.dev.props[DEVICE].pop('RSSI', None)
            properties_changed(self.path, DEVICE, {}, ['RSSI'])
        if self.temporary and not self.connected and not self.connecting:
            self.temp_timer = cancel(self.temp_timer)
            self.temp_timer = later(W.params['TemporaryTimeout'], self.expire)

    def expire(self):
        self.temp_timer = None
        if self.dev is not None and self.temporary and not self.connected and not self.adapter.matches(self):
            log('temporary device %s removed' % self.address)
            self.unexport()

    def set_in_range(self, in_range):
        self.in_range = in_range
        if not in_range and self.connected:
            self.link_down('out of range')
        if in_range and self.adapter.discovering and self.adapter.matches(self):
            later(W.params['FoundDelay'], self.found_if_still_matching)

    def found_if_still_matching(self):
        if self.adapter.discovering and self.adapter.matches(self):
            self.found()

    # --- connection -----------------------------------------------------------------------

    def connect(self, ok, err, then=None):
        if not self.adapter.powered:
            err(not_ready())
            return
        if self.connected:
            ok()
            return
        if self.connecting:
            err(in_progress())
            return
        delay = W.params['ConnectDelay'] if self.in_range and not self.blocked else W.params['ConnectFailDelay']
        self.connecting = (later(delay, self.connect_done), ok, err)

    def abort_connect(self):
        timer, ok, err = self.connecting
        cancel(timer)
        self.connecting = None
        err(failed('le-connection-abort-by-local'))

    def connect_done(self):
        _, ok, err = self.connecting
        self.connecting = None
        if not self.in_range or self.blocked or not self.adapter.powered:
            err(failed('br-connection-page-timeout' if self.transport == 'bredr' else 'le-connection-abort-by-local'))
            return
        if W.params['ReplyAfterResolved']:
            self.link_up()
            ok()
        else:
            ok()
            self.link_up()

    def link_up(self):
        '''The connection sequence bluetoothd 5.66 shows.'''
        self.export()
        self.temp_timer = cancel(self.temp_timer)
        self.connected = True
        self.ever_connected = True
        log('%s connected' % self.address)
        dev = self.dev
        dev.update(DEVICE, Connected=dbus.Boolean(True))
        early = W.params['ResolvedBeforeServices']
        if early:
            dev.update(DEVICE, ServicesResolved=dbus.Boolean(True))
        if self.gatt is None:
            self.build_gatt()
            for obj in self.gatt:
                if isinstance(obj, GattChar):
                    obj.props[CHAR]['MTU'] = dbus.UInt16(W.params['ChunkSize'] + 3)
                interfaces_added(obj.path, {obj.interface: obj.props[obj.interface]})
        else:
            self.refresh_mtu()
        uuids = list(self.uuids)
        for svc in self.services:
            if svc['uuid'] not in uuids:
                uuids.append(svc['uuid'])
        if uuids != self.uuids:
            self.uuids = uuids
            dev.update(DEVICE, UUIDs=dbus.Array(uuids, signature='s'))
        if not early:
            dev.update(DEVICE, ServicesResolved=dbus.Boolean(True))
        for ch in self.chars:
            if ch.sessions:
                for client in ch.sessions:
                    ch.sessions[client] = True
                if ch.notifying:
                    ch.write_cccd(True)   # a new link: bluetoothd arms the CCCD again
                else:
                    ch.set_notifying(True)
        if W.params['BatteryPlugin'] and self.has_battery():
            dev.props[BATTERY] = {'Percentage': dbus.Byte(self.battery)}
            interfaces_added(self.path, {BATTERY: dev.props[BATTERY]})
        W.save()

    def has_battery(self):
        return any(s['uuid'] == uuid128('180f') and any(c['uuid'] == uuid128('2a19') for c in s['chars'])
                   for s in self.services)

    def build_gatt(self):
        claimed = {uuid128('1800'), uuid128('1812')}
        if W.params['BatteryPlugin']:
            claimed.add(uuid128('180f'))
        self.gatt, self.chars = [], []
        for svc, start, chars in layout(self.services):
            if svc['uuid'] in claimed:
                continue
            spath = '%s/service%04x' % (self.path, start)
            self.gatt.append(GattService(self, spath, svc['uuid']))
            for spec, decl, _value, descs in chars:
                cpath = '%s/char%04x' % (spath, decl)
                ch = GattChar(self, cpath, spath, spec, svc['protected'])
                self.gatt.append(ch)
                self.chars.append(ch)
                for duuid, dh in descs:
                    d = GattDesc(ch, '%s/desc%04x' % (cpath, dh), duuid)
                    ch.descs.append(d)
                    self.gatt.append(d)

    def refresh_mtu(self):
        for ch in self.chars:
            if self.connected:
                ch.props[CHAR]['MTU'] = dbus.UInt16(W.params['ChunkSize'] + 3)
            else:
                ch.props[CHAR].pop('MTU', None)

    def link_down(self, why):
        '''Disconnect or link loss: one PropertiesChanged, then Battery1 goes.'''
        if self.pairing:
            timer, _ok, err = self.pairing
            cancel(timer)
            self.pairing = None
            err(bluez_error('AuthenticationFailed', 'Authentication Failed'))
        self.connected = False
        log('%s disconnected (%s)' % (self.address, why))
        for ch in self.chars:
            for client in ch.sessions:
                ch.sessions[client] = False
        self.refresh_mtu()
        self.dev.update(DEVICE, Connected=dbus.Boolean(False), ServicesResolved=dbus.Boolean(False))
        if BATTERY in self.dev.props:
            del self.dev.props[BATTERY]
            interfaces_removed(self.path, [BATTERY])

    def remove(self):
        '''Adapter1.RemoveDevice.'''
        if self.connecting:
            self.abort_connect()
        if self.connected:
            self.link_down('device removed')
        self.cancel_pairing(quiet=True)
        for obj in reversed(self.gatt or []):
            interfaces_removed(obj.path, [obj.interface])
            obj.drop()
        self.gatt, self.chars = None, []
        self.unexport()
        self.known = self.paired = self.bonded = self.trusted = self.blocked = False
        self.alias = None
        self.ever_connected = False
        self.uuids = list(self.adv_uuids)
        if self.adapter.discovering and self.adapter.matches(self):
            later(W.params['FoundDelay'], self.found_if_still_matching)

    def unexport(self):
        self.temp_timer = cancel(self.temp_timer)
        if self.dev is not None:
            interfaces_removed(self.path, list(self.dev.props.keys()))
            self.dev.drop()
            self.dev = None
        self.rssi_valid = False
        if self.gatt:
            for obj in self.gatt:
                obj.drop()
            self.gatt, self.chars = None, []

    # --- pairing --------------------------------------------------------------------------

    def pair(self, sender, ok, err):
        if self.paired:
            err(bluez_error('AlreadyExists', 'Already Paired'))
            return
        if self.pairing or self.connecting:
            err(in_progress())
            return
        if W.agent_for(sender) is None:
            err(bluez_error('AuthenticationFailed', 'Authentication Failed'))
            return
        if not self.in_range or not self.adapter.powered:
            err(bluez_error('ConnectionAttemptFailed', 'Page Timeout'))
            return
        self.pairing = (later(W.params['PairDelay'], self.pair_done), ok, err)

    def pair_done(self):
        _, ok, err = self.pairing
        self.pairing = None
        if not self.in_range:
            err(bluez_error('ConnectionAttemptFailed', 'Page Timeout'))
            return
        if not self.connected:
            self.link_up()
        self.set_paired(True)
        ok()

    def cancel_pairing(self, quiet=False):
        if not self.pairing:
            if quiet:
                return
            raise does_not_exist()
        timer, _ok, err = self.pairing
        cancel(timer)
        self.pairing = None
        err(bluez_error('AuthenticationCanceled', 'Authentication Canceled'))

    def set_paired(self, on):
        self.paired = self.bonded = on
        if self.dev:
            self.dev.update(DEVICE, Paired=dbus.Boolean(on))
            self.dev.update(DEVICE, Bonded=dbus.Boolean(on))
        W.save()

    def forget_bond(self):
        if self.paired or self.bonded:
            self.set_paired(False)

    # --- data from the device --------------------------------------------------------------

    def char_by_role(self, role):
        for ch in self.chars:
            if ch.role == role:
                return ch
        return None

    def send_stream(self, role, data):
        '''Send `data` in ChunkSize notifications; returns how many were sent (0 = dropped).'''
        ch = self.char_by_role(role)
        if ch is None or not ch.armed:
            log('%s: %d bytes for %s dropped (nobody notifying)' % (self.address, len(data), role))
            return dbus.UInt32(0)
        n = 0
        for piece in chunks(data, W.params['ChunkSize']):
            n += ch.send(piece)
        return dbus.UInt32(n)

    def send_blocks(self, role, blocks):
        ch = self.char_by_role(role)
        if ch is None or not ch.armed:
            log('%s: answer on %s dropped (nobody notifying)' % (self.address, role))
            return
        for b in blocks:
            ch.send(b)

    def notify_uuid(self, uuid, value):
        for ch in self.chars:
            if ch.uuid == uuid:
                return dbus.UInt32(1 if ch.send(value) else 0)
        return dbus.UInt32(0)

    def storm(self, count, frame, ok, err):
        ch = self.char_by_role('scan_data')
        if ch is None or not ch.armed:
            ok(dbus.UInt32(0))
            return
        size = W.params['ChunkSize']
        data = frame * count
        state = {'pos': 0, 'n': 0}

        def batch():
            for _ in range(512):
                if state['pos'] >= len(data) or not ch.armed:
                    ok(dbus.UInt32(state['n']))
                    return False
                ch.send(data[state['pos']:state['pos'] + size])
                state['pos'] += size
                state['n'] += 1
            return True
        GLib.idle_add(batch)

    def set_battery(self, percent):
        if not 0 <= percent <= 100:
            raise mock_error('battery must be 0..100')
        self.battery = percent
        if self.dev and BATTERY in self.dev.props:
            self.dev.update(BATTERY, Percentage=dbus.Byte(percent))
        ch = self.char_by_role('battery_level')
        if ch is not None:
            ch.send(bytes([percent]))

    # --- clients and storage ---------------------------------------------------------------

    def client_gone(self, client):
        for ch in self.chars:
            ch.client_gone(client)

    def save(self):
        return {'adapter': self.adapter.name, 'address': self.address, 'name': self.name, 'profile': self.profile,
                'rssi': self.rssi, 'in_range': self.in_range, 'known': self.known, 'paired': self.paired,
                'bonded': self.bonded, 'trusted': self.trusted, 'blocked': self.blocked, 'alias': self.alias,
                'battery': self.battery, 'info': self.info, 'uuids': self.uuids,
                'cod': self.cod, 'adv_uuids': self.adv_uuids,
                'mfr': [self.mfr[0], self.mfr[1].hex()] if self.mfr else None, 'sim': self.sim.save()}

    def restore(self, saved):
        for key in ('in_range', 'known', 'paired', 'bonded', 'trusted', 'blocked', 'alias', 'battery', 'uuids'):
            setattr(self, key, saved[key])
        self.info.update(saved['info'])
        if saved.get('mfr'):
            self.mfr = (saved['mfr'][0], bytes.fromhex(saved['mfr'][1]))
        self.sim.load(saved.get('sim', {}))
        if self.known or self.paired or self.bonded or self.trusted:
            self.known = True
            self.export()


# ---------------------------------------------------------------------------------------------
# The world
# ---------------------------------------------------------------------------------------------

class World:
    def __init__(self, mock, params):
        self.main = mock
        self.bus_name = mock.bus_name
        self.bus = mock.bus_name.get_bus()
        self.params = dict(DEFAULTS)
        for k, v in (params or {}).items():
            if k not in DEFAULTS:
                raise mock_error('unknown template parameter %s' % k)
            self.params[k] = type(DEFAULTS[k])(v)
        self.adapters = {}
        self.peers = {}
        self.agents = {}
        self.default_agent = None
        self.restoring = False

    def add_adapter(self, name, address, powered=True, power_state=None):
        adapter = Adapter(name, address, powered, power_state)
        self.adapters[name] = adapter
        interfaces_added(adapter.path, {ADAPTER: adapter.props[ADAPTER]})
        return adapter

    def add_peer(self, address, name, profile, rssi, known, adapter=None, cod=None, uuids=None):
        address = address.upper()
        parts = address.split(':')
        if len(parts) != 6 or not all(len(p) == 2 for p in parts):
            raise mock_error('bad address %r' % address)
        try:
            bytes.fromhex(''.join(parts))
        except ValueError as e:
            raise mock_error('bad address %r' % address) from e
        if adapter is None:
            if not self.adapters:
                raise mock_error('no adapter: AddAdapter first')
            adapter = next(iter(self.adapters.values()))
        peer = Peer(adapter, address, name, profile, rssi)
        if profile == 'bredr':
            try:
                peer.make_bredr(0 if cod is None else cod, uuids or [])
            except (ValueError, TypeError) as e:
                raise mock_error('bad Classic device: %s' % e) from e
        if peer.path in self.peers:
            raise mock_error('device %s exists' % address)
        self.peers[peer.path] = peer
        if known:
            peer.known = peer.paired = peer.bonded = peer.trusted = True
            peer.export()
        elif adapter.discovering and adapter.matches(peer):
            later(self.params['FoundDelay'], peer.found_if_still_matching)
        return peer

    def peer(self, path, kind=None):
        peer = self.peers.get(str(path))
        if peer is None:
            raise mock_error('no simulated device at %s' % path)
        if kind and not peer.profile.startswith(kind):
            raise mock_error('%s is a %s, not a %s' % (peer.address, peer.profile, kind))
        return peer

    def agent_for(self, sender):
        if sender in self.agents:
            return self.agents[sender]
        if self.default_agent in self.agents:
            return self.agents[self.default_agent]
        return None

    def client_gone(self, name):
        if name in self.agents:
            del self.agents[name]
            if self.default_agent == name:
                self.default_agent = None
        for adapter in self.adapters.values():
            adapter.client_gone(name)
        for peer in self.peers.values():
            peer.client_gone(name)

    def save(self):
        path = self.params['StateFile']
        if not path or self.restoring:
            return
        state = {'adapters': [{'name': a.name, 'address': a.address, 'powered': a.powered,
                               'powerState': a.power_state}
                              for a in self.adapters.values()],
                 'peers': [p.save() for p in self.peers.values()]}
        tmp = path + '.tmp'
        with open(tmp, 'w', encoding='utf-8') as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, path)

    def restore(self):
        path = self.params['StateFile']
        if not path or not os.path.exists(path):
            return
        with open(path, encoding='utf-8') as f:
            state = json.load(f)
        self.restoring = True
        try:
            for a in state.get('adapters', []):
                self.add_adapter(a['name'], a['address'], a.get('powered', True), a.get('powerState'))
            for s in state.get('peers', []):
                peer = self.add_peer(s['address'], s['name'], s['profile'], s['rssi'], False,
                                     self.adapters[s['adapter']], cod=s.get('cod'), uuids=s.get('adv_uuids'))
                peer.restore(s)
        finally:
            self.restoring = False
        log('restored %d adapter(s), %d device(s) from %s' % (len(self.adapters), len(self.peers), path))


def load(mock, parameters):
    global W
    W = World(mock, parameters)
    W.manager = Manager()

    def name_owner_changed(name, old, new):
        if name.startswith(':') and old and not new:
            W.client_gone(str(name))
    W.bus.add_signal_receiver(name_owner_changed, signal_name='NameOwnerChanged',
                              dbus_interface='org.freedesktop.DBus', path='/org/freedesktop/DBus',
                              bus_name='org.freedesktop.DBus')
    W.restore()
