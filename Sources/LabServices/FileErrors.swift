import Foundation
import HotspotSystem

extension SystemError {
    /// A Foundation file operation's error (`FileManager`), as the lab's errors read: the operation, the path, and
    /// the errno text when the error carries a POSIX cause (otherwise Foundation's own description).
    public init(_ operation: String, _ object: String, fileError error: any Error) {
        let ns = error as NSError
        let posix = ns.domain == NSPOSIXErrorDomain ? ns : (ns.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
        if let posix, posix.domain == NSPOSIXErrorDomain {
            self.init(operation, object, errno: Int32(posix.code))
        } else {
            self.init(operation, object, reason: "\(error)")
        }
    }
}
