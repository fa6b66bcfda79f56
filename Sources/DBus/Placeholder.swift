// The D-Bus client (issue 3); see DBusConnection.swift.
