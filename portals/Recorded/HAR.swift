import Foundation
import Synchronization

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/): the parts a recorded portal needs, decoded with
// Foundation's JSONDecoder into typed structs, checked entry by entry so every error names the entry and field.

/// A HAR capture that cannot be used: where (entry index and field) and why.
public struct HARError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file (or "HAR input").
    public var file: String
    /// The JSON path of the field at fault, e.g. `log.entries[3].response.content.encoding`; empty for the whole file.
    public var field: String
    public var message: String

    public init(file: String, field: String, message: String) {
        self.file = file
        self.field = field
        self.message = message
    }

    public var description: String { "read HAR \(file): " + (field.isEmpty ? "" : "\(field): ") + message }
}

public struct HARNameValue: Codable, Sendable, Equatable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

public struct HARPostData: Codable, Sendable, Equatable {
    public var mimeType: String?
    public var text: String?
    public var params: [HARNameValue]?
    public init(mimeType: String?, text: String?, params: [HARNameValue]? = nil) {
        self.mimeType = mimeType
        self.text = text
        self.params = params
    }
}

public struct HARRequest: Codable, Sendable, Equatable {
    public var method: String
    public var url: String
    public var httpVersion: String?
    public var headers: [HARNameValue]
    public var queryString: [HARNameValue]?
    public var cookies: [HARNameValue]?
    public var postData: HARPostData?
    public init(method: String, url: String, headers: [HARNameValue] = [], postData: HARPostData? = nil) {
        self.method = method
        self.url = url
        self.httpVersion = "HTTP/1.1"
        self.headers = headers
        self.queryString = []
        self.cookies = []
        self.postData = postData
    }
}

public struct HARContent: Codable, Sendable, Equatable {
    public var size: Int?
    public var mimeType: String?
    public var text: String?
    public var encoding: String?
    /// Set by the reader for a binary image, font or media body (base64 in the file): its size; `text` is then nil.
    public var omittedBytes: Int?
    public init(mimeType: String?, text: String?, encoding: String? = nil) {
        self.size = text?.utf8.count
        self.mimeType = mimeType
        self.text = text
        self.encoding = encoding
    }
}

public struct HARResponse: Codable, Sendable, Equatable {
    public var status: Int
    public var statusText: String?
    public var httpVersion: String?
    public var headers: [HARNameValue]
    public var cookies: [HARNameValue]?
    public var content: HARContent
    public var redirectURL: String?
    public init(status: Int, headers: [HARNameValue] = [], content: HARContent) {
        self.status = status
        self.statusText = ""
        self.httpVersion = "HTTP/1.1"
        self.headers = headers
        self.cookies = []
        self.content = content
        self.redirectURL = headers.first { $0.name.lowercased() == "location" }?.value ?? ""
    }
}

public struct HAREntry: Codable, Sendable, Equatable {
    public var startedDateTime: String?
    public var time: Double?
    public var request: HARRequest
    public var response: HARResponse
    public init(startedDateTime: String? = nil, request: HARRequest, response: HARResponse) {
        self.startedDateTime = startedDateTime
        self.time = 0
        self.request = request
        self.response = response
    }
}

public struct HARCreator: Codable, Sendable, Equatable {
    public var name: String
    public var version: String
}

public struct HARLog: Codable, Sendable, Equatable {
    public var version: String
    public var creator: HARCreator?
    public var entries: [HAREntry]
}

/// A HAR 1.2 document.
public struct HARDocument: Codable, Sendable, Equatable {
    public var log: HARLog

    public init(entries: [HAREntry], creator: String = "hotspot-lab") {
        log = HARLog(version: "1.2", creator: HARCreator(name: creator, version: "1"), entries: entries)
    }

    /// The largest capture read (a sign-in is a few hundred kilobytes; a 50 MB file is a whole browsing session).
    public static let maximumBytes = 20 * 1024 * 1024

    /// Reads a HAR file (at most `maximumBytes`).
    public static func read(path: String) throws -> HARDocument {
        let url = URL(fileURLWithPath: path)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        if let size, size > maximumBytes {
            throw HARError(file: path, field: "", message: "the file is \(size / 1_048_576) MB; at most \(maximumBytes / 1_048_576) MB is read (export only the sign-in: clear the network log, sign in, export)")
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw HARError(file: path, field: "", message: "cannot read the file: \(error.localizedDescription)")
        }
        return try parse(data, file: path)
    }

