// A React page of our own for test_browser.py (ReactPageTests), following the flow of Socket Mobile's
// single-entry-react sample (src/useCapture.js, single-entry-react@6444369): open Capture with the app
// info at mount (:123-128), on DeviceArrival open the device with its GUID and keep it (:34-47), each
// DecodedData into React state as String.fromCharCode of its bytes (:26-30, 14-16), on DeviceRemoval
// close that device and drop it (:64-79). The protocol is capture-page.js's CaptureClient (the plain
// page's own), so this page adds only React. Bundled at test time by esbuild from Debian's node-react
// and node-react-dom (docs/capturejs.md §7); the service's port comes from the query: react.html?port=N
import React, { useEffect, useReducer } from "react";
import { createRoot } from "react-dom/client";
import { CaptureClient, APP_INFO, EVENT } from "./capture-page.js";

const initial = { status: "Opening Capture...", error: "", devices: [], codes: [], log: [] };

function reducer(state, action) {
  switch (action.type) {
    case "status":
      return { ...state, status: action.status, log: [...state.log, "status: " + action.status] };
    case "error":
      return { ...state, error: String(action.code), log: [...state.log, "error: " + action.code] };
    case "arrival":
      return { ...state, devices: [...state.devices, action.device] };
    case "removal":
      return { ...state, devices: state.devices.filter((d) => d.guid !== action.guid) };
    case "decoded":
      return { ...state, codes: [...state.codes, action.code] };
    case "log":
      return { ...state, log: [...state.log, action.text] };
    default:
      return state;
  }
}

function App({ port }) {
  const [state, dispatch] = useReducer(reducer, initial);

  useEffect(() => {
    // The opened devices outside React state, as the sample's module-level list: events arrive on
    // the socket's callback, not in a render.
    const opened = new Map(); // device handle -> {guid, name, handle}
    const log = (text) => dispatch({ type: "log", text });
    const client = new CaptureClient(port, APP_INFO, onEvent, log);

    function onEvent(event, handle) {
      log("event " + JSON.stringify(event) + " handle " + handle);
      switch (event.id) {
        case EVENT.DeviceArrival: {
          const { guid, name } = event.value;
          client.openDevice(guid).then(
            (deviceHandle) => {
              const device = { guid, name, handle: deviceHandle };
              opened.set(deviceHandle, device);
              dispatch({ type: "arrival", device });
            },
            (error) => dispatch({ type: "error", code: error.code })
          );
          break;
        }
        case EVENT.DeviceRemoval:
          for (const [deviceHandle, device] of opened) {
            if (device.guid !== event.value.guid) continue;
            opened.delete(deviceHandle);
            client.close(deviceHandle).then(
              () => {
                dispatch({ type: "removal", guid: device.guid });
                dispatch({ type: "status", status: "closed " + device.name });
              },
              (error) => dispatch({ type: "error", code: error.code })
            );
          }
          break;
        case EVENT.DecodedData:
          if (opened.has(handle)) dispatch({ type: "decoded", code: String.fromCharCode(...event.value.data) });
          break;
        case EVENT.Error:
          dispatch({ type: "error", code: event.value });
          break;
      }
    }

    client.open().then(
      () => client.listen().then(() => dispatch({ type: "status", status: "listening" })),
      (error) => {
        dispatch({ type: "status", status: "failed" });
        dispatch({ type: "error", code: error.code });
      }
    );
  }, [port]);

  return (
    <div>
      <p>
        Status: <span id="status">{state.status}</span>
      </p>
      <p>
        Last error: <span id="error">{state.error}</span>
      </p>
      <ul id="devices">
        {state.devices.map((d) => (
          <li key={d.guid} data-handle={d.handle}>
            {d.name}
          </li>
        ))}
      </ul>
      <ol id="codes">
        {state.codes.map((code, i) => (
          <li key={i}>{code}</li>
        ))}
      </ol>
      <pre id="log">{state.log.join("\n")}</pre>
    </div>
  );
}

const port = new URLSearchParams(location.search).get("port") || "18481";
createRoot(document.getElementById("root")).render(<App port={port} />);
