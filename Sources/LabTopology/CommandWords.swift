/// A command line of a lab file (a station's `helpers:`, a scenario's `helpers:`, an app's provider `command:`):
/// spaces separate words, double quotes group (`--network "Cafe Lumiere"`). A quote left open is an error at
/// parse time (`Field.commandLine`), not closed silently at the end of the line.
public enum CommandWords {
    /// The words, and the offset (in characters, from 0) of a double quote left open, nil when all are closed.
    public static func split(_ command: String) -> (words: [String], unclosedQuote: Int?) {
        var words: [String] = []
        var current = ""
        var openedAt: Int?
        var started = false
        for (offset, c) in command.enumerated() {
            if c == "\"" {
                openedAt = openedAt == nil ? offset : nil
                started = true
                continue
            }
            if c == " " && openedAt == nil {
                if started { words.append(current) }
                current = ""
                started = false
                continue
            }
            current.append(c)
            started = true
        }
        if started { words.append(current) }
        return (words, openedAt)
    }
}

extension Field {
    /// A non-empty command line whose double quotes are balanced.
    package func commandLine() throws -> String {
        let text = try nonEmptyString()
        if let offset = CommandWords.split(text).unclosedQuote {
            throw error("the double quote at character \(offset + 1) of `\(text)` is never closed; close it (quotes group words: --network \"Cafe Lumiere\")")
        }
        return text
    }
}
