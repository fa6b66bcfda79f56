// BlueZ interfaces over D-Bus (issue 3).
