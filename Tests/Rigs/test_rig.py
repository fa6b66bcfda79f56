'''Self-test of the BlueZ rig, driving it only over D-Bus as a client would.

Run: /usr/bin/python3 -m unittest Tests/Rigs/test_rig.py   (from the project root)
'''

import os
import sys
import time
import unittest

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rig as rigmod  # noqa: E402

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)

ADAPTER = '/org/bluez/hci0'
D600_ADDR = '00:11:22:7E:F6:19'
D600 = ADAPTER + '/dev_00_11_22_7E_F6_19'
S550_ADDR = 'C0:11:22:33:44:55'
S550 = ADAPTER + '/dev_C0_11_22_33_44_55'
SCANNER_SERVICE = '6cb501b7-96f6-4eef-acb1-d7535f153cf0'
SCAN_DATA = 'ce3e81b8-d871-4613-ba78-5ffc0b1520a6'
SCAN_CONTROL = '833a2364-bca0-4647-8113-478e1fc449ba'
CONFIG_IO = '1254fc72-336e-4bb2-a0a8-71c7d28d73ce'
DIRECT_EVENTS = '23d33996-e604-4f8b-baf7-547944030552'
DIRECT_SERVICE = '7a4385c9-f7c7-4e22-9afd-16d68fc588ca'
OM = 'org.freedesktop.DBus.ObjectManager'
PROPS = 'org.freedesktop.DBus.Properties'
DEVICE = 'org.bluez.Device1'
CHAR = 'org.bluez.GattCharacteristic1'


def opts(**kw):
    return dbus.Dictionary(kw, signature='sv')


class Client:
    '''One D-Bus client of the rig's bus, recording every signal and async reply in order.'''

    def __init__(self, address):
        self.bus = dbus.bus.BusConnection(address)
        self.events = []
        self.bus.add_signal_receiver(self._signal, path_keyword='path', interface_keyword='iface',
                                     member_keyword='member', byte_arrays=True)

    def _signal(self, *args, path=None, iface=None, member=None):
        self.events.append(('signal', str(path), str(iface), str(member), args))

    @property
    def name(self):
        return self.bus.get_unique_name()

    def close(self):
        self.bus.close()

    def call(self, path, iface, method, signature='', *args, timeout=30):
        return self.bus.call_blocking('org.bluez', path, iface, method, signature, args, timeout=timeout,
                                      byte_arrays=True)

    def call_async(self, tag, path, iface, method, signature='', *args):
        def ok(*result):
            self.events.append(('reply', tag, result))

        def err(e):
            self.events.append(('error', tag, e))
        self.bus.call_async('org.bluez', path, iface, method, signature, args, ok, err, byte_arrays=True)

    def mock(self, method, signature='', *args):
        return self.call('/org/bluez', 'org.bluez.Mock', method, signature, *args)

    def objects(self):
        return self.call('/', OM, 'GetManagedObjects')

    def pump(self, until, timeout=30.0):
        '''Run the main loop until until() is true; fails after `timeout` (a deadline for a slow
        machine, never a wait of its own).'''
        ctx = GLib.MainContext.default()
        deadline = time.monotonic() + timeout
        tick = GLib.timeout_add(5, lambda: True)
        try:
            while time.monotonic() < deadline:
                ctx.iteration(True)
                if until():
                    return True
        finally:
            GLib.source_remove(tick)
        raise AssertionError('not reached in %s s; events: %r' % (timeout, self.events[-20:]))

    def drain(self):
        '''Dispatches what has arrived already (signals queued behind a reply that was read).'''
        ctx = GLib.MainContext.default()
        while ctx.pending():
            ctx.iteration(False)

    def sync(self):
        '''A round trip to the mock: whatever it sent this client before answering (one sender's
        messages reach a receiver in order) is dispatched when this returns.'''
        self.call('/', OM, 'GetManagedObjects')
        self.drain()

    def finds(self, adapter=ADAPTER):
        '''Discovery rounds the mock has run on `adapter` (GetDiscovery's Finds).'''
        return int(self.mock('GetDiscovery', 'o', adapter)['Finds'])

    def wait_find(self, since, adapter=ADAPTER):
        '''Until a discovery round after `since` (a finds() value) has run: every device it found
        is announced (and dispatched here) when this returns.'''
        self.pump(lambda: self.finds(adapter) > since)
        self.sync()

    def signals(self, member=None, path=None, iface=None):
        return [e for e in self.events if e[0] == 'signal' and (member is None or e[3] == member)
                and (path is None or e[1] == path) and (iface is None or e[4][0] == iface)]

    def notifications(self, char_path):
        return [bytes(e[4][1]['Value']) for e in self.signals('PropertiesChanged', char_path)
                if e[4][0] == CHAR and 'Value' in e[4][1]]

    def char_path(self, device, uuid):
        for path, ifaces in self.objects().items():
            ch = ifaces.get(CHAR)
            if ch and str(ch['UUID']) == uuid and str(path).startswith(device + '/'):
                return str(path)
        raise AssertionError('no characteristic %s under %s' % (uuid, device))

    def connect(self, device):
        self.call(device, DEVICE, 'Connect')
        self.pump(lambda: any('ServicesResolved' in e[4][1] and e[4][1]['ServicesResolved']
                              for e in self.signals('PropertiesChanged', device)))

    def start_notify(self, char_path):
        self.call(char_path, CHAR, 'StartNotify')


class RigTest(unittest.TestCase):
    params = {}

    def setUp(self):
        self.rig = rigmod.Rig().start(self.params)
        self.clients = []
        self.c = self.client()

    def tearDown(self):
        for c in self.clients:
            try:
                c.close()
            except Exception:
                pass
        self.rig.stop()

    def client(self):
        c = Client(self.rig.address)
        self.clients.append(c)
        return c

    def add(self, address, name, profile, rssi=-50, known=False):
        return str(self.c.mock('AddLEDevice', 'sssnb', address, name, profile, rssi, known))

    def assertDBusError(self, name, message, fn, *args, **kw):
        with self.assertRaises(dbus.exceptions.DBusException) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.get_dbus_name(), name)
        if message is not None:
            self.assertEqual(cm.exception.get_dbus_message(), message)


