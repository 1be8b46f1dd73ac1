import Foundation

/// Whether this kernel can shape links with netem (the `link` step): loaded or built in (`/sys/module/sch_netem`).
public enum NetemSupport {
    public static var available: Bool { FileManager.default.fileExists(atPath: "/sys/module/sch_netem") }
}
