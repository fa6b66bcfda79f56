#!/usr/bin/python3
'''The BlueZ test rig: a private "system" dbus-daemon carrying the bluez566.py mock.

  rig.py start [--dir DIR] [--param KEY=VALUE]... [--stop-with PID]
               [--power-state STATE | --no-adapter] [--deny-bluez-for USER]... [--bluetoothd-argv0 PATH]
                                                    start bus + mock, add hci0, print the environment;
                                                    --stop-with: stop the rig by itself when PID exits;
                                                    --power-state: hci0's Adapter1.PowerState (on, off,
                                                    off-blocked, ...); --no-adapter: no hci0;
                                                    --deny-bluez-for: the bus refuses USER's messages
                                                    to org.bluez (AccessDenied), as a system bus whose
                                                    policy allows org.bluez to a group USER is not in;
                                                    --bluetoothd-argv0: the mock's argv[0] (what
                                                    /proc/PID/cmdline names; the exe stays python3)
  rig.py stop [--dir DIR] [--keep]                  SIGKILL the bus (the mock exits with it), remove DIR
  rig.py restart-bluez [--dir DIR]                  kill the mock and start it again (bluetoothd restart)
  rig.py stop-bluez [--dir DIR]                     kill only the mock: the bus stays, org.bluez has no owner
  rig.py ctl [--dir DIR] METHOD [ARG]...            call org.bluez.Mock.METHOD on /org/bluez
  rig.py env [--dir DIR]                            print the environment of a running rig

`start` prints (and writes to DIR/rig.env) shell assignments:
  DBUS_SYSTEM_BUS_ADDRESS=unix:path=DIR/bus
  RIG_DIR=DIR
  RIG_BUS_PID=...
  RIG_MOCK_PID=...
so `eval "$(Tests/Rigs/rig.py start)"` sets up a shell. Without --dir, the other commands use
$RIG_DIR. `ctl` arguments follow the method's D-Bus signature: s/o as is, integers in decimal or
0x hex, b as true/false, ay as hex ("34 46 00", "3446:00") or text:STRING, aay as
comma-separated ay, a{sv} as JSON. Put `--` before negative numbers. The reply prints as JSON.

Importable: Rig(dir).start() / .stop() / .restart_bluez() / .ctl(method, *typed_args).
'''

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DEBIAN_PYTHON = '/usr/bin/python3'

try:
    import dbus
