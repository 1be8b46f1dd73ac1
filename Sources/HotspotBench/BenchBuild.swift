import Foundation
import HotspotSystem

/// Which build a benchmark measures. The lab's programs (hotspotd, the portals, the helpers) are found next to
/// `hotspot-lab`, so they come from the same build. Under TCG a debug build's programs take about 1.4x the wall time
/// of a release build's (bench/README.md, "Release builds and café-only certify runs"), so a figure is only comparable with one of the same build.
public enum BenchBuild {
    /// `debug` or `release` (SwiftPM defines DEBUG for a debug build's Swift targets).
    public static var configuration: String {
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }

    /// Writes `line` to standard error, first thing in every `hotspot-lab bench` command (standard output keeps its
    /// contracts: `bench lab --pause-after`'s first line is `PAUSED <prefix>`).
    public static func announce() {
        StandardStreams.error(line + "\n")
    }

    /// The line every `hotspot-lab bench` command prints first.
    public static var line: String {
        configuration == "release"
            ? "bench: release build"
            : "bench: debug build; bench/README.md's figures against issue targets come from a release build (`swift build -c release`, then .build/release/hotspot-lab bench ...)"
    }
}
