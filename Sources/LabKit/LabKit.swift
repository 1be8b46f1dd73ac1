// The lab as one import: `import LabKit` brings every Lab module (docs/ARCHITECTURE.md, "The lab's modules"), as
// swift-nio's `NIO` brings its modules. The modules, lowest first:
//   LabTopology   a topology file: the model, the YAML parser and its errors, address ranges
//   LabVM         the VM runner: qemu under TCG, its kernel and initramfs, the hwsim self-test
//   LabSandbox    a sealed lab: namespaces, links, radios, processes, state on disk, cleanup of dead runs
//   LabServices   what runs in a lab: a hotspot's services and a station's
//   LabScenarios  scenarios and their steps (one file per step kind)
//   LabCertify    certify: the runs, the judge, one file per check
//   LabReplay     replay: a field failure's trace back into a scenario
//   LabReports    HTML, JUnit and certify's reports
// This module itself holds only `doctor`, which asks all of them.
@_exported import LabCertify
@_exported import LabReplay
@_exported import LabReports
@_exported import LabSandbox
@_exported import LabScenarioModel
@_exported import LabScenarios
@_exported import LabServices
@_exported import LabTopology
@_exported import LabVM
