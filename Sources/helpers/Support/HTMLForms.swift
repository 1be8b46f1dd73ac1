// Reading portal pages: the HTML form parser the reference helpers share (pure: unit-tested on the pages the
// lab's portal kinds render). Each helper decides for itself what a page is (PortalPage, VoucherPage).
import Foundation

/// An `<input>` or a named `<button>` of a form.
public struct FormField: Equatable, Sendable {
    public var name: String
    public var type: String
    public var value: String
    /// What the field is for, when its name does not say.
    public var placeholder: String = ""

    public init(name: String, type: String, value: String, placeholder: String = "") {
        (self.name, self.type, self.value, self.placeholder) = (name, type, value, placeholder)
    }
}

/// A `<form>`: where it goes, how, and its fields; `text` is its visible text (tags removed).
public struct HTMLForm: Equatable, Sendable {
    public var action: String
    public var method: String
    public var fields: [FormField]
    public var text: String

    public init(action: String, method: String, fields: [FormField], text: String) {
        (self.action, self.method, self.fields, self.text) = (action, method, fields, text)
    }

    /// Fields a person would have to type into.
    public var typedFields: [FormField] { fields.filter { ["text", "email", "tel", "number", "password", ""].contains($0.type) } }
    public var passwordField: FormField? { fields.first { $0.type == "password" } }

    /// What the browser submits without typing: hidden fields, ticked boxes, the first named submit button.
    public var defaultSubmission: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        var buttonTaken = false
        for field in fields where !field.name.isEmpty {
            switch field.type {
            case "hidden": out.append((field.name, field.value))
            case "checkbox": out.append((field.name, field.value.isEmpty ? "on" : field.value))
            case "submit" where !buttonTaken:
                buttonTaken = true
                out.append((field.name, field.value))
            default: break
            }
        }
        return out
    }
}

public enum HTMLScan {
    /// Every form of the page, in order.
    public static func forms(in html: String) -> [HTMLForm] {
        var forms: [HTMLForm] = []
        var rest = html[...]
        while let open = rest.range(of: "<form", options: .caseInsensitive) {
            guard let tagEnd = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let attributes = attributes(of: rest[open.upperBound..<tagEnd])
            let bodyStart = rest.index(after: tagEnd)
            let close = rest[bodyStart...].range(of: "</form", options: .caseInsensitive)
            let body = rest[bodyStart..<(close?.lowerBound ?? rest.endIndex)]
            forms.append(HTMLForm(action: attributes["action"] ?? "", method: (attributes["method"] ?? "get").lowercased(),
                                  fields: fields(in: body), text: visibleText(body)))
            rest = rest[(close?.upperBound ?? rest.endIndex)...]
        }
        return forms
    }

    /// `<input>` tags and named `<button>`s, in order (with their `placeholder`).
    public static func fields(in body: Substring) -> [FormField] {
        var out: [FormField] = []
        var rest = body
        while let lt = rest.firstIndex(of: "<") {
            let after = rest[rest.index(after: lt)...]
            guard let gt = after.firstIndex(of: ">") else { break }
            let tag = after[..<gt]
            let name = tag.prefix { $0.isLetter }.lowercased()
            if name == "input" || name == "button" {
                let a = attributes(of: tag.dropFirst(name.count))
                let type = (a["type"] ?? (name == "button" ? "submit" : "text")).lowercased()
                out.append(FormField(name: a["name"] ?? "", type: type, value: a["value"] ?? "", placeholder: a["placeholder"] ?? ""))
            }
            rest = after[after.index(after: gt)...]
        }
        return out
    }

    /// `name="v"`, `name='v'`, `name=v` and bare `name`; names lowercased, entities decoded.
    public static func attributes(of text: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var i = text.startIndex
        func skipSpace() { while i < text.endIndex, text[i].isWhitespace || text[i] == "/" { i = text.index(after: i) } }
        while true {
            skipSpace()
            guard i < text.endIndex else { break }
            let nameStart = i
            while i < text.endIndex, !text[i].isWhitespace, text[i] != "=", text[i] != ">" { i = text.index(after: i) }
            let name = text[nameStart..<i].lowercased()
            skipSpace()
            var value = ""
            if i < text.endIndex, text[i] == "=" {
                i = text.index(after: i)
                while i < text.endIndex, text[i].isWhitespace { i = text.index(after: i) }
                if i < text.endIndex, text[i] == "\"" || text[i] == "'" {
                    let quote = text[i]
                    let start = text.index(after: i)
                    let end = text[start...].firstIndex(of: quote) ?? text.endIndex
                    value = String(text[start..<end])
                    i = end < text.endIndex ? text.index(after: end) : end
                } else {
                    let start = i
                    while i < text.endIndex, !text[i].isWhitespace { i = text.index(after: i) }
                    value = String(text[start..<i])
                }
            }
            if !name.isEmpty, out[name] == nil { out[name] = decodeEntities(value) }
            if i == nameStart { i = text.index(after: i) }
        }
        return out
    }

    public static func decodeEntities(_ s: String) -> String {
        guard s.contains("&") else { return s }
        return s.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The text outside tags and comments, white space collapsed.
    public static func visibleText(_ html: Substring) -> String {
        var out = ""
        var rest = html
        while let lt = rest.firstIndex(of: "<") {
            out += rest[..<lt]
            let after = rest[lt...]
            if after.hasPrefix("<!--") {
                rest = after.range(of: "-->").map { after[$0.upperBound...] } ?? ""
            } else {
                rest = after.firstIndex(of: ">").map { after[after.index(after: $0)...] } ?? ""
            }
            out += " "
        }
        out += rest
        return decodeEntities(out.split(whereSeparator: \.isWhitespace).joined(separator: " "))
    }
}