    /// Decodes and checks a HAR 1.2 capture: JSON, version 1.2, at least one entry, each entry with a usable
    /// request and response. Bodies encoded as base64 are decoded here (text only).
    public static func parse(_ data: Data, file: String = "HAR input") throws -> HARDocument {
        if data.count > maximumBytes {
            throw HARError(file: file, field: "", message: "the input is \(data.count / 1_048_576) MB; at most \(maximumBytes / 1_048_576) MB is read")
        }
        let json: Any
        do { json = try JSONSerialization.jsonObject(with: data) } catch {
            let position = jsonPosition(error, in: data).map { " at \($0)" } ?? ""
            throw HARError(file: file, field: "", message: "not JSON\(position) (\(jsonProblem(error))); truncated, or not the JSON a browser's developer tools export")
        }
        guard let top = json as? [String: Any], let log = top["log"] as? [String: Any] else {
            throw HARError(file: file, field: "log", message: "missing; a HAR file is an object with a `log` object")
        }
        guard let version = log["version"] as? String else {
            throw HARError(file: file, field: "log.version", message: "missing; expected \"1.2\"")
        }
        guard version == "1.2" else {
            throw HARError(file: file, field: "log.version", message: "HAR version \(version) is not read; expected 1.2 (what Safari, Chrome, Firefox, Charles and mitmproxy export)")
        }
        guard let entries = log["entries"] as? [Any] else {
            throw HARError(file: file, field: "log.entries", message: "missing or not a list")
        }
        guard !entries.isEmpty else {
            throw HARError(file: file, field: "log.entries", message: "no entries: the capture recorded no requests (start recording before joining the network)")
        }
        var decoded: [HAREntry] = []
        for (index, raw) in entries.enumerated() {
            let base = "log.entries[\(index)]"
            guard let object = raw as? [String: Any] else { throw HARError(file: file, field: base, message: "expected an object") }
            for (part, keys) in [("request", ["method", "url", "headers"]), ("response", ["status", "headers", "content"])] {
                guard let inner = object[part] as? [String: Any] else {
                    throw HARError(file: file, field: "\(base).\(part)", message: "missing or not an object")
                }
                for key in keys where inner[key] == nil {
                    throw HARError(file: file, field: "\(base).\(part).\(key)", message: "missing")
                }
            }
            var entry: HAREntry
            do {
                let entryData = try JSONSerialization.data(withJSONObject: object)
                entry = try JSONDecoder().decode(HAREntry.self, from: entryData)
            } catch let error as DecodingError {
                throw HARError(file: file, field: base + decodingPath(error), message: decodingProblem(error))
            } catch {
                throw HARError(file: file, field: base, message: "\(error)")
            }
            guard URLParts(entry.request.url) != nil else {
                throw HARError(file: file, field: "\(base).request.url", message: "expected an absolute http:// or https:// URL, found `\(entry.request.url)`")
            }
            if let encoding = entry.response.content.encoding, !encoding.isEmpty {
                guard encoding == "base64" else {
                    throw HARError(file: file, field: "\(base).response.content.encoding", message: "unknown encoding `\(encoding)`; expected base64 or none")
                }
                guard let data = Data(base64Encoded: entry.response.content.text ?? "", options: .ignoreUnknownCharacters) else {
                    throw HARError(file: file, field: "\(base).response.content.text", message: "declared base64 but is not valid base64")
                }
                guard let text = String(data: data, encoding: .utf8) else {
                    let mime = entry.response.content.mimeType ?? "no type"
                    if ["image/", "font/", "audio/", "video/"].contains(where: { mime.lowercased().hasPrefix($0) }) {
                        // An asset the lab's text-only portal cannot serve: kept out (404), the import says so.
                        entry.response.content.text = nil
                        entry.response.content.encoding = nil
                        entry.response.content.omittedBytes = data.count
                        decoded.append(entry)
                        continue
                    }
                    throw HARError(file: file, field: "\(base).response.content.text",
                                   message: "a base64 body of \(data.count) bytes (\(mime)) that is not UTF-8 text; the lab's portal serves text only (remove the entry)")
                }
                entry.response.content.text = text
                entry.response.content.encoding = nil
            }
            decoded.append(entry)
        }
        return HARDocument(log: HARLog(version: version, creator: nil, entries: decoded))
    }

