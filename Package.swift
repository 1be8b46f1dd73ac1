// swift-tools-version:6.0
// HotspotLab: the Hotspot Helper subsystem (pure core + daemon + SDK) and the lab that proves helpers work.
//
// Layout (see docs/ARCHITECTURE.md):
//   HotspotCore        the authentication state machine, pure (no I/O, no clocks)
//   HotspotProtocol    the helper/control wire protocol (pure encoding, framing)
//   CSystemShims       C shim: setns/unshare/gettid/SO_PEERCRED and macro wrappers
//   HotspotSystem      system calls: sockets, poll loop, processes, atomic files, the wpa_ctrl client
//   HotspotClient      a client of hotspotd's control socket (ctl, the lab, benches, tests)
//   HotspotDaemon      hotspotd as a library (driver around HotspotCore)
//   HotspotStation     hotspotd on a real interface: wpa_supplicant, DHCP, IP suppression by policy routing
//   HotspotHelper      the helper SDK, shaped like Apple's NEHotspotHelper
//   NEHotspotHelperCompat  Apple's spellings on top of HotspotHelper
//   FoundationSessions Foundation's URLSession defaults, for the compat module's shadows of them
//   CLibNL/CLibNLGenl/CLibMNL  system libraries; CNetlinkShim their macro wrappers
//   COpenSSL/CTLSShim  the system OpenSSL and its macro wrappers (https:// in the SDK, the https-only portal)
//   Netlink            rtnetlink (libmnl) and generic netlink (libnl-genl) from Swift
//   LabTopology        a topology file: the model, the YAML parser, address ranges
//   LabVM              the VM runner: qemu under TCG, its kernel and initramfs, the hwsim self-test
//   LabSandbox         a sealed lab: namespaces, links, radios, processes, state on disk, cleanup
//   LabServices        what runs in a lab: a hotspot's services and a station's
//   LabScenarioModel   a scenario file: the model, the parser, one file per step kind
//   LabScenarios       scenarios run: the runner, the lab's step context, checks, timelines, tier parity
//   LabCertify         certify: the runs, the judge, one file per check
//   LabReplay          replay: a field trace back into a scenario
//   LabReports         HTML, JUnit and certify reports
//   LabKit             the lab as one import (re-exports the Lab* modules) and `doctor`
//   HotspotBench       the `hotspot-lab bench` measurements (a library the CLI calls)
//   PortalKinds        one file per captive portal kind, as data and request handling (the `portals/` folder)
//   Portals            the portal server around them: HTTP/1.1, plain and over TLS, our own (`portals/Server/`)
//   StepRegistryScanner, step-registry-tool, StepRegistryPlugin  the build-tool plugin that lists LabScenarioModel's step kinds and LabCertify's checks
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "HotspotLab",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "HotspotCore", targets: ["HotspotCore"]),
        .library(name: "HotspotHelper", targets: ["HotspotHelper"]),
        .library(name: "NEHotspotHelperCompat", targets: ["NEHotspotHelperCompat"]),
        .executable(name: "hotspot-lab", targets: ["hotspot-lab"]),
        .executable(name: "hotspotd", targets: ["hotspotd"]),
        .executable(name: "hotspot-portal", targets: ["hotspot-portal"]),
        .executable(name: "hotspot-nsexec", targets: ["hotspot-nsexec"]),
        .executable(name: "hotspot-helper-portal", targets: ["PortalHelperMain"]),
        .executable(name: "hotspot-provider-portal-evaluation", targets: ["PortalEvaluation"]),
        .executable(name: "hotspot-provider-portal-authentication", targets: ["PortalAuthentication"]),
        .executable(name: "hotspot-helper-voucher", targets: ["VoucherHelperMain"]),
        .executable(name: "hotspot-provider-voucher-evaluation", targets: ["VoucherEvaluation"]),
        .executable(name: "hotspot-provider-voucher-authentication", targets: ["VoucherAuthentication"]),
        .executable(name: "hotspot-helper-captive-api", targets: ["CaptiveAPIHelperMain"]),
        .executable(name: "hotspot-provider-captive-api-evaluation", targets: ["CaptiveAPIEvaluation"]),
        .executable(name: "hotspot-provider-captive-api-authentication", targets: ["CaptiveAPIAuthentication"]),
        .executable(name: "hotspot-replay-helper", targets: ["hotspot-replay-helper"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
    ],
    targets: [
        // MARK: the subsystem
        .target(name: "HotspotCore", swiftSettings: strict),
        .target(name: "HotspotProtocol", dependencies: ["HotspotCore"], swiftSettings: strict),
        .target(name: "CSystemShims"),
        .target(name: "HotspotSystem", dependencies: ["CSystemShims"], swiftSettings: strict),
        // hotspotd's control client does socket I/O, so it is not in the pure HotspotProtocol; and it is not in
        // HotspotDaemon, so that its users (the lab, `ctl`, tests) need not link the daemon. The facts both
        // sides share (trace version, traffic mark, wpa_supplicant text) are in HotspotProtocol.
        .target(name: "HotspotClient", dependencies: ["HotspotProtocol", "HotspotSystem"], swiftSettings: strict),
        .target(
            name: "HotspotDaemon",
            dependencies: ["HotspotCore", "HotspotProtocol", "HotspotSystem"],
            swiftSettings: strict
        ),
        .target(
            name: "HotspotStation",
            dependencies: ["HotspotDaemon", "HotspotCore", "HotspotProtocol", "HotspotSystem", "Netlink"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "hotspotd",
            dependencies: [
                "HotspotDaemon", "HotspotStation", "HotspotSystem",
            ],
            swiftSettings: strict
        ),
        .target(
            name: "HotspotHelper",
            dependencies: ["HotspotProtocol", "HotspotSystem", "COpenSSL", "CTLSShim"],
            swiftSettings: strict
        ),
        // Foundation's URLSession defaults, read where NEHotspotHelperCompat's shadows of them are not visible.
        .target(name: "FoundationSessions", swiftSettings: strict),
        .target(name: "NEHotspotHelperCompat", dependencies: ["HotspotHelper", "FoundationSessions"], swiftSettings: strict),

        // MARK: netlink
        .systemLibrary(
            name: "CLibNL", pkgConfig: "libnl-3.0",
            providers: [.apt(["libnl-3-dev"])]
        ),
        .systemLibrary(
            name: "CLibNLGenl", pkgConfig: "libnl-genl-3.0",
            providers: [.apt(["libnl-genl-3-dev"])]
        ),
        .systemLibrary(
            name: "CLibMNL", pkgConfig: "libmnl",
            providers: [.apt(["libmnl-dev"])]
        ),
        .target(name: "CNetlinkShim", dependencies: ["CLibNL", "CLibNLGenl", "CLibMNL"]),

        // MARK: TLS (the helper SDK's https:// client, the lab portal's https-only server)
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "CTLSShim", dependencies: ["COpenSSL"]),
        .target(
            name: "Netlink",
            dependencies: ["CNetlinkShim", "CLibNL", "CLibNLGenl", "CLibMNL", "CSystemShims", "HotspotSystem"],
            swiftSettings: strict
        ),

        // MARK: the lab (docs/ARCHITECTURE.md, "The lab's modules"; lowest first)
        // A topology file and everything read from it: the model, the YAML parser and its errors, address ranges.
        .target(
            name: "LabTopology",
            dependencies: [
                "Netlink", "HotspotSystem", "HotspotProtocol", "HotspotCore", "PortalKinds",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        // The VM runner: qemu under TCG, its kernel and initramfs, the hwsim self-test, what runs inside.
        .target(name: "LabVM", dependencies: ["Netlink", "HotspotSystem", "CTLSShim"], swiftSettings: strict),
        // A sealed lab: its namespaces, links, radios and processes, its state on disk, the cleanup of dead runs.
        .target(name: "LabSandbox", dependencies: ["Netlink", "HotspotSystem"], swiftSettings: strict),
        // What runs in a lab: a hotspot's services (AP, DHCP/DNS, gate, portals, uplink, NAT64) and a station's.
        .target(
            name: "LabServices",
            dependencies: [
                "LabTopology", "LabVM", "LabSandbox",
                "Netlink", "HotspotSystem", "HotspotProtocol", "HotspotCore", "HotspotClient", "HotspotHelper", "PortalKinds", "Portals", "PortalNetlink",
            ],
            swiftSettings: strict
        ),
        // A scenario file read and checked: the model, the parser and one file per step kind (what it reads, and what
        // it does through `StepContext`); generates `StepRegistry.declaredKinds` from Sources/LabScenarioModel/Steps.
        // Nothing here runs a lab, so the scenario parser's fuzzing builds only this and LabTopology's closure.
        .target(
            name: "LabScenarioModel",
            dependencies: [
                "LabTopology", "HotspotProtocol", "HotspotSystem", "HotspotCore", "PortalKinds",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict,
            plugins: ["StepRegistryPlugin"]
        ),
        // Scenarios run: the runner, the lab's `StepContext`, the checks against a topology, timelines, tier parity.
        .target(
            name: "LabScenarios",
            dependencies: [
                "LabScenarioModel", "LabServices", "LabTopology", "LabVM", "LabSandbox",
                "Netlink", "HotspotSystem", "HotspotProtocol", "HotspotCore", "PortalKinds",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        // certify: the runs, the judge and its checks; generates `CertifyChecks.declared` from Sources/LabCertify/Checks.
        .target(
            name: "LabCertify",
            dependencies: [
                "LabScenarios", "LabServices", "LabTopology", "LabSandbox",
                "HotspotSystem", "HotspotProtocol", "HotspotCore", "PortalKinds",
            ],
            swiftSettings: strict,
            plugins: ["StepRegistryPlugin"]
        ),
        // replay: a field failure's trace back into a scenario.
        .target(
            name: "LabReplay",
            dependencies: [
                "LabScenarios", "LabServices", "LabTopology", "HotspotProtocol", "HotspotCore",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        // The reports: HTML, JUnit, and certify's text and JSON.
        .target(
            name: "LabReports",
            dependencies: ["LabCertify", "LabScenarios", "HotspotProtocol", "HotspotCore", "PortalKinds"],
            swiftSettings: strict
        ),
        // The lab as one import (re-exports the modules above) and `doctor`, which asks all of them.
        .target(
            name: "LabKit",
            dependencies: [
                "LabTopology", "LabVM", "LabSandbox", "LabServices", "LabScenarioModel", "LabScenarios", "LabCertify", "LabReplay",
                "LabReports", "Netlink", "HotspotSystem",
            ],
            swiftSettings: strict
        ),
        // MARK: build tools (run at build time, linked into nothing)
        // The generator's reading of the step files (standard library only), the program the plugin runs, the plugin.
        .target(name: "StepRegistryScanner", swiftSettings: strict),
        .executableTarget(name: "step-registry-tool", dependencies: ["StepRegistryScanner"], swiftSettings: strict),
        .plugin(name: "StepRegistryPlugin", capability: .buildTool(), dependencies: ["step-registry-tool"]),
        // The portal kinds as data and their request handling, one file per kind; no HTTP server (LabTopology reads it).
        .target(name: "PortalKinds", path: "portals", exclude: ["Server"], swiftSettings: strict),
        // The portal server (our HTTP/1.1 server, OpenSSL for TLS) around the kinds; re-exports PortalKinds.
        .target(
            name: "Portals",
            dependencies: [
                "PortalKinds",
                "COpenSSL", "CTLSShim",
            ],
            path: "portals/Server",
            swiftSettings: strict
        ),
        // The gate's nftables sets and the neighbour tables over netlink, for a portal server in a hotspot's namespace
        // (hotspot-portal's process, or the lab runner's: LabServices' PortalService).
        .target(name: "PortalNetlink", dependencies: ["PortalKinds", "Netlink", "HotspotSystem"], swiftSettings: strict),
        .executableTarget(
            name: "hotspot-portal",
            dependencies: ["Portals", "PortalNetlink", "Netlink", "HotspotSystem", "HotspotHelper"],
            swiftSettings: strict
        ),
        // Every lab daemon starts through it (setns, then exec), so its own start is paid on each one: linked as a
        // static C program, without the Swift runtime SwiftPM's link adds (swiftrt.o's constructor needs libswiftCore,
        // which loads libstdc++, libm and libgcc_s). Natively 0.5 ms of CPU before the exec instead of 3.2 ms; under
        // TCG a tenth of a radio lab's CPU (bench/README.md).
        .executableTarget(name: "hotspot-nsexec", linkerSettings: [.unsafeFlags(["-nostartfiles", "-static-executable"])]),
        // The `dns: servfail` fault's server: every query answered with one error code.
        .executableTarget(name: "hotspot-dns-fault", swiftSettings: strict),
        // A hotspot's Router Advertisements with RFC 8910 option 37 (Debian 12's radvd and dnsmasq cannot send it).
        .executableTarget(name: "hotspot-ra", dependencies: ["HotspotSystem"], swiftSettings: strict),
        .executableTarget(name: "hotspot-test-helper", dependencies: ["HotspotHelper"], swiftSettings: strict),
        // Both provider roles scripted by arguments (the provider scenarios, certify's provider checks).
        .executableTarget(name: "hotspot-test-provider", dependencies: ["HotspotHelper"], swiftSettings: strict),
        // The `probe` step's HTTP client in a station (the SDK's client, marked as the system's own probe).
        .executableTarget(name: "hotspot-replay-helper", dependencies: ["HotspotHelper", "HotspotProtocol"], swiftSettings: strict),
        // A deliberately broken helper (a relay that breaks one rule) for the certify tests.
        .executableTarget(
            name: "hotspot-certify-fixture", dependencies: ["HotspotHelper", "HotspotProtocol", "HotspotSystem", "ReferenceHelperSupport"],
            path: "Tests/Fixtures/CertifyFixture", swiftSettings: strict
        ),
        // A legacy helper written with Apple's names only (NEHotspotHelperCompat), for the compat tests.
        .executableTarget(
            name: "hotspot-compat-fixture", dependencies: ["NEHotspotHelperCompat"],
            // Swift 5 language mode, as the legacy iOS helpers it stands for are written.
            path: "Tests/Fixtures/CompatFixture", swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // A legacy helper in Apple's names written five ways vendors write their HTTP (docs/HELPERS.md, "Vendor patterns").
        .executableTarget(
            name: "hotspot-vendor-fixture", dependencies: ["NEHotspotHelperCompat"],
            path: "Tests/Fixtures/VendorPatterns", swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The benchmarks run hotspotd in process (`bench protocol`), so this is the one lab target that links it.
        .target(
            name: "HotspotBench",
            dependencies: [
                "HotspotCore", "HotspotProtocol", "HotspotSystem", "HotspotClient", "HotspotDaemon", "LabKit", "Netlink",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "hotspot-lab",
            dependencies: [
                "HotspotCore", "HotspotProtocol", "HotspotClient", "HotspotBench", "LabKit", "Netlink",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),

        // A provider pair in Apple's spellings only (`@main`, `import NEHotspotHelperCompat`) for ProviderTests.
        .executableTarget(name: "hotspot-apple-evaluation-fixture", dependencies: ["NEHotspotHelperCompat"],
                          path: "Tests/Fixtures/AppleProviderPair/Evaluation", swiftSettings: strict),
        .executableTarget(name: "hotspot-apple-authentication-fixture", dependencies: ["NEHotspotHelperCompat"],
                          path: "Tests/Fixtures/AppleProviderPair/Authentication", swiftSettings: strict),

        // MARK: reference helpers (templates for vendors)
        // Each reference helper's logic is a library (<Name>Helper.swift) that its entry point (main.swift) and its
        // provider pair share.
        // What the reference helpers and providers do alike (the HTML form parser, the command line, the probe, one
        // command's log and answers, the entry point, the evaluation extension), written once; the SDK only.
        .target(name: "ReferenceHelperSupport", dependencies: ["HotspotHelper"], path: "Sources/helpers/Support", swiftSettings: strict),
        .target(name: "PortalHelper", dependencies: ["HotspotHelper", "ReferenceHelperSupport"], path: "Sources/helpers/PortalHelper",
                exclude: ["main.swift"], swiftSettings: strict),
        .executableTarget(name: "PortalHelperMain", dependencies: ["HotspotHelper", "PortalHelper", "ReferenceHelperSupport"], path: "Sources/helpers/PortalHelper",
                          exclude: ["PortalHelper.swift"], sources: ["main.swift"], swiftSettings: strict),
        .target(name: "VoucherHelper", dependencies: ["HotspotHelper", "ReferenceHelperSupport"], path: "Sources/helpers/VoucherHelper",
                exclude: ["main.swift"], swiftSettings: strict),
        .executableTarget(name: "VoucherHelperMain", dependencies: ["HotspotHelper", "VoucherHelper", "ReferenceHelperSupport"], path: "Sources/helpers/VoucherHelper",
                          exclude: ["VoucherHelper.swift"], sources: ["main.swift"], swiftSettings: strict),
        .target(name: "CaptiveAPIHelper", dependencies: ["HotspotHelper", "ReferenceHelperSupport"], path: "Sources/helpers/CaptiveAPIHelper",
                exclude: ["main.swift"], swiftSettings: strict),
        .executableTarget(name: "CaptiveAPIHelperMain", dependencies: ["HotspotHelper", "CaptiveAPIHelper", "ReferenceHelperSupport"], path: "Sources/helpers/CaptiveAPIHelper",
                          exclude: ["CaptiveAPIHelper.swift"], sources: ["main.swift"], swiftSettings: strict),

        // MARK: reference providers (iOS 26 app extensions: one file per extension, Apple's spellings)
        .executableTarget(name: "PortalEvaluation", dependencies: ["NEHotspotHelperCompat", "PortalHelper", "ReferenceHelperSupport"],
                          path: "Sources/providers/PortalEvaluation", swiftSettings: strict),
        .executableTarget(name: "PortalAuthentication", dependencies: ["NEHotspotHelperCompat", "PortalHelper", "ReferenceHelperSupport"],
                          path: "Sources/providers/PortalAuthentication", swiftSettings: strict),
        .executableTarget(name: "VoucherEvaluation", dependencies: ["NEHotspotHelperCompat", "VoucherHelper", "ReferenceHelperSupport"],
                          path: "Sources/providers/VoucherEvaluation", swiftSettings: strict),
        .executableTarget(name: "VoucherAuthentication", dependencies: ["NEHotspotHelperCompat", "VoucherHelper", "ReferenceHelperSupport"],
                          path: "Sources/providers/VoucherAuthentication", swiftSettings: strict),
        .executableTarget(name: "CaptiveAPIEvaluation", dependencies: ["NEHotspotHelperCompat", "CaptiveAPIHelper", "ReferenceHelperSupport"],
                          path: "Sources/providers/CaptiveAPIEvaluation", swiftSettings: strict),
        .executableTarget(name: "CaptiveAPIAuthentication", dependencies: ["NEHotspotHelperCompat", "CaptiveAPIHelper", "ReferenceHelperSupport"],
                          path: "Sources/providers/CaptiveAPIAuthentication", swiftSettings: strict),

        // MARK: tests
        // What the test targets share: the one root check, the `root` and `inVM` tags, unique name prefixes.
        .target(name: "TestSupport", dependencies: ["HotspotSystem", "HotspotProtocol"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "HotspotCoreTests", dependencies: ["HotspotCore"], swiftSettings: strict),
        .testTarget(
            name: "HotspotDaemonTests",
            dependencies: [
                "HotspotDaemon", "HotspotClient", "HotspotHelper", "NEHotspotHelperCompat", "HotspotProtocol", "HotspotSystem", "CTLSShim",
                "HotspotStation", "Netlink", "TestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "HotspotSystem", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "LabKitTests", dependencies: ["LabKit", "Portals", "HotspotStation", "HotspotHelper", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "StationTests", dependencies: ["HotspotStation", "Netlink", "HotspotSystem", "HotspotCore", "HotspotProtocol", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "CLITests", dependencies: ["HotspotCore", "LabKit"], swiftSettings: strict),
        .testTarget(name: "StepRegistryScannerTests", dependencies: ["StepRegistryScanner"], swiftSettings: strict),
        .testTarget(
            name: "ProviderTests",
            dependencies: ["HotspotHelper", "NEHotspotHelperCompat", "HotspotCore", "HotspotProtocol", "HotspotSystem", "TestSupport"],
            swiftSettings: strict
        ),
        // Bound URLSession requests against unbound ones and Apple's documentation (the table in docs/HELPERS.md).
        .testTarget(
            name: "URLSessionFidelityTests",
            dependencies: ["HotspotHelper", "NEHotspotHelperCompat", "HotspotCore", "HotspotSystem", "Portals", "TestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HelperTests",
            dependencies: [
                "HotspotHelper", "Portals", "ReferenceHelperSupport", "PortalHelper", "VoucherHelper", "CaptiveAPIHelper",
                "HotspotCore", "HotspotProtocol", "HotspotSystem", "HotspotClient", "HotspotDaemon", "LabKit", "Netlink", "TestSupport",
            ],
            swiftSettings: strict
        ),
    ]
)
