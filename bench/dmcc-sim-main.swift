// The project's DataMan simulator (Tests/Simulators/DMCCSimulator.swift) as a process, for
// bench/provision.py: compiled by bench/provision.sh with swiftc together with that file. Prints
// `PORT=N`, then answers one line on stdout for each line on stdin: `commands` → every command line the
// simulator received so far, as a JSON array of strings; anything else → `?`. Exits at end of input.
import Foundation

@main struct DMCCSimulatorMain {
  static func main() throws {
    let simulator = try DMCCSimulator()
    print("PORT=\(simulator.port)")
    fflush(nil)  // all streams (stdout is a pipe: fully buffered)
    while let line = readLine() {
      if line == "commands" {
        let data = try JSONSerialization.data(withJSONObject: simulator.commands)
        print(String(decoding: data, as: UTF8.self))
      } else {
        print("?")
      }
      fflush(nil)
    }
    simulator.stop()
    simulator.closeListener()
  }
}
