# capture — build, test, demo, docs, install. Run as root on a fresh Debian 12 and missing packages
# are installed with apt-get; otherwise the apt-get line is printed.

PREFIX ?= /usr/local
DESTDIR ?=
# systemd looks for user units in /usr/lib/systemd/user and /usr/local/lib/systemd/user alike.
SYSTEMD_USER_DIR = $(PREFIX)/lib/systemd/user
SWIFT ?= swift
CONFIG ?= release
# A static Swift runtime: fewer shared objects to load makes every one-shot command start faster.
# Debian's hardening flags (dpkg-buildflags), which lintian checks: _FORTIFY_SOURCE=2 for the C shims
# (the image, Bluetooth and WebSocket glue: bounds-checked memcpy/snprintf), and -z now with SwiftPM's
# -z relro (the GOT read-only once loaded; no measurable start-up cost). One set of release flags for
# make build, make deb and the VM tier, so they share one .build/release.
RELEASE_FLAGS = -c release --static-swift-stdlib -Xcc -D_FORTIFY_SOURCE=2 -Xlinker -z -Xlinker now
BUILD_FLAGS = $(if $(filter release,$(CONFIG)),$(RELEASE_FLAGS),-c $(CONFIG))
BIN = $(shell $(SWIFT) build $(BUILD_FLAGS) --show-bin-path 2>/dev/null)/capture

# Build: the C libraries behind SocketCam, BlueZ, Bluetooth Classic and the transports of serve and
# --mqtt, and the C++ standard headers the zxing-cpp shim compiles against (swift.org's Debian 12
# prerequisites bring gcc, not g++: clang finds libstdc++'s headers only in libstdc++-12-dev). zxing-cpp
# itself is not Debian's (1.4.0): cmake and pip are what scripts/build-zxing-cpp fetches and builds the
# release pinned in deps/zxing-cpp.lock with (docs/packaging.md, "zxing-cpp"), python3-venv what the
# bench installs its Python peer with.
# Test: image generators, man page linter, the JSON-RPC + WebSocket client and the headless browser of
# the capture serve tests (Tests/Service), systemd-analyze, the broker, its clients, the subscriber
# and the certificate tool of the --mqtt tests (Tests/MQTT), strace for doctor's read-only test.
# Bench: the peers measured side by side.
BUILD_PACKAGES = pkg-config libstdc++-12-dev cmake python3-pip libzbar-dev libpng-dev libjpeg62-turbo-dev libdbus-1-dev libbluetooth-dev libwebsockets-dev libmosquitto-dev
TEST_PACKAGES = zint qrencode imagemagick mandoc libjpeg-turbo-progs dbus-daemon python3-dbusmock python3-dbus python3-gi \
  python3-websockets chromium chromium-driver python3-selenium esbuild node-react node-react-dom systemd \
  mosquitto mosquitto-clients python3-paho-mqtt openssl strace
BENCH_PACKAGES = zbar-tools zxing-cpp-tools python3-venv netcat-openbsd python3-aiohttp linux-perf strace valgrind
# The VM tier (Tests/VM): qemu, the image builder and the stock Debian kernel booted inside.
VM_PACKAGES = qemu-system-x86 mmdebstrap linux-image-amd64 zstd cpio kmod zint imagemagick
# The Debian package (make deb: dpkg-shlibdeps, dpkg-gencontrol, dpkg-deb, strip) and its test
# (Tests/Package: lintian, and mmdebstrap for the Debian 12 root it is installed into).
PACKAGE_PACKAGES = dpkg-dev binutils lintian mmdebstrap
# Where make deb writes capture_VERSION_ARCH.deb.
DEBDIR ?= .

# Every target that runs `swift build` goes through one of the *-deps targets below, each of which ends
# with ZXING_CPP: zxing-cpp built once per set of inputs, cached under .build/zxing-cpp (a second run
# only checks its stamp). A bare `swift build` before it stops in czxing.cpp with "run make deps".
ZXING_CPP = ./scripts/build-zxing-cpp