except ImportError:  # another python3 first on PATH (pyenv...): the Debian one has python3-dbus
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and os.path.exists(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
BUS_CONF = os.path.join(HERE, 'bus.conf')
# The deny rule dbus-daemon applies after the default context: Debian's
# /usr/share/dbus-1/system.d/bluetooth.conf allows send_destination="org.bluez" to root and the
# bluetooth group only, so everyone else gets org.freedesktop.DBus.Error.AccessDenied from the bus.
DENY_POLICY = ('  <policy user="%s">\n'
               '    <deny send_destination="org.bluez"/>\n'
               '  </policy>\n')
TEMPLATE = os.path.join(HERE, 'bluez566.py')
DEFAULT_ADAPTER = ('hci0', '00:AA:01:00:00:01')


class RigError(Exception):
    pass


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def _cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    except OSError:
        return ''


class Rig:
    def __init__(self, directory=None):
        self.dir = directory
        self.bus_pid = None
        self.mock_pid = None
        self.params = {}
        self._conn = None
        self.argv0 = None  # the mock's argv[0] when not the interpreter's path
        self._children = {}  # pid -> Popen of processes this object started (reaped by _wait_gone)

    # --- paths and state ------------------------------------------------------------------

    @property
    def address(self):
        return 'unix:path=%s/bus' % self.dir

    @property
    def env_file(self):
        return os.path.join(self.dir, 'rig.env')

    def environment(self):
        return {'DBUS_SYSTEM_BUS_ADDRESS': self.address, 'RIG_DIR': self.dir,
                'RIG_BUS_PID': str(self.bus_pid), 'RIG_MOCK_PID': str(self.mock_pid)}

    def env_text(self):
        return ''.join('%s=%s\n' % kv for kv in self.environment().items())

    def _write_env(self):
        with open(self.env_file + '.tmp', 'w', encoding='utf-8') as f:
            f.write(self.env_text())
            f.write('RIG_PARAMS=%s\n' % json.dumps(self.params, separators=(',', ':')))
            if self.argv0:
                f.write('RIG_MOCK_ARGV0=%s\n' % self.argv0)
        os.replace(self.env_file + '.tmp', self.env_file)

    def load(self):
        '''Read DIR/rig.env of a running rig.'''
        if not self.dir:
            raise RigError('no rig directory: give --dir or set RIG_DIR')
        try:
            with open(self.env_file, encoding='utf-8') as f:
                values = dict(line.rstrip('\n').split('=', 1) for line in f if '=' in line)
        except OSError as e:
            raise RigError('no rig at %s: %s' % (self.dir, e)) from e
        self.bus_pid = int(values['RIG_BUS_PID'])
        self.mock_pid = int(values['RIG_MOCK_PID'])
        self.params = json.loads(values.get('RIG_PARAMS', '{}'))
        self.argv0 = values.get('RIG_MOCK_ARGV0') or None
        return self

    # --- D-Bus ----------------------------------------------------------------------------

    def connection(self):
        if self._conn is None:
            self._conn = dbus.bus.BusConnection(self.address)
        return self._conn

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def has_bluez(self):
        return bool(self.connection().call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus',
                                                    'org.freedesktop.DBus', 'NameHasOwner', 's', ('org.bluez',)))

    def ctl(self, method, *args, signature=None, timeout=30):
        '''Call org.bluez.Mock.METHOD on /org/bluez with already typed arguments.'''
        if signature is None:
            signature = self.signatures()[method][0]
        return self.connection().call_blocking('org.bluez', '/org/bluez', 'org.bluez.Mock', method,
                                               signature, args, timeout=timeout)

    def signatures(self):
        '''{method: (in_signature, out_signature)} of org.bluez.Mock, from introspection.'''
        import xml.etree.ElementTree as ET
        xml = self.connection().call_blocking('org.bluez', '/org/bluez', 'org.freedesktop.DBus.Introspectable',
                                              'Introspect', '', ())
        out = {}
        for iface in ET.fromstring(str(xml)).iter('interface'):
            if iface.get('name') != 'org.bluez.Mock':
                continue
            for m in iface.iter('method'):
                ins = ''.join(a.get('type') for a in m.iter('arg') if a.get('direction', 'in') == 'in')
                outs = ''.join(a.get('type') for a in m.iter('arg') if a.get('direction') == 'out')
                out[m.get('name')] = (ins, outs)
        return out

    # --- processes ------------------------------------------------------------------------

    def bus_config(self, deny_bluez_for):
        '''bus.conf, or (users to deny org.bluez) a copy in the rig directory with their deny rules.'''
        if not deny_bluez_for:
            return BUS_CONF
        with open(BUS_CONF, encoding='utf-8') as f:
            text = f.read()
        rules = ''.join(DENY_POLICY % user for user in deny_bluez_for)
        path = os.path.join(self.dir, 'bus-deny.conf')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text.replace('</busconfig>', rules + '</busconfig>'))
        # The denied user must reach the socket to be refused by the bus rather than by the file system.
        os.chmod(self.dir, 0o755)
        return path

    def start(self, params=None, adapter=DEFAULT_ADAPTER, power_state='on', deny_bluez_for=(), argv0=None):
        '''Start the bus and the mock, add hci0 (in `power_state`; adapter=None: none). Returns
        self; environment() says where.'''
        import pwd
        for user in deny_bluez_for:
            try:
                pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
            except KeyError as e:
                raise RigError('no user %s' % user) from e
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix='capture-rig.')
        os.makedirs(self.dir, exist_ok=True)
        self.params = {'StateFile': os.path.join(self.dir, 'bluetoothd-state.json')}
        self.params.update(params or {})
        config = self.bus_config(list(deny_bluez_for))
        self.argv0 = argv0
        read_fd, write_fd = os.pipe()
        with open(os.path.join(self.dir, 'bus.log'), 'ab') as bus_log:
            bus = subprocess.Popen(['dbus-daemon', '--config-file=' + config, '--address=' + self.address,
                                    '--nofork', '--nopidfile', '--print-address=%d' % write_fd],
                                   stdin=subprocess.DEVNULL, stdout=bus_log, stderr=bus_log,
                                   pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)
        self.bus_pid = bus.pid
        self._children[bus.pid] = bus
        with os.fdopen(read_fd, 'rb') as ready:
            line = ready.readline()  # printed once the socket accepts connections
        if not line:
            raise RigError('dbus-daemon did not start; see %s/bus.log' % self.dir)
        self._start_mock()
        if adapter and '/org/bluez/' + adapter[0] not in self._adapters():
            self.ctl('AddAdapterInState', adapter[0], adapter[1], power_state, signature='sss')
        self._write_env()
        return self

    def _adapters(self):
        objects = self.connection().call_blocking('org.bluez', '/', 'org.freedesktop.DBus.ObjectManager',
                                                  'GetManagedObjects', '', ())
        return [str(p) for p, ifaces in objects.items() if 'org.bluez.Adapter1' in ifaces]

    def _start_mock(self):
        env = dict(os.environ)
        env['DBUS_SYSTEM_BUS_ADDRESS'] = self.address
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        with open(os.path.join(self.dir, 'mock.log'), 'ab') as mock_log:
            # argv[0] may name another program (a fake bluetoothd): /proc/PID/cmdline says it, while
            # /proc/PID/exe is still the interpreter.
            mock = subprocess.Popen([self.argv0 or DEBIAN_PYTHON, '-m', 'dbusmock', '--system', '--template',
                                     TEMPLATE, '-p', json.dumps(self.params)], executable=DEBIAN_PYTHON,
                                    stdin=subprocess.DEVNULL, stdout=mock_log, stderr=mock_log, env=env,
                                    cwd=self.dir, start_new_session=True)
        self.mock_pid = mock.pid
        self._children[mock.pid] = mock
        deadline = time.monotonic() + 30
        while not self.has_bluez():
            if mock.poll() is not None:
                raise RigError('the mock exited with %s; see %s/mock.log' % (mock.returncode, self.dir))
            if time.monotonic() > deadline:
                raise RigError('org.bluez did not appear within 30 s; see %s/mock.log' % self.dir)
            time.sleep(0.005)

    def _kill(self, pid, marker, sig=signal.SIGKILL):
        if pid and _alive(pid) and marker in _cmdline(pid):
            os.kill(pid, sig)

    def _wait_gone(self, pid, timeout):
        child = self._children.pop(pid, None)
        if child is not None:
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                self._children[pid] = child
                return False
            return True
        deadline = time.monotonic() + timeout
        while pid and _alive(pid) and time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.005)
        return not (pid and _alive(pid))

    def stop(self, keep=False):
        '''SIGKILL the bus; the mock leaves with it (SIGKILL after 2 s if it did not).'''
        self.close()
        self._kill(self.bus_pid, 'dbus-daemon')
        self._wait_gone(self.bus_pid, 2)
        if not self._wait_gone(self.mock_pid, 2):
            self._kill(self.mock_pid, 'dbusmock')
            self._wait_gone(self.mock_pid, 2)
        if not keep and self.dir and os.path.isdir(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)

    def stop_bluez(self):
        '''Kill only the mock (bluetoothd stopped): the bus stays, org.bluez has no owner once this
        returns. restart_bluez() brings it back.'''
        self._kill(self.mock_pid, 'dbusmock')
        self._wait_gone(self.mock_pid, 5)
        deadline = time.monotonic() + 5
        while self.has_bluez():
            if time.monotonic() > deadline:
                raise RigError('org.bluez still has an owner 5 s after the mock was killed')
            time.sleep(0.005)
        return self

    def restart_bluez(self):
        '''Kill only the mock (org.bluez vanishes), start it again (it comes back; known
        devices are re-exported from the state file).'''
        self._kill(self.mock_pid, 'dbusmock')
        self._wait_gone(self.mock_pid, 5)
        deadline = time.monotonic() + 5
        while self.has_bluez():
            if time.monotonic() > deadline:
                raise RigError('org.bluez still has an owner 5 s after the mock was killed')
            time.sleep(0.005)
        self._start_mock()
        self._write_env()
        return self