class DiscoveryTest(RigTest):
    params = {'TemporaryTimeout': 0.3}

    def test_discovery_finds_d600_per_client(self):
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', -50)
        self.add(S550_ADDR, 'S550 [334455]', 's550', -60)
        c = self.c
        self.assertDBusError('org.bluez.Error.InvalidArguments', None, c.call, ADAPTER, 'org.bluez.Adapter1',
                             'SetDiscoveryFilter', 'a{sv}', opts(Colour='red'))
        self.assertDBusError('org.bluez.Error.InvalidArguments', None, c.call, ADAPTER, 'org.bluez.Adapter1',
                             'SetDiscoveryFilter', 'a{sv}', opts(Transport='usb'))
        c.call(ADAPTER, 'org.bluez.Adapter1', 'SetDiscoveryFilter', 'a{sv}',
               opts(UUIDs=dbus.Array([SCANNER_SERVICE], signature='s'), Transport='le'))
        self.assertEqual(list(c.call(ADAPTER, 'org.bluez.Adapter1', 'GetDiscoveryFilters')),
                         ['UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern'])
        finds = c.finds()
        c.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        self.assertDBusError('org.bluez.Error.InProgress', None, c.call, ADAPTER, 'org.bluez.Adapter1',
                             'StartDiscovery')
        c.wait_find(finds)  # the round ran: all it found is announced
        added = c.signals('InterfacesAdded')
        self.assertEqual([str(e[4][0]) for e in added], [D600])  # the S550 does not match the filter
        props = added[0][4][1][DEVICE]
        self.assertEqual(str(props['Address']), D600_ADDR)
        self.assertEqual(str(props['AddressType']), 'public')
        self.assertEqual(str(props['Name']), 'Socket D600 [7EF619]')
        self.assertEqual([str(u) for u in props['UUIDs']], [SCANNER_SERVICE])
        self.assertIsInstance(props['RSSI'], dbus.Int16)
        self.assertEqual(int(props['RSSI']), -50)
        self.assertEqual(props['ManufacturerData'].signature, 'qv')
        for key in ('Paired', 'Bonded', 'Trusted', 'Blocked', 'Connected', 'ServicesResolved', 'LegacyPairing'):
            self.assertIs(bool(props[key]), False, key)
        self.assertEqual(str(props['Adapter']), ADAPTER)
        self.assertTrue(c.call(ADAPTER, PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'Discovering'))

        # a second client has its own session; when it leaves, the first one's stays
        other = self.client()
        other.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        other.close()
        c.pump(lambda: int(c.mock('GetDiscovery', 'o', ADAPTER)['Sessions']) == 1)  # the mock saw it leave
        self.assertTrue(c.call(ADAPTER, PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'Discovering'))

        # stopping: RSSI invalidated, then the never-connected device goes after TemporaryTimeout
        c.call(ADAPTER, 'org.bluez.Adapter1', 'StopDiscovery')
        self.assertDBusError('org.bluez.Error.Failed', 'No discovery started', c.call, ADAPTER,
                             'org.bluez.Adapter1', 'StopDiscovery')
        c.pump(lambda: any(list(e[4][2]) == ['RSSI'] for e in c.signals('PropertiesChanged', D600)))
        self.assertFalse(c.call(ADAPTER, PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'Discovering'))
        c.pump(lambda: c.signals('InterfacesRemoved'))
        self.assertEqual(str(c.signals('InterfacesRemoved')[0][4][0]), D600)

    def test_session_ends_when_client_leaves(self):
        other = self.client()
        other.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        self.c.pump(lambda: self.c.call(ADAPTER, PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'Discovering'))
        other.close()
        self.c.pump(lambda: not self.c.call(ADAPTER, PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'Discovering'))


    def test_pattern_filtered_watch_sees_a_remembered_device_come_back(self):
        dev = self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', -50, True)
        c = self.c
        c.mock('SetInRange', 'ob', dev, False)
        watcher = self.client()
        watcher.call(ADAPTER, 'org.bluez.Adapter1', 'SetDiscoveryFilter', 'a{sv}',
                     opts(Transport='le', Pattern=D600_ADDR))
        finds = c.finds()
        watcher.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        state = c.mock('GetDiscovery', 'o', ADAPTER)
        self.assertIs(bool(state['Discovering']), True)
        self.assertEqual(int(state['Sessions']), 1)
        self.assertEqual([str(p) for p in state['Patterns']], [D600_ADDR])
        self.assertIsInstance(state['Now'], dbus.Double)
        watcher.wait_find(finds)  # a round ran with the device away: it found nothing
        self.assertEqual([e for e in watcher.signals('PropertiesChanged', D600) if 'RSSI' in e[4][1]], [])
        c.mock('SetInRange', 'ob', dev, True)
        # back in range: the remembered device's RSSI is set as its advertisement is heard
        watcher.pump(lambda: any('RSSI' in e[4][1] for e in watcher.signals('PropertiesChanged', D600)))
        watcher.call(ADAPTER, 'org.bluez.Adapter1', 'StopDiscovery')
        state = c.mock('GetDiscovery', 'o', ADAPTER)
        self.assertIs(bool(state['Discovering']), False)
        self.assertEqual(int(state['Sessions']), 0)
        self.assertDBusError('org.bluez.Mock.Error', None, c.mock, 'GetDiscovery', 'o', '/org/bluez/hci9')


