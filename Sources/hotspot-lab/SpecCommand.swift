import ArgumentParser
import HotspotCore

extension SpecFormat: ExpressibleByArgument {}

struct SpecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spec",
        abstract: "Print the state machine's transition table and diagram, generated from the table itself."
    )

    @Option(help: "markdown, dot or mermaid")
    var format: SpecFormat = .markdown

    func run() throws {
        print(SpecDocument.render(format), terminator: "")
    }
}
