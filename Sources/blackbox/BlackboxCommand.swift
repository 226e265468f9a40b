#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxFormat
    import Foundation

    /// The `blackbox` command. Exit status (every subcommand): 0 success, 1 a problem with the input (a
    /// file that is missing or not what it should be), 64 a usage error; `upload` and `doctor` add
    /// their own (see their help).
    @main
    struct BlackboxCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "blackbox",
            abstract: "Read, bundle and upload Blackbox crash reports and log files.",
            version: BlackboxVersion.current,
            subcommands: [
                Show.self, Logs.self, BundleCommand.self, Upload.self, DeliverCrash.self, Symbols.self, Doctor.self,
            ])
    }

    /// A problem with what the user pointed at: one clear line, exit status 1, never a stack trace.
    struct InputProblem: Error, CustomStringConvertible {
        var description: String
    }

    extension ParsableCommand {
        static func failing(_ message: String, status: Int32 = 1) -> ExitCode {
            FileHandle.standardError.write(Data("blackbox: \(message)\n".utf8))
            return ExitCode(status)
        }
    }
#else
    // Built without the `Tools` trait (a plain `swift build`): say how to get the real tool.
    import Foundation

    @main
    enum BlackboxCommand {
        static func main() {
            print(
                "blackbox: this build has no command-line tool; build it with `swift build --traits Tools` (or `make`)")
            exit(2)
        }
    }
#endif