.PHONY: all build deps test-deps bench-deps vm-deps package-deps test-vm test-vm-if-possible deb test-package \
  test-package-if-possible test-fresh-root demo test docs check-docs lint install install-service uninstall bench fuzz clean

all: build

deps:
	@./scripts/ensure-packages $(BUILD_PACKAGES)
	@$(ZXING_CPP)

test-deps:
	@./scripts/ensure-packages $(BUILD_PACKAGES) $(TEST_PACKAGES)
	@$(ZXING_CPP)

bench-deps:
	@./scripts/ensure-packages $(BUILD_PACKAGES) $(TEST_PACKAGES) $(BENCH_PACKAGES)
	@$(ZXING_CPP)

vm-deps:
	@./scripts/ensure-packages $(BUILD_PACKAGES) $(VM_PACKAGES)
	@$(ZXING_CPP)

package-deps:
	@./scripts/ensure-packages $(BUILD_PACKAGES) $(PACKAGE_PACKAGES)
	@$(ZXING_CPP)

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

# The main job on the embedded default: SocketCam decodes the sample images as a stream.
demo: build
	XDG_STATE_HOME=$${XDG_STATE_HOME:-$$(mktemp -d)} $(BIN) listen socketcam --dir samples/

# The BLE tests start their own private bus and bluetoothd model (Tests/Rigs) per test and stop them.
test: test-deps
	$(SWIFT) build
	$(SWIFT) test --parallel
	CAPTURE_BIN=.build/debug/capture /usr/bin/python3 -m unittest discover -s Tests/Service -v
	CAPTURE_BIN=.build/debug/capture /usr/bin/python3 -m unittest discover -s Tests/MQTT -v
	/usr/bin/python3 -m unittest Tests/Rigs/test_rig.py
	$(MAKE) --no-print-directory check-docs CONFIG=debug
	$(MAKE) --no-print-directory test-vm-if-possible
	$(MAKE) --no-print-directory test-package-if-possible

# Bluetooth Classic and LE end to end against a real kernel stack: a Debian kernel under qemu with two
# btvirt controllers (Tests/VM/README.md); the binary under test is a static release build.
VM_BIN = $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/capture
test-vm: vm-deps
	$(SWIFT) build $(RELEASE_FLAGS)
	/usr/bin/python3 Tests/VM/vm.py --binary $(VM_BIN) $(VM_ARGS)

# Part of `make test`. Skipped, loudly, only for what this machine cannot get: the packages (not
# root) or the image (vm.py exit 3: the Debian mirror out of reach); a failing scenario fails the test.
test-vm-if-possible:
	@if ! ./scripts/ensure-packages $(BUILD_PACKAGES) $(VM_PACKAGES); then \
	  echo "*** SKIPPED: Tests/VM (Bluetooth Classic and LE on a real kernel stack): its packages are missing"; \
	  exit 0; fi; \
	$(ZXING_CPP) || exit 1; \
	$(SWIFT) build $(RELEASE_FLAGS) || exit 1; \
	/usr/bin/python3 Tests/VM/vm.py --binary $(VM_BIN); rc=$$?; \
	if [ $$rc -eq 3 ]; then \
	  echo "*** SKIPPED: Tests/VM (Bluetooth Classic and LE on a real kernel stack): no VM image on this machine"; \
	  exit 0; fi; exit $$rc

# The Debian package capture_VERSION_ARCH.deb in DEBDIR: a static release build installed by the
# install targets below into a staged /usr, then scripts/build-deb (docs/packaging.md).
DEB_WORK = build/deb
deb: package-deps
	rm -rf $(DEB_WORK)
	$(MAKE) --no-print-directory install CONFIG=release PREFIX=/usr DESTDIR=$(CURDIR)/$(DEB_WORK)/debian/capture
	./scripts/build-deb $(DEB_WORK) $(DEBDIR)

# The package installed like a user installs it: lintian, then apt-get install into a fresh Debian 12
# root without Swift (docs/packaging.md). The test builds the package itself (make deb).
test-package: package-deps
	/usr/bin/python3 -m unittest discover -s Tests/Package -v

