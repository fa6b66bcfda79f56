// D-Bus client tests (issue 3).