# --- command line -------------------------------------------------------------------------

def _int(s):
    return int(s, 0)


def _bytes(s):
    if s.startswith('text:'):
        return dbus.ByteArray(s[5:].encode('utf-8'))
    s = ''.join(ch for ch in s if ch not in ' :-')
    return dbus.ByteArray(bytes.fromhex(s))


def _bool(s):
    if s.lower() in ('true', 'yes', '1', 'on'):
        return True
    if s.lower() in ('false', 'no', '0', 'off'):
        return False
    raise ValueError('not a boolean: %s' % s)


def split_signature(sig):
    out, i = [], 0
    while i < len(sig):
        j = i
        while sig[j] == 'a':
            j += 1
        if sig[j] in '({':
            depth, k = 0, j
            while True:
                depth += sig[k] in '({'
                depth -= sig[k] in ')}'
                k += 1
                if depth == 0:
                    break
            j = k - 1
        out.append(sig[i:j + 1])
        i = j + 1
    return out


def convert(sig, text):
    simple = {'s': str, 'o': dbus.ObjectPath, 'b': _bool, 'y': _int, 'n': _int, 'q': _int, 'i': _int,
              'u': _int, 'x': _int, 't': _int, 'd': float}
    if sig in simple:
        return simple[sig](text)
    if sig == 'ay':
        return _bytes(text)
    if sig == 'aay':
        return [_bytes(part) for part in text.split(',')] if text else []
    if sig == 'as':
        return text.split(',') if text else []
    if sig.startswith('a{'):
        return json.loads(text)
    raise ValueError('cannot convert %r to %s' % (text, sig))


