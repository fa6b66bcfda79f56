// Speaks the protocol of docs/capturejs.md as CaptureJS does (§1.2-§1.4, §2, §4, §7), with nothing
// but XMLHttpRequest and WebSocket: POST with Content-Type application/json (so the browser sends a
// preflight first), openclient with id 0, the WebSocket on the API path with one waitforcaptureevent
// (id 1), opendevice on each DeviceArrival, String.fromCharCode(...data) of each DecodedData, close on
// DeviceRemoval, and an Error -87 when the socket closes with 1006 (the service vanished).
//
// Two uses: loaded by index.html as a classic script it runs the plain page below; bundled (esbuild
// sees `module`, react-app.jsx imports it) it only exports CaptureClient and the ids, for the React
// page of test_browser.py.
"use strict";

const APP_INFO = {
  appId: "web:com.example.servebrowsertest",
  developerId: "bb57d8e1-f911-47ba-b510-693be162686a",
  appKey: "MC4CFQDNCtjazxILEh8oyT6w/wlaVKqS1gIVAK7TkfS2mMCBkBP9hpfMd5flBlUj",
};
const EVENT = { DeviceArrival: 1, DeviceRemoval: 2, Error: 4, DecodedData: 5 };
const ESKT_UNABLEOPENDEVICE = -27;
const ESKT_COMMUNICATIONERROR = -38;
const ESKT_SERVICENOTCOMMUNICATING = -87;

// One client of the service on 127.0.0.1:`port`: `onEvent(event, handle)` gets every event, `log(text)`
// what happened on the socket.
class CaptureClient {
  constructor(port, appInfo, onEvent, log) {
    this.api = "http://127.0.0.1:" + port + "/Capture/v1/api";
    this.appInfo = appInfo;
    this.onEvent = onEvent;
    this.log = log;
    this.nextId = 0;
    this.handle = 0;
    this.socket = null;
  }

  // One call: status 200 and a JSON body or a local error, as CaptureJS's transport does.
  rpc(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", this.api, true);
      xhr.setRequestHeader("Content-Type", "application/json");
      xhr.onreadystatechange = () => {
        if (xhr.readyState !== 4) return;
        const local = method === "openclient" ? ESKT_UNABLEOPENDEVICE : ESKT_COMMUNICATIONERROR;
        if (xhr.status !== 200) {
          reject({ code: local, status: xhr.status });
          return;
        }
        let reply;
        try {
          reply = JSON.parse(xhr.responseText);
        } catch (e) {
          reject({ code: ESKT_COMMUNICATIONERROR });
          return;
        }
        if (reply.error) reject(reply.error);
        else resolve(reply.result);
      };
      xhr.send(JSON.stringify({ jsonrpc: "2.0", id: id, method: method, params: params }));
    });
  }

  // openclient; resolves with the client handle.
  open() {
    return this.rpc("openclient", this.appInfo).then((result) => {
      this.handle = result.handle;
      return result.handle;
    });
  }

  // The event socket; resolves once its waitforcaptureevent is sent.
  listen() {
    return new Promise((resolve) => {
      const ws = new WebSocket(this.api.replace(/^http:/, "ws:").replace(/^https:/, "ws:"));
      this.socket = ws;
      ws.onopen = () => {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "waitforcaptureevent", params: { handle: this.handle } }));
        resolve();
      };
      ws.onmessage = (message) => {
        const reply = JSON.parse(message.data);
        if (reply.result && reply.result.event) this.onEvent(reply.result.event, reply.result.handle);
      };
      ws.onclose = (close) => {
        this.log("socket closed " + close.code);
        if (close.code === 1006) this.onEvent({ id: EVENT.Error, type: 2, value: ESKT_SERVICENOTCOMMUNICATING }, 0);
      };
    });
  }

  openDevice(guid) {
    return this.rpc("opendevice", { handle: this.handle, guid: guid }).then((result) => result.handle);
  }

  close(handle) {
    return this.rpc("close", { handle: handle });
  }
}

// The plain page (index.html): status, last error, the opened devices and the codes, by element id.
function plainPage() {
  const port = new URLSearchParams(location.search).get("port") || "18481";
  const devices = new Map(); // device handle -> {guid, name}
  function log(text) {
    document.getElementById("log").textContent += text + "\n";
  }
  function setStatus(text) {
    document.getElementById("status").textContent = text;
    log("status: " + text);
  }
  function setError(code) {
    document.getElementById("error").textContent = String(code);
    log("error: " + code);
  }
  function showDevices() {
    document.getElementById("devices").textContent = Array.from(devices.values()).map((d) => d.name).join(", ");
  }
  const client = new CaptureClient(port, APP_INFO, onEvent, log);

  function onEvent(event, handle) {
    log("event " + JSON.stringify(event) + " handle " + handle);
    switch (event.id) {
      case EVENT.DeviceArrival:
        client.openDevice(event.value.guid).then(
          (deviceHandle) => {
            devices.set(deviceHandle, { guid: event.value.guid, name: event.value.name });
            showDevices();
          },
          (error) => setError(error.code)
        );
        break;
      case EVENT.DeviceRemoval:
        for (const [deviceHandle, device] of devices) {
          if (device.guid === event.value.guid) {
            devices.delete(deviceHandle);
            client.close(deviceHandle).catch((error) => setError(error.code));
          }
        }
        showDevices();
        break;
      case EVENT.DecodedData: {
        if (!devices.has(handle)) break;
        const item = document.createElement("li");
        item.textContent = String.fromCharCode(...event.value.data);
        document.getElementById("codes").appendChild(item);
        break;
      }
      case EVENT.Error:
        setError(event.value);
        break;
    }
  }

  setStatus("opening");
  client.open().then(
    (handle) => {
      setStatus("open " + handle);
      return client.listen().then(() => setStatus("listening"));
    },
    (error) => {
      setStatus("failed");
      setError(error.code);
    }
  );
}

if (typeof module === "object" && module.exports) {
  module.exports = { CaptureClient, APP_INFO, EVENT };
} else {
  document.addEventListener("DOMContentLoaded", plainPage);
}