    init(log: HARLog) { self.log = log }

    /// Pretty-printed JSON (the HAR writer).
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    static func jsonProblem(_ error: any Error) -> String {
        let ns = error as NSError
        return (ns.userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
    }

    /// `line L, column C` of a JSON syntax error when Foundation gives its byte offset; nil otherwise.
    static func jsonPosition(_ error: any Error, in data: Data) -> String? {
        // Foundation gives the byte offset in userInfo, or only in its message ("around character 30").
        var index = (error as NSError).userInfo["NSJSONSerializationErrorIndex"] as? Int
        if index == nil, let range = jsonProblem(error).range(of: "character ") {
            index = Int(jsonProblem(error)[range.upperBound...].prefix { $0.isNumber })
        }
        if index == nil, jsonProblem(error).lowercased().contains("end of file") { index = data.count }
        guard let offset = index, offset >= 0, offset <= data.count else { return nil }
        let before = data.prefix(offset)
        let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
        let column = offset - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
        return "line \(line), column \(column)"
    }

    static func decodingPath(_ error: DecodingError) -> String {
        let path: [any CodingKey]
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c): path = c.codingPath
        case .keyNotFound(let key, let c): path = c.codingPath + [key]
        @unknown default: path = []
        }
        return path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }

    static func decodingProblem(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(let type, _): return "expected \(type == String.self ? "a string" : type == Int.self ? "a whole number" : "\(type)")"
        case .valueNotFound: return "missing (null)"
        case .keyNotFound: return "missing"
        case .dataCorrupted(let c): return c.debugDescription
        @unknown default: return "\(error)"
        }
    }
}

/// An absolute http(s) URL split into its parts (no Foundation URL: HAR URLs carry raw MACs and odd characters).
public struct URLParts: Sendable, Equatable {
    public var scheme: String
    public var host: String
    /// The port when given (`:8080`), else nil.
    public var port: Int?
    public var path: String
    /// The raw query after `?` (nil when there is none).
    public var query: String?

    public init?(_ text: String) {
        let lower = text.lowercased()
        guard let sep = text.range(of: "://"), lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return nil }
        scheme = String(text[..<sep.lowerBound]).lowercased()
        var rest = text[sep.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            guard let number = Int(authority[authority.index(after: colon)...]) else { return nil }
            port = number
            authority = authority[..<colon]
        } else {
            port = nil
        }
        guard !authority.isEmpty else { return nil }
        host = authority.lowercased()
        let tail = rest[authorityEnd...]
        if let q = tail.firstIndex(of: "?") {
            path = String(tail[..<q])
            query = String(tail[tail.index(after: q)...])
        } else {
            path = String(tail)
            query = nil
        }
        if path.isEmpty { path = "/" }
    }

    /// `scheme://host[:port]`.
    public var origin: String { "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "") }
}

/// Records exchanges as HAR 1.2 entries (the tests record the lab's own portal kinds with it, for a round trip).
public final class HARWriter: Sendable {
    private let entries = Synchronization.Mutex<[HAREntry]>([])

    public init() {}

    /// One exchange; a `Location` header is also the entry's `redirectURL`, as browsers export it.
    public func record(method: String, url: String, requestHeaders: [(String, String)] = [], requestBody: String? = nil,
                       status: Int, responseHeaders: [(String, String)] = [], responseBody: String = "") {
        let contentType = responseHeaders.first { $0.0.lowercased() == "content-type" }?.1
        let post = requestBody.map {
            HARPostData(mimeType: requestHeaders.first { $0.0.lowercased() == "content-type" }?.1 ?? "application/x-www-form-urlencoded", text: $0)
        }
        let entry = HAREntry(
            startedDateTime: ISO8601DateFormatter().string(from: Date()),
            request: HARRequest(method: method, url: url, headers: requestHeaders.map { HARNameValue(name: $0.0, value: $0.1) }, postData: post),
            response: HARResponse(status: status, headers: responseHeaders.map { HARNameValue(name: $0.0, value: $0.1) },
                                  content: HARContent(mimeType: contentType, text: responseBody)))
        entries.withLock { $0.append(entry) }
    }

    public var document: HARDocument { entries.withLock { HARDocument(entries: $0) } }
}