def plain(value):
    if isinstance(value, dbus.ByteArray) or isinstance(value, bytes):
        return bytes(value).hex()
    if isinstance(value, dbus.Array) and value.signature == 'y':
        return bytes(int(b) for b in value).hex()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(prog='rig.py', description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    p_start = sub.add_parser('start')
    p_start.add_argument('--dir')
    p_start.add_argument('--param', action='append', default=[], metavar='KEY=VALUE',
                         help='template parameter; VALUE is JSON (2, true, "x") or a bare string')
    p_start.add_argument('--stop-with', type=int, metavar='PID',
                         help='a watcher stops the rig when this process exits (e.g. the test runner)')
    p_start.add_argument('--power-state', default='on', metavar='STATE',
                         help="hci0's Adapter1.PowerState: on (default), off, off-blocked, off-enabling, "
                              'on-disabling')
    p_start.add_argument('--no-adapter', action='store_true', help='start without hci0 (no adapter at all)')
    p_start.add_argument('--bluetoothd-argv0', metavar='PATH',
                         help="the mock's argv[0], e.g. a script named bluetoothd that answers --version")
    p_start.add_argument('--deny-bluez-for', action='append', default=[], metavar='USER',
                         help="the bus refuses this user's messages to org.bluez (AccessDenied)")
    p_watch = sub.add_parser('_watch')
    p_watch.add_argument('--dir', required=True)
    p_watch.add_argument('pid', type=int)
    p_stop = sub.add_parser('stop')
    p_stop.add_argument('--dir')
    p_stop.add_argument('--keep', action='store_true', help='keep the rig directory (logs, state)')
    p_restart = sub.add_parser('restart-bluez')
    p_restart.add_argument('--dir')
    p_stop_bluez = sub.add_parser('stop-bluez')
    p_stop_bluez.add_argument('--dir')
    p_env = sub.add_parser('env')
    p_env.add_argument('--dir')
    p_ctl = sub.add_parser('ctl')
    p_ctl.add_argument('--dir')
    p_ctl.add_argument('method')
    p_ctl.add_argument('args', nargs=argparse.REMAINDER)
    a = parser.parse_args(argv)
    directory = a.dir or os.environ.get('RIG_DIR')
    try:
        if a.command == 'start':
            params = {}
            for kv in a.param:
                key, _, value = kv.partition('=')
                try:
                    params[key] = json.loads(value)
                except ValueError:
                    params[key] = value
            rig = Rig(directory)
            try:
                rig.start(params, adapter=None if a.no_adapter else DEFAULT_ADAPTER, power_state=a.power_state,
                          deny_bluez_for=a.deny_bluez_for, argv0=a.bluetoothd_argv0)
            except BaseException:
                rig.stop(keep=True)
                raise
            if a.stop_with:
                subprocess.Popen([DEBIAN_PYTHON, os.path.abspath(__file__), '_watch', '--dir', rig.dir,
                                  str(a.stop_with)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True).returncode = 0
            sys.stdout.write(rig.env_text())
        elif a.command == '_watch':
            while _alive(a.pid) and os.path.exists(os.path.join(a.dir, 'rig.env')):
                time.sleep(0.2)
            if os.path.exists(os.path.join(a.dir, 'rig.env')):
                Rig(a.dir).load().stop()
        elif a.command == 'stop':
            Rig(directory).load().stop(keep=a.keep)
        elif a.command == 'stop-bluez':
            Rig(directory).load().stop_bluez()
        elif a.command == 'restart-bluez':
            sys.stdout.write(Rig(directory).load().restart_bluez().env_text())
        elif a.command == 'env':
            sys.stdout.write(Rig(directory).load().env_text())
        elif a.command == 'ctl':
            rig = Rig(directory).load()
            sigs = rig.signatures()
            if a.method not in sigs:
                raise RigError('no method %s; one of: %s' % (a.method, ', '.join(sorted(sigs))))
            args = a.args[1:] if a.args[:1] == ['--'] else a.args
            args = [x for x in args if x != '--']
            parts = split_signature(sigs[a.method][0])
            if len(parts) != len(args):
                raise RigError('%s takes %d argument(s) (%s), got %d' % (a.method, len(parts), sigs[a.method][0],
                                                                         len(args)))
            typed = [convert(s, t) for s, t in zip(parts, args)]
            result = rig.ctl(a.method, *typed, signature=sigs[a.method][0])
            if result is not None:
                print(json.dumps(plain(result)))
        return 0
    except (RigError, ValueError, dbus.exceptions.DBusException) as e:
        sys.stderr.write('rig.py: %s\n' % e)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