class ConnectTest(RigTest):
    def test_connect_sequence_and_objects(self):
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', known=True)
        c = self.c
        c.call_async('connect', D600, DEVICE, 'Connect')
        c.pump(lambda: c.signals('InterfacesAdded', iface=None) and any(
            'org.bluez.Battery1' in e[4][1] for e in c.signals('InterfacesAdded')))
        seq = []
        for e in c.events:
            if e[0] == 'reply' and e[1] == 'connect':
                seq.append('reply')
            elif e[0] == 'signal' and e[3] == 'PropertiesChanged' and e[1] == D600:
                seq.extend(sorted('%s=%s' % (k, bool(v) if k != 'UUIDs' else len(v)) for k, v in e[4][1].items()))
            elif e[0] == 'signal' and e[3] == 'InterfacesAdded':
                seq.append(sorted(e[4][1])[0].split('.')[-1])
        seq = [s for i, s in enumerate(seq) if i == 0 or s != seq[i - 1]]
        kinds = [s for s in seq if s in ('reply', 'Connected=True', 'UUIDs=7', 'ServicesResolved=True', 'Battery1')]
        self.assertEqual(kinds, ['reply', 'Connected=True', 'UUIDs=7', 'ServicesResolved=True', 'Battery1'])
        first_gatt = seq.index('GattService1')
        self.assertTrue(seq.index('Connected=True') < first_gatt < seq.index('UUIDs=7'))
        objs = c.objects()
        self.assertEqual(int(objs[D600]['org.bluez.Battery1']['Percentage']), 90)
        services = {str(p): str(i['org.bluez.GattService1']['UUID']) for p, i in objs.items()
                    if 'org.bluez.GattService1' in i}
        self.assertNotIn('0000180f-0000-1000-8000-00805f9b34fb', services.values())  # claimed by the battery plugin
        self.assertNotIn('00001800-0000-1000-8000-00805f9b34fb', services.values())  # claimed by the GAP plugin
        self.assertIn(SCANNER_SERVICE, services.values())
        for p in services:
            self.assertRegex(p, r'^%s/service[0-9a-f]{4}$' % D600)
        scan = c.char_path(D600, SCAN_DATA)
        self.assertRegex(scan, r'^%s/service[0-9a-f]{4}/char[0-9a-f]{4}$' % D600)
        ch = objs[dbus.ObjectPath(scan)][CHAR]
        self.assertEqual(list(ch['Flags']), ['notify', 'indicate'])
        self.assertEqual(int(ch['MTU']), 23)
        self.assertFalse(ch['Notifying'])
        model = c.call(c.char_path(D600, '00002a24-0000-1000-8000-00805f9b34fb'), CHAR, 'ReadValue', 'a{sv}', opts())
        self.assertEqual(bytes(model), b'D600')
        maker = c.call(c.char_path(D600, '00002a29-0000-1000-8000-00805f9b34fb'), CHAR, 'ReadValue', 'a{sv}',
                       opts(offset=dbus.UInt16(7)))
        self.assertEqual(bytes(maker), b'Mobile, Inc.')
        # Connect on a connected device succeeds
        c.call(D600, DEVICE, 'Connect')

    def test_connect_errors(self):
        path = self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', known=True)
        c = self.c
        c.mock('SetInRange', 'ob', path, False)
        self.assertDBusError('org.bluez.Error.Failed', 'le-connection-abort-by-local', c.call, D600, DEVICE,
                             'Connect')
        c.mock('SetInRange', 'ob', path, True)
        # The second Connect must find the first pending: a link that takes 1 s (not 10 ms) leaves room
        # for a loaded machine between the two messages in the mock.
        c.mock('Configure', 'a{sv}', opts(ConnectDelay=1.0))
        c.call_async('one', D600, DEVICE, 'Connect')
        c.call_async('two', D600, DEVICE, 'Connect')
        c.pump(lambda: len([e for e in c.events if e[0] in ('reply', 'error')]) == 2)
        results = {e[1]: e for e in c.events if e[0] in ('reply', 'error')}
        self.assertEqual(results['one'][0], 'reply')
        self.assertEqual(results['two'][0], 'error')
        self.assertEqual(results['two'][2].get_dbus_name(), 'org.bluez.Error.InProgress')


