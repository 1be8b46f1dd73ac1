/// A protocol error: a stable code (sent on the wire as its raw value) and a message naming what was wrong.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        /// A frame's length prefix exceeds the limit (the connection is closed: it cannot resynchronise).
        case frameTooLarge
        /// A frame was started but not completed within the daemon's partial-frame timeout (the connection is closed).
        case incompleteFrame
        /// The frame is not a UTF-8 JSON object.
        case malformedJSON
        /// The object has no `type`, or a `type` this side does not know.
        case unknownType
        /// A field is missing or has the wrong JSON type or value.
        case invalidField
        /// `register` named a protocol version this daemon does not speak.
        case unsupportedVersion
        /// A message other than `register` before registering.
        case notRegistered
        /// `register` on a connection that already registered, or an identifier already connected.
        case alreadyRegistered
        /// The display name is empty or longer than 15 characters.
        case invalidDisplayName
        /// A response the daemon rejected: unknown, duplicate, late, withdrawn or another helper's command.
        case rejectedResponse
        /// The helper's output queue overflowed (it does not read): the connection is closed.
        case overloaded
        /// A control request failed (bad arguments, nothing to act on).
        case requestFailed
        /// `register` or `setManager` named an app that `--apps` does not declare.
        case unknownApp
        /// A provider registered with a role its app does not declare, or under another identifier.
        case undeclaredRole
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