# Part of `make test`. Skipped, loudly, only for what this machine cannot get: the packages (not
# root); the test itself skips loudly when mmdebstrap cannot build the root (the mirror out of reach).
test-package-if-possible:
	@if ! ./scripts/ensure-packages $(BUILD_PACKAGES) $(PACKAGE_PACKAGES); then \
	  echo "*** SKIPPED: Tests/Package (the Debian package installed into Debian 12): its packages are missing"; \
	  exit 0; fi; \
	/usr/bin/python3 -m unittest discover -s Tests/Package -v

# `make test` on a fresh Debian 12 root with only the Swift toolchain added (mmdebstrap, cached by its
# inputs; the toolchain mounted read-only; this checkout copied in): what a new developer gets, without
# the packages, groups and caches earlier runs left on this machine (Tests/FreshRoot/run.py). Exit 3,
# with the reason, when this machine cannot build the root. .ci/run runs it after `make test`.
test-fresh-root: package-deps
	/usr/bin/python3 Tests/FreshRoot/run.py

# man/ and completions/ are generated from the command tree; they must match what is checked in.
docs: build
	$(BIN) __generate-docs .

check-docs:
	@tmp=$$(mktemp -d) && $(BIN) __generate-docs $$tmp && \
	  diff -r man $$tmp/man && diff -r completions $$tmp/completions && \
	  out=$$(mandoc -T lint -W warning man/*.1 2>&1); rc=$$?; rm -rf $$tmp; \
	  if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; echo "docs: up to date, mandoc lint clean"

lint:
	$(SWIFT) format lint --strict -r Sources Tests Package.swift

install: build install-service
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/capture
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 completions/capture.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/capture
	install -D -m 0644 completions/_capture $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_capture
	install -D -m 0644 completions/capture.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/capture.fish

# The systemd user units (listen; listen for a fleet; serve and its socket), ExecStart pointing at the capture this PREFIX
# installs.
install-service:
	install -d $(DESTDIR)$(SYSTEMD_USER_DIR)
	sed 's|/usr/local/bin/capture|$(PREFIX)/bin/capture|' contrib/capture-listen.service \
	  > $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-listen.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-listen.service
	sed 's|/usr/local/bin/capture|$(PREFIX)/bin/capture|' contrib/capture-serve.service \
	  > $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-serve.service
	install -m 0644 contrib/capture-serve.socket $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-serve.socket
	chmod 0644 $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-serve.service
	sed 's|/usr/local/bin/capture|$(PREFIX)/bin/capture|' contrib/capture-listen-mqtt.service \
	  > $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-listen-mqtt.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-listen-mqtt.service

uninstall:
	rm -f $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-listen.service \
	  $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-serve.service $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-serve.socket \
	  $(DESTDIR)$(SYSTEMD_USER_DIR)/capture-listen-mqtt.service
	rm -f $(DESTDIR)$(PREFIX)/bin/capture $(DESTDIR)$(PREFIX)/share/man/man1/capture.1 \
	  $(DESTDIR)$(PREFIX)/share/man/man1/capture-*.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/capture \
	  $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_capture \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/capture.fish

bench: bench-deps build
	bench/socketcam.sh $(BIN)
	bench/ble.sh $(BIN)
	bench/dmcc.sh $(BIN)
	bench/reconnect.sh $(BIN)
	bench/listen-load.sh $(BIN)
	bench/provision.sh $(BIN)
	bench/serve-latency.sh $(BIN)
	bench/serve-throughput.sh $(BIN) 100000 10 10000
	bench/serve-clients.sh $(BIN)
	bench/serve-throughput.sh $(BIN) 100000 10 0
	bench/mqtt-throughput.sh $(BIN)

# The BLE frame decoders under libFuzzer, SECONDS each (default 600).
fuzz:
	fuzz/run.sh $${SECONDS:-600}

clean:
	rm -rf .build