class D600Test(RigTest):
    def setUp(self):
        RigTest.setUp(self)
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', known=True)
        self.c.connect(D600)

    def test_scan_data_notifications(self):
        c = self.c
        scan = c.char_path(D600, SCAN_DATA)
        frame = b'4F' + b'http://tags.springcard.com/uid/04A1B2C3/x' + b'\x00'
        self.assertEqual(int(c.mock('Scan', 'oay', D600, dbus.ByteArray(frame))), 0)  # nobody notifying: dropped
        c.start_notify(scan)
        self.assertTrue(c.call(scan, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        self.assertEqual(int(c.mock('Scan', 'oay', D600, dbus.ByteArray(frame))), 3)
        c.pump(lambda: len(c.notifications(scan)) == 3)
        self.assertTrue(all(len(n) <= 20 for n in c.notifications(scan)))
        self.assertEqual(b''.join(c.notifications(scan)), frame)
        # repeated values are notified every time
        c.mock('Scan', 'oay', D600, dbus.ByteArray(b'\x00'))
        c.mock('Scan', 'oay', D600, dbus.ByteArray(b'\x00'))
        c.pump(lambda: len(c.notifications(scan)) == 5)
        # ScanText and a stream where one notification ends one frame and starts the next
        c.mock('ScanText', 'oss', D600, '4F', 'st.com/nfc-rfid')
        c.pump(lambda: len(c.notifications(scan)) == 6)
        self.assertEqual(c.notifications(scan)[-1], b'4Fst.com/nfc-rfid\x00')
        n = int(c.mock('ScanFrames', 'oaay', D600, [dbus.ByteArray(b'01ABCDEFGHIJ\x00'), dbus.ByteArray(b'4Fxyz\x00')]))
        self.assertEqual(n, 1)
        c.pump(lambda: len(c.notifications(scan)) == 7)
        self.assertEqual(c.notifications(scan)[-1], b'01ABCDEFGHIJ\x004Fxyz\x00')
        # storm: count frames, chunked
        c.mock('SetChunkSize', 'u', 8)
        self.assertEqual(int(c.mock('Storm', 'ouay', D600, 100, dbus.ByteArray(b'4Fabc\x00'))), 75)
        c.pump(lambda: len(c.notifications(scan)) == 82)
        self.assertEqual(b''.join(c.notifications(scan)[7:]), b'4Fabc\x00' * 100)

    def test_config_block_answers(self):
        c = self.c
        cfg = c.char_path(D600, CONFIG_IO)
        c.start_notify(cfg)
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x02\xae\x07'), opts(type='request'))
        c.pump(lambda: c.notifications(cfg))
        self.assertEqual(c.notifications(cfg), [b'\x01\x00'])
        state = c.mock('GetState', 'o', D600)
        self.assertEqual(int(state['Mode']), 7)
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x03\xae\x07'), opts())  # AXM's form
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x02\xae\x05'), opts())
        c.pump(lambda: len(c.notifications(cfg)) == 3)
        self.assertEqual(c.notifications(cfg)[1:], [b'\x01\x00', b'\x01\x01'])
        # write register then read it back; an unwritten register reads as its own address
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x04\x0d\x42\x01\x02'), opts())
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x02\x0e\x42'), opts())
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x02\x0e\x10'), opts())
        c.pump(lambda: len(c.notifications(cfg)) == 6)
        self.assertEqual(c.notifications(cfg)[3:], [b'\x01\x00', b'\x03\x00\x01\x02', b'\x02\x00\x10'])
        # a two-block command: 0D with 20 payload bytes
        payload = bytes(range(0x50, 0x64))
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(bytes([19 | 0x20, 0x0D]) + payload[:18]), opts())
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(bytes([2 | 0x80]) + payload[18:]), opts())
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x02\x0e\x50'), opts())
        c.pump(lambda: len(c.notifications(cfg)) == 9)
        self.assertEqual(c.notifications(cfg)[6], b'\x01\x00')
        self.assertEqual(c.notifications(cfg)[7], bytes([0x20 | 19, 0x00]) + payload[1:19])
        self.assertEqual(c.notifications(cfg)[8], bytes([0x80 | 1]) + payload[19:])
        # unknown 0F magic: status 2; delete bonds: status 0, Paired/Bonded go false
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x05\x0f\x01\x02\x03\x04'), opts())
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x05\x0f\xfe\xda\xfa\xed'), opts())
        c.pump(lambda: len(c.notifications(cfg)) == 11)
        self.assertEqual(c.notifications(cfg)[9:], [b'\x01\x02', b'\x01\x00'])
        self.assertFalse(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Paired'))
        self.assertFalse(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Bonded'))
        # scan control writes are recorded
        ctl = c.char_path(D600, SCAN_CONTROL)
        for cmd in (b'\xa1', b'\x9f', b'\x00'):
            c.call(ctl, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(cmd), opts(type='request'))
        writes = [(str(u), bytes(b)) for u, b in c.mock('GetWrites', 'o', D600)]
        self.assertEqual(writes[0], (CONFIG_IO, b'\x02\xae\x07'))
        self.assertEqual([b for u, b in writes if u == SCAN_CONTROL], [b'\xa1', b'\x9f', b'\x00'])

    def test_link_loss_and_reconnect(self):
        c = self.c
        scan = c.char_path(D600, SCAN_DATA)
        c.start_notify(scan)
        before = len(c.events)
        c.mock('LinkLoss', 'o', D600)
        c.pump(lambda: c.signals('InterfacesRemoved'))
        after = [e for e in c.events[before:] if e[0] == 'signal' and e[3] in ('PropertiesChanged', 'InterfacesRemoved')
                 and e[1] in (D600, '/')]
        self.assertEqual(len(after), 2)
        self.assertEqual(after[0][3], 'PropertiesChanged')
        self.assertEqual(dict((str(k), bool(v)) for k, v in after[0][4][1].items()),
                         {'Connected': False, 'ServicesResolved': False})
        self.assertEqual((str(after[1][4][0]), list(after[1][4][1])), (D600, ['org.bluez.Battery1']))
        self.assertIn(dbus.ObjectPath(scan), c.objects())  # the GATT cache stays exported
        self.assertDBusError('org.bluez.Error.Failed', 'Not connected', c.call,
                             c.char_path(D600, '00002a24-0000-1000-8000-00805f9b34fb'), CHAR, 'ReadValue', 'a{sv}',
                             opts())
        self.assertEqual(int(c.mock('ScanText', 'oss', D600, '4F', 'lost')), 0)
        before = len(c.signals('InterfacesAdded'))
        c.connect(D600)
        c.pump(lambda: any('org.bluez.Battery1' in e[4][1] for e in c.signals('InterfacesAdded')[before:]))
        self.assertEqual(len(c.signals('InterfacesAdded')), before + 1)  # only Battery1: GATT was cached
        self.assertTrue(c.call(scan, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        self.assertEqual(int(c.mock('ScanText', 'oss', D600, '4F', 'back')), 1)  # the session re-armed
        c.pump(lambda: c.notifications(scan))
        self.assertEqual(c.notifications(scan), [b'4Fback\x00'])

    def test_remove_device_order(self):
        c = self.c
        gatt = [str(p) for p in c.objects() if str(p).startswith(D600 + '/')]
        c.call_async('remove', ADAPTER, 'org.bluez.Adapter1', 'RemoveDevice', 'o', dbus.ObjectPath(D600))
        c.pump(lambda: any(e[0] == 'reply' for e in c.events))
        seq = [e for e in c.events if e[0] == 'reply' or (e[0] == 'signal' and e[3] in
                                                            ('InterfacesRemoved', 'PropertiesChanged') and
                                                            str(e[1]).startswith(('/', D600)))]
        seq = [e for e in seq if e[0] == 'reply' or e[3] == 'InterfacesRemoved' or e[1] == D600]
        seq = seq[[i for i, e in enumerate(seq) if e[0] == 'signal' and e[3] == 'PropertiesChanged'
                   and 'Connected' in e[4][1] and not e[4][1]['Connected']][0]:]
        removed = [(str(e[4][0]), list(e[4][1])) for e in seq if e[0] == 'signal' and e[3] == 'InterfacesRemoved']
        self.assertEqual(removed[0], (D600, ['org.bluez.Battery1']))
        self.assertEqual(removed[-1][0], D600)
        self.assertIn('org.bluez.Device1', removed[-1][1])
        self.assertEqual(sorted(p for p, _ in removed[1:-1]), sorted(gatt))
        order = [p for p, _ in removed[1:-1]]
        for i, p in enumerate(order):  # children first: nothing after p lies under p
            for q in order[i + 1:]:
                self.assertFalse(q.startswith(p + '/'), (p, q))
        self.assertEqual(seq[-1][0], 'reply')
        self.assertNotIn(dbus.ObjectPath(D600), c.objects())
        self.assertDBusError('org.bluez.Error.DoesNotExist', 'Does Not Exist', c.call, ADAPTER,
                             'org.bluez.Adapter1', 'RemoveDevice', 'o', dbus.ObjectPath(D600))

    def test_gatt_errors(self):
        c = self.c
        scan = c.char_path(D600, SCAN_DATA)
        ctl = c.char_path(D600, SCAN_CONTROL)
        self.assertDBusError('org.bluez.Error.NotPermitted', 'Read not permitted', c.call, scan, CHAR, 'ReadValue',
                             'a{sv}', opts())
        self.assertDBusError('org.bluez.Error.NotSupported', None, c.call, scan, CHAR, 'WriteValue', 'aya{sv}',
                             dbus.ByteArray(b'\x00'), opts())
        self.assertDBusError('org.bluez.Error.InvalidArguments', 'Invalid Length', c.call, ctl, CHAR, 'WriteValue',
                             'aya{sv}', dbus.ByteArray(bytes(513)), opts())
        self.assertDBusError('org.bluez.Error.NotSupported', None, c.call, ctl, CHAR, 'StartNotify')
        self.assertDBusError('org.bluez.Error.Failed', 'No notify session started', c.call, scan, CHAR, 'StopNotify')
        c.start_notify(scan)
        self.assertDBusError('org.bluez.Error.Failed', 'Already notifying', c.call, scan, CHAR, 'StartNotify')
        c.call(scan, CHAR, 'StopNotify')
        self.assertFalse(c.call(scan, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        c.call(D600, DEVICE, 'Disconnect')
        self.assertDBusError('org.bluez.Error.NotConnected', 'Not Connected', c.call, D600, DEVICE, 'Disconnect')
        self.assertDBusError('org.bluez.Error.Failed', 'Not connected', c.call, ctl, CHAR, 'WriteValue', 'aya{sv}',
                             dbus.ByteArray(b'\xa1'), opts())

    def test_notify_sessions_are_per_client(self):
        c = self.c
        scan = c.char_path(D600, SCAN_DATA)
        other = self.client()
        c.start_notify(scan)
        other.start_notify(scan)
        gone = other.name
        other.close()
        # the mock saw the other client leave: its session is gone, ours stays
        c.pump(lambda: gone not in [str(n) for n in c.mock('GetState', 'o', D600)['NotifySessions'].get(SCAN_DATA, [])])
        self.assertTrue(c.call(scan, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        third = self.client()
        third.start_notify(scan)
        c.call(scan, CHAR, 'StopNotify')
        self.assertTrue(c.call(scan, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        third.close()
        c.pump(lambda: not c.call(scan, PROPS, 'Get', 'ss', CHAR, 'Notifying'))


class PairingTest(RigTest):
    def test_pair_needs_agent(self):
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600-nopair')
        c = self.c
        other = self.client()
        other.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        c.pump(lambda: c.signals('InterfacesAdded'))
        self.assertDBusError('org.bluez.Error.AuthenticationFailed', None, c.call, D600, DEVICE, 'Pair')
        self.assertDBusError('org.bluez.Error.InvalidArguments', None, c.call, '/org/bluez', 'org.bluez.AgentManager1',
                             'RegisterAgent', 'os', dbus.ObjectPath('/test/agent'), 'Telepathy')
        c.call('/org/bluez', 'org.bluez.AgentManager1', 'RegisterAgent', 'os', dbus.ObjectPath('/test/agent'),
               'NoInputNoOutput')
        c.call('/org/bluez', 'org.bluez.AgentManager1', 'RequestDefaultAgent', 'o', dbus.ObjectPath('/test/agent'))
        c.call(D600, DEVICE, 'Pair')
        self.assertTrue(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Paired'))
        self.assertTrue(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Bonded'))
        self.assertTrue(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Connected'))
        self.assertFalse(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Trusted'))
        c.call(D600, PROPS, 'Set', 'ssv', DEVICE, 'Trusted', dbus.Boolean(True, variant_level=1))
        self.assertTrue(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Trusted'))
        self.assertDBusError('org.freedesktop.DBus.Error.PropertyReadOnly', None, c.call, D600, PROPS, 'Set', 'ssv',
                             DEVICE, 'Paired', dbus.Boolean(False, variant_level=1))
        # the no-pairing variant: last two bytes of every D600 UUID swapped
        uuids = [str(u) for u in c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'UUIDs')]
        self.assertIn('6cb501b7-96f6-4eef-acb1-d7535f15f03c', uuids)
        c.char_path(D600, '1254fc72-336e-4bb2-a0a8-71c7d28dce73')


class ClassicDeviceTest(RigTest):
    '''BR/EDR devices (AddClassicDevice): found only by a "bredr" or "auto" discovery, Class and
    128-bit UUIDs in Device1, no GATT, paired and trusted like LE devices.'''
    params = {'TemporaryTimeout': 0.3}
    SCANNER = 'A1220169-E854-473E-9CB5-873ACBDF1F13'

    def add_classic(self, address, name, cod, uuids, known=False):
        return str(self.c.mock('AddClassicDevice', 'ssuasnb', address, name, cod,
                               dbus.Array(uuids, signature='s'), -60, known))

    def discover(self, transport):
        c = self.client()
        c.call(ADAPTER, 'org.bluez.Adapter1', 'SetDiscoveryFilter', 'a{sv}', opts(Transport=transport))
        finds = c.finds()
        c.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        c.wait_find(finds)
        found = {str(e[4][0]): e[4][1] for e in c.signals('InterfacesAdded') if DEVICE in e[4][1]}
        c.call(ADAPTER, 'org.bluez.Adapter1', 'StopDiscovery')
        return found

    def test_classic_device_found_by_bredr_discovery(self):
        path = self.add_classic('00:06:66:0A:1B:2C', 'Barcode scanner', 0x000540, ['1101', self.SCANNER])
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600')
        le = self.discover('le')
        self.assertEqual(list(le), [D600])
        self.assertNotIn('Class', le[D600][DEVICE])
        bredr = self.discover('bredr')
        self.assertEqual(list(bredr), [path])
        props = bredr[path][DEVICE]
        self.assertEqual(str(props['Address']), '00:06:66:0A:1B:2C')
        self.assertEqual(str(props['AddressType']), 'public')
        self.assertIsInstance(props['Class'], dbus.UInt32)
        self.assertEqual(int(props['Class']), 0x000540)
        self.assertEqual([str(u) for u in props['UUIDs']],
                         ['00001101-0000-1000-8000-00805f9b34fb', self.SCANNER.lower()])
        self.assertNotIn('ManufacturerData', props)
        # both expire (TemporaryTimeout), so "auto" announces both again
        self.c.pump(lambda: not {path, D600} & {str(p) for p in self.c.objects()})
        self.assertEqual(sorted(self.discover('auto')), sorted([path, D600]))
        with self.assertRaises(dbus.exceptions.DBusException):
            self.add_classic('00:06:66:0A:1B:2D', 'x', 0x1000000, [])
        with self.assertRaises(dbus.exceptions.DBusException):
            self.add_classic('00:06:66:0A:1B:2E', 'x', 0, ['not-a-uuid'])

    def test_classic_pair_and_trust(self):
        path = self.add_classic('00:06:66:0A:1B:2C', 'Socket CHS [0A1B2C]', 0x000540, ['1101'])
        c = self.c
        # Found, then paired: it must not expire (the class's 0.3 s) before a loaded machine gets to Pair.
        c.mock('Configure', 'a{sv}', opts(TemporaryTimeout=60.0))
        self.discover('bredr')
        self.assertDBusError('org.bluez.Error.AuthenticationFailed', None, c.call, path, DEVICE, 'Pair')
        c.call('/org/bluez', 'org.bluez.AgentManager1', 'RegisterAgent', 'os', dbus.ObjectPath('/test/agent'),
               'NoInputNoOutput')
        c.call(path, DEVICE, 'Pair')
        self.assertDBusError('org.bluez.Error.AlreadyExists', None, c.call, path, DEVICE, 'Pair')
        c.call(path, PROPS, 'Set', 'ssv', DEVICE, 'Trusted', dbus.Boolean(True, variant_level=1))
        state = c.mock('GetState', 'o', dbus.ObjectPath(path))
        self.assertEqual(str(state['Transport']), 'bredr')
        self.assertTrue(state['Paired'])
        self.assertTrue(state['Trusted'])
        # no GATT objects under a BR/EDR device
        self.assertEqual([p for p in c.objects() if str(p).startswith(path + '/')], [])
        c.call(path, DEVICE, 'Disconnect')
        c.mock('SetInRange', 'ob', dbus.ObjectPath(path), False)
        self.assertDBusError('org.bluez.Error.Failed', 'br-connection-page-timeout', c.call, path, DEVICE, 'Connect')


class MoreBehaviourTest(RigTest):
    # A pairing takes this long: CancelPairing, sent right after Pair, must find it pending (the margin
    # is what a loaded machine may take between the two messages in the mock).
    params = {'PairDelay': 1.0}

    def test_cancel_pairing_and_implicit_pairing(self):
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', known=False)
        c = self.c
        c.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        c.pump(lambda: c.signals('InterfacesAdded'))
        c.call('/org/bluez', 'org.bluez.AgentManager1', 'RegisterAgent', 'os', dbus.ObjectPath('/a'), '')
        c.call_async('pair', D600, DEVICE, 'Pair')
        c.call(D600, DEVICE, 'CancelPairing')  # after Pair on this connection: the pairing (PairDelay) is pending
        c.pump(lambda: any(e[0] == 'error' for e in c.events))
        self.assertEqual([e[2].get_dbus_name() for e in c.events if e[0] == 'error'],
                         ['org.bluez.Error.AuthenticationCanceled'])
        self.assertDBusError('org.bluez.Error.DoesNotExist', None, c.call, D600, DEVICE, 'CancelPairing')
        # not paired: the first access to a protected characteristic pairs (BlueZ raises security)
        c.connect(D600)
        self.assertFalse(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Paired'))
        cfg = c.char_path(D600, CONFIG_IO)
        c.start_notify(cfg)
        self.assertTrue(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Paired'))
        self.assertTrue(c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Bonded'))
        c.mock('Configure', 'a{sv}', opts(ImplicitPairing=False))
        c.call(cfg, CHAR, 'WriteValue', 'aya{sv}', dbus.ByteArray(b'\x05\x0f\xfe\xda\xfa\xed'), opts())
        c.pump(lambda: not c.call(D600, PROPS, 'Get', 'ss', DEVICE, 'Paired'))
        self.assertDBusError('org.bluez.Error.NotPermitted', 'Not paired', c.call, cfg, CHAR, 'WriteValue', 'aya{sv}',
                             dbus.ByteArray(b'\x02\xae\x07'), opts())

    def test_notify_before_connect_and_battery_gatt(self):
        c = self.c
        c.mock('Configure', 'a{sv}', opts(BatteryPlugin=False, ResolvedBeforeServices=True))
        path = self.add('00:00:00:00:00:01', 'Generic', 'generic', known=True)
        c.connect(path)
        c.pump(lambda: any(str(e[4][0]).startswith(path + '/') for e in c.signals('InterfacesAdded')))
        objs = c.objects()
        self.assertNotIn('org.bluez.Battery1', objs[dbus.ObjectPath(path)])
        seq = [','.join(e[4][1]) if e[3] == 'PropertiesChanged' else 'gatt' for e in c.signals()
               if (e[3] == 'PropertiesChanged' and e[1] == path)
               or (e[3] == 'InterfacesAdded' and str(e[4][0]).startswith(path + '/'))]
        self.assertLess(seq.index('ServicesResolved'), seq.index('gatt'))
        level = c.char_path(path, '00002a19-0000-1000-8000-00805f9b34fb')
        c.call(path, DEVICE, 'Disconnect')
        c.start_notify(level)  # disconnected: accepted, armed on the next connection
        self.assertFalse(c.call(level, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        c.mock('SetBattery', 'oy', path, 55)
        c.connect(path)
        self.assertTrue(c.call(level, PROPS, 'Get', 'ss', CHAR, 'Notifying'))
        c.mock('SetBattery', 'oy', path, 54)
        c.pump(lambda: c.notifications(level))
        self.assertEqual(c.notifications(level), [b'\x36'])
        self.assertEqual(bytes(c.call(level, CHAR, 'ReadValue', 'a{sv}', opts())), b'\x36')


    def test_cccd_written_only_by_the_first_session(self):
        c = self.c
        c.mock('Configure', 'a{sv}', opts(BatteryPlugin=False))
        path = self.add('00:00:00:00:00:02', 'Generic', 'generic', known=True)
        c.connect(path)
        uuid = '00002a19-0000-1000-8000-00805f9b34fb'
        level = c.char_path(path, uuid)

        def writes():
            return [(str(u), bytes(b)) for u, b in c.mock('GetCccdWrites', 'o', path)]
        other = self.client()
        c.start_notify(level)
        other.start_notify(level)
        self.assertEqual(writes(), [(uuid, b'\x01\x00')])
        c.call(level, CHAR, 'StopNotify')
        self.assertEqual(writes(), [(uuid, b'\x01\x00')])
        other.close()
        c.pump(lambda: len(writes()) == 2)
        self.assertEqual(writes()[-1], (uuid, b'\x00\x00'))
        c.mock('ClearWrites', 'o', path)
        self.assertEqual(writes(), [])


class CommandLineTest(unittest.TestCase):
    def test_start_ctl_stop(self):
        import subprocess
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rig.py')
        # start returns once the bus accepts and org.bluez answers (it waits on those, not on a clock):
        # the ctl right after it must work at once. No wall-clock bound: on a loaded machine a start
        # takes what the scheduler gives it; the timeout only catches a hang.
        out = subprocess.run([script, 'start'], check=True, capture_output=True, text=True, timeout=120).stdout
        env = dict(line.split('=', 1) for line in out.splitlines())
        self.assertEqual(sorted(env), ['DBUS_SYSTEM_BUS_ADDRESS', 'RIG_BUS_PID', 'RIG_DIR', 'RIG_MOCK_PID'])
        self.assertEqual(env['DBUS_SYSTEM_BUS_ADDRESS'], 'unix:path=%s/bus' % env['RIG_DIR'])
        try:
            run = dict(os.environ, RIG_DIR=env['RIG_DIR'])
            path = subprocess.run([script, 'ctl', 'AddLEDevice', D600_ADDR, 'D600', 'd600', '--', '-40', 'true'],
                                  check=True, capture_output=True, text=True, env=run).stdout
            self.assertEqual(path.strip(), '"%s"' % D600)
            bad = subprocess.run([script, 'ctl', 'SetBattery', D600], capture_output=True, text=True, env=run)
            self.assertEqual(bad.returncode, 1)
            tree = subprocess.run(['busctl', '--system', 'tree', 'org.bluez', '--list'], check=True,
                                  capture_output=True, text=True, env=dict(run, **env)).stdout
            self.assertIn(D600, tree.split())
        finally:
            subprocess.run([script, 'stop', '--dir', env['RIG_DIR']], check=True)
        self.assertFalse(os.path.exists(env['RIG_DIR']))
        for pid in (env['RIG_BUS_PID'], env['RIG_MOCK_PID']):
            self.assertFalse(rigmod._alive(int(pid)))


class S550Test(RigTest):
    def test_tag_read_matches_axm_frame(self):
        self.add(S550_ADDR, 'S550 [334455]', 's550', known=True)
        c = self.c
        c.connect(S550)
        events = c.char_path(S550, DIRECT_EVENTS)
        self.assertEqual(events, S550 + '/service0053/char0059')
        self.assertEqual(c.char_path(S550, '18227ca8-9574-4d92-850c-b55f84c6b577'), S550 + '/service0053/char0054')
        self.assertIn(dbus.ObjectPath(events + '/desc005b'), c.objects())
        c.start_notify(events)
        n = int(c.mock('TagRead', 'osayy', S550, '02C40044F99DB6', dbus.ByteArray(b'st.com/nfc-rfid'), 1))
        self.assertEqual(n, 2)
        c.pump(lambda: len(c.notifications(events)) == 2)
        expected = bytes.fromhex('CC5B0020B0C10420030100C20702C40044F99DB6C30F') + b'st.com/nfc-rfid'
        self.assertEqual(b''.join(c.notifications(events)), expected)
        c.mock('TagInserted', 'oysy', S550, 0, '04A1B2C3', 1)
        c.mock('TagRemoved', 'oy', S550, 0)
        c.pump(lambda: len(c.notifications(events)) == 4)
        self.assertEqual(c.notifications(events)[2], bytes.fromhex('CC5B000FB1C00100C10400030100C20404A1B2C3'))
        self.assertEqual(c.notifications(events)[3], bytes.fromhex('CC5B0003B1C00100'))
        c.mock('SetBattery', 'oy', S550, 42)
        c.pump(lambda: c.signals('PropertiesChanged', S550, 'org.bluez.Battery1'))
        self.assertEqual(int(c.call(S550, PROPS, 'Get', 'ss', 'org.bluez.Battery1', 'Percentage')), 42)
        sn = c.call(c.char_path(S550, '00002a25-0000-1000-8000-00805f9b34fb'), CHAR, 'ReadValue', 'a{sv}', opts())
        self.assertEqual(bytes(sn), b'C01122334455')


class StopBluezTest(RigTest):
    def test_stop_bluez_leaves_the_bus_without_org_bluez_and_restart_brings_it_back(self):
        import subprocess
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rig.py')
        subprocess.run([script, 'stop-bluez', '--dir', self.rig.dir], check=True)
        self.assertFalse(rigmod._alive(self.rig.mock_pid))
        has = self.c.bus.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                                       'NameHasOwner', 's', ('org.bluez',))
        self.assertFalse(bool(has))
        self.assertDBusError('org.freedesktop.DBus.Error.ServiceUnknown', None, self.c.objects)
        self.rig.restart_bluez()
        self.assertIn(dbus.ObjectPath(ADAPTER), self.client().objects())


class RestartTest(RigTest):
    def test_restart_bluez(self):
        self.add(D600_ADDR, 'Socket D600 [7EF619]', 'd600', known=True)
        self.add(S550_ADDR, 'S550 [334455]', 's550')
        c = self.c
        c.connect(D600)
        owners = []
        c.bus.add_signal_receiver(lambda name, old, new: owners.append((str(old) != '', str(new) != '')),
                                  signal_name='NameOwnerChanged', dbus_interface='org.freedesktop.DBus',
                                  arg0='org.bluez')
        old_pid = self.rig.mock_pid
        self.rig.restart_bluez()
        self.assertNotEqual(self.rig.mock_pid, old_pid)
        c.pump(lambda: len(owners) >= 2)
        self.assertEqual(owners[:2], [(True, False), (False, True)])
        objs = c.objects()
        self.assertIn(dbus.ObjectPath(ADAPTER), objs)
        self.assertIn(dbus.ObjectPath(D600), objs)  # known (bonded) device re-exported
        self.assertNotIn(dbus.ObjectPath(S550), objs)  # undiscovered device is not
        self.assertFalse(objs[dbus.ObjectPath(D600)][DEVICE]['Connected'])
        self.assertTrue(objs[dbus.ObjectPath(D600)][DEVICE]['Paired'])
        c.connect(D600)


class PowerStateTest(RigTest):
    '''Adapter1.PowerState as bluetoothd 5.66 has it, rfkill blocks, adapters in any state.'''

    def props(self, path=ADAPTER):
        return self.c.call(path, PROPS, 'GetAll', 's', 'org.bluez.Adapter1')

    def power_changes(self, path=ADAPTER):
        return [{str(k): (str(v) if k == 'PowerState' else bool(v)) for k, v in e[4][1].items()
                 if k in ('PowerState', 'Powered')}
                for e in self.c.signals('PropertiesChanged', path)
                if e[4][0] == 'org.bluez.Adapter1' and ('PowerState' in e[4][1] or 'Powered' in e[4][1])]

    def test_default_adapter_is_on(self):
        p = self.props()
        self.assertEqual((str(p['PowerState']), bool(p['Powered'])), ('on', True))

    def test_adapters_added_in_each_state(self):
        for name, state, powered in (('hci1', 'off', False), ('hci2', 'off-blocked', False), ('hci3', 'on', True),
                                     ('hci4', 'off-enabling', False), ('hci5', 'on-disabling', False)):
            path = self.c.mock('AddAdapterInState', 'sss', name, '00:AA:01:00:00:0%s' % name[-1], state)
            self.assertEqual(str(path), '/org/bluez/' + name)
            p = self.props(path)
            self.assertEqual((str(p['PowerState']), bool(p['Powered'])), (state, powered), name)
        self.assertDBusError('org.bluez.Mock.Error', None, self.c.mock, 'AddAdapterInState', 'sss', 'hci9',
                             '00:AA:01:00:00:09', 'blocked')

    def test_blocked_adapter_refuses_power_on_with_bluetoothd_error(self):
        path = str(self.c.mock('AddAdapterInState', 'sss', 'hci1', '00:AA:01:00:00:02', 'off-blocked'))
        self.assertDBusError('org.bluez.Error.Failed', 'Blocked through rfkill', self.c.call, path, PROPS, 'Set',
                             'ssv', 'org.bluez.Adapter1', 'Powered', dbus.Boolean(True))
        self.assertEqual(str(self.props(path)['PowerState']), 'off-blocked')
        self.assertDBusError('org.bluez.Error.NotReady', 'Resource Not Ready', self.c.call, path,
                             'org.bluez.Adapter1', 'StartDiscovery')
        # rfkill unblock: "off", and now it powers on through "off-enabling".
        self.c.mock('SetPowerState', 'os', path, 'off')
        self.c.call(path, PROPS, 'Set', 'ssv', 'org.bluez.Adapter1', 'Powered', dbus.Boolean(True))
        p = self.props(path)
        self.assertEqual((str(p['PowerState']), bool(p['Powered'])), ('on', True))
        self.c.pump(lambda: len(self.power_changes(path)) >= 3)
        self.assertEqual(self.power_changes(path), [{'PowerState': 'off'}, {'PowerState': 'off-enabling'},
                                                    {'PowerState': 'on', 'Powered': True}])

    def test_rfkill_block_ends_discovery_and_powering_off_passes_on_disabling(self):
        c = self.c
        c.call(ADAPTER, 'org.bluez.Adapter1', 'StartDiscovery')
        c.pump(lambda: bool(self.props()['Discovering']))
        c.mock('SetPowerState', 'os', ADAPTER, 'off-blocked')
        p = self.props()
        self.assertEqual((str(p['PowerState']), bool(p['Powered']), bool(p['Discovering'])),
                         ('off-blocked', False, False))
        c.mock('SetPowerState', 'os', ADAPTER, 'on')
        c.call(ADAPTER, PROPS, 'Set', 'ssv', 'org.bluez.Adapter1', 'Powered', dbus.Boolean(False))
        c.pump(lambda: len(self.power_changes()) >= 4)
        self.assertEqual(self.power_changes(), [
            {'PowerState': 'off-blocked', 'Powered': False}, {'PowerState': 'on', 'Powered': True},
            {'PowerState': 'on-disabling'}, {'PowerState': 'off', 'Powered': False}])
        self.assertDBusError('org.bluez.Mock.Error', None, c.mock, 'SetPowerState', 'os', '/org/bluez/hci7', 'on')

    def test_power_state_survives_a_bluetoothd_restart(self):
        self.c.mock('AddAdapterInState', 'sss', 'hci1', '00:AA:01:00:00:02', 'off-blocked')
        self.rig.restart_bluez()
        c = self.client()
        self.assertEqual(str(c.call('/org/bluez/hci1', PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'PowerState')),
                         'off-blocked')
        self.assertEqual(str(c.call(ADAPTER, PROPS, 'Get', 'ss', 'org.bluez.Adapter1', 'PowerState')), 'on')


class StartOptionsTest(unittest.TestCase):
    '''rig.py start --power-state / --no-adapter / --deny-bluez-for.'''

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rig.py')

    def start(self, *options):
        import subprocess
        out = subprocess.run([self.script, 'start'] + list(options), check=True, capture_output=True,
                             text=True).stdout
        env = dict(line.split('=', 1) for line in out.splitlines())
        self.addCleanup(subprocess.run, [self.script, 'stop', '--dir', env['RIG_DIR']], check=True)
        return env

    def adapters(self, env):
        bus = dbus.bus.BusConnection(env['DBUS_SYSTEM_BUS_ADDRESS'])
        self.addCleanup(bus.close)
        objects = bus.call_blocking('org.bluez', '/', OM, 'GetManagedObjects', '', ())
        return {str(p): str(i['org.bluez.Adapter1']['PowerState']) for p, i in objects.items()
                if 'org.bluez.Adapter1' in i}

    def test_power_state_and_no_adapter(self):
        self.assertEqual(self.adapters(self.start('--power-state', 'off-blocked')), {ADAPTER: 'off-blocked'})
        self.assertEqual(self.adapters(self.start('--power-state', 'off')), {ADAPTER: 'off'})
        self.assertEqual(self.adapters(self.start('--no-adapter')), {})

    @unittest.skipUnless(os.geteuid() == 0, 'needs root to run a client as another user')
    def test_deny_bluez_for_a_user_is_access_denied_from_the_bus(self):
        import shutil
        import subprocess
        if shutil.which('setpriv') is None or shutil.which('dbus-send') is None:
            self.skipTest('setpriv or dbus-send missing')
        env = self.start('--deny-bluez-for', 'nobody')
        run = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=env['DBUS_SYSTEM_BUS_ADDRESS'])
        as_nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'dbus-send', '--system',
                     '--print-reply']
        denied = subprocess.run(as_nobody + ['--dest=org.bluez', '/', OM + '.GetManagedObjects'],
                                capture_output=True, text=True, env=run)
        self.assertEqual(denied.returncode, 1, denied)
        self.assertTrue(denied.stderr.startswith('Error org.freedesktop.DBus.Error.AccessDenied: '), denied.stderr)
        # The bus itself still answers that user (it knows who owns org.bluez), and root is not denied.
        pid = subprocess.run(as_nobody + ['--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
                                          'org.freedesktop.DBus.GetConnectionUnixProcessID', 'string:org.bluez'],
                             capture_output=True, text=True, env=run)
        self.assertEqual(pid.returncode, 0, pid)
        self.assertEqual(pid.stdout.split()[-1], env['RIG_MOCK_PID'])
        self.assertIn(ADAPTER, self.adapters(env))

    def test_bluetoothd_argv0_names_the_mock_in_cmdline_and_survives_a_restart(self):
        env = self.start('--bluetoothd-argv0', '/opt/fake/bluetoothd')
        pid = int(env['RIG_MOCK_PID'])
        self.assertEqual(rigmod._cmdline(pid).split()[0], '/opt/fake/bluetoothd')
        self.assertEqual(os.path.realpath('/proc/%d/exe' % pid), os.path.realpath(rigmod.DEBIAN_PYTHON))
        self.assertIn(ADAPTER, self.adapters(env))
        rig = rigmod.Rig(env['RIG_DIR']).load()
        rig.restart_bluez()
        self.assertEqual(rigmod._cmdline(rig.mock_pid).split()[0], '/opt/fake/bluetoothd')
        rig.close()

    def test_deny_bluez_for_an_unknown_user_fails_the_start(self):
        import subprocess
        done = subprocess.run([self.script, 'start', '--deny-bluez-for', 'no-such-user-h14'], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr, 'rig.py: no user no-such-user-h14\n')
        self.assertEqual(done.stdout, '')


if __name__ == '__main__':
    unittest.main()
