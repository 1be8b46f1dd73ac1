import Testing

// HotspotDaemonTests does not link TestSupport: the same tag by name (Swift Testing matches tags by name).
extension Tag {
    /// See TestSupport's `Tag.timingSensitive`: run again beside a CPU hog by `ci/under-load.sh`.
    @Tag static var timingSensitive: Self
}
