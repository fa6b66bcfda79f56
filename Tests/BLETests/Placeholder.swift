// BLE driver and BlueZ rig tests (issue 3).
