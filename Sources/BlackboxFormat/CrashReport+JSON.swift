#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The report's JSON as `CrashReport.makeEncoder()` writes it, byte for byte, without `JSONEncoder`
/// (see `SortedPrettyJSON` for why). Each type lists its members in sorted key order; a member added
/// to a type must be added here too: `CrashReportJSONTests` compares the two on a report with every
/// field set, and checks that it has every field set.
extension CrashReport: SortedJSONWritable {
    /// The same bytes as `CrashReport.makeEncoder().encode(self)`.
    public func encoded() -> Data {
        var json = SortedPrettyJSON()
        write(to: &json)
        return Data(json.bytes)
    }

    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("annotations", annotations)
            json.member("app", app)
            json.member("fatalMessage", fatalMessage)
            json.member("formatVersion", formatVersion)
            json.member("frameSource", frameSource)
            json.member("frames", frames)
            json.member("host", host)
            json.member("id", id.uuidString)
            json.member("images", images)
            json.member("kind", kind.rawValue)
            json.member("logTail", logTail)
            json.member("metadata", metadata)
            json.member("notes", notes)
            json.member("omittedFrames", omittedFrames)
            json.member("partial", partial)
            json.member("process", process)
            json.member("reason", reason)
            json.member("registers", registers)
            json.member("scope", scope)
            json.member("signal", signal)
            json.member("symbolicated", symbolicated)
            json.member("termination", termination)
            json.member("thread", thread)
            json.member("threads", threads)
        }
    }
}

extension CrashReport.App: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("build", build)
            json.member("name", name)
            json.member("version", version)
        }
    }
}

extension CrashReport.Host: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("architecture", architecture)
            json.member("kernel", kernel)
            json.member("name", name)
            json.member("os", os)
        }
    }
}

extension CrashReport.ProcessDetails: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("crashTime", ReportTime.format(crashTime))
            json.member("path", path)
            json.member("pid", pid)
            json.member("startTime", startTime.map(ReportTime.format))
        }
    }
}

extension CrashReport.SignalDetails: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("access", access)
            json.member("code", code)
            json.member("codeName", codeName)
            json.member("faultAddress", faultAddress)
            json.member("faultMemory", faultMemory)
            json.member("name", name)
            json.member("number", number)
            json.member("senderPID", senderPID)
            json.member("stackMemory", stackMemory)
        }
    }
}

extension CrashReport.MemoryNeighbourhood: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("above", above)
            json.member("below", below)
            json.member("holding", holding)
        }
    }
}

extension CrashReport.MemoryMapping: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("end", end)
            json.member("path", path)
            json.member("permissions", permissions)
            json.member("start", start)
        }
    }
}

extension CrashReport.ThreadDetails: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("id", id)
            json.member("name", name)
        }
    }
}

extension CrashReport.TerminationDetails: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("cause", cause)
            json.member("cgroupOOMKillsAfter", cgroupOOMKillsAfter)
            json.member("cgroupOOMKillsBefore", cgroupOOMKillsBefore)
            json.member("detectedAt", ReportTime.format(detectedAt))
            json.member("lastSeenAlive", ReportTime.format(lastSeenAlive))
        }
    }
}

extension CrashReport.ThreadStack: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("crashed", crashed)
            json.member("frameSource", frameSource)
            json.member("frames", frames)
            json.member("id", id)
            json.member("name", name)
            json.member("problem", problem)
            json.member("scope", scope)
        }
    }
}

extension CrashReport.Register: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("name", name)
            json.member("value", value)
        }
    }
}

extension CrashReport.Frame: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("address", address)
            json.member("asyncResume", asyncResume)
            json.member("imageIndex", imageIndex)
            json.member("imageOffset", imageOffset)
            json.member("inApp", inApp)
            json.member("index", index)
            json.member("sourceContext", sourceContext)
            json.member("symbolication", symbolication?.rawValue)
            json.member("symbols", symbols)
        }
    }
}

extension CrashReport.SourceContext: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("after", after)
            json.member("before", before)
            json.member("line", line)
        }
    }
}

extension CrashReport.Symbol: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("column", column)
            json.member("file", file)
            json.member("function", function)
            json.member("inlined", inlined)
            json.member("line", line)
            json.member("mangledName", mangledName)
        }
    }
}

extension CrashReport.Image: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("bias", bias)
            json.member("buildID", buildID)
            json.member("buildIDMatches", buildIDMatches)
            json.member("end", end)
            json.member("path", path)
            json.member("start", start)
        }
    }
}

extension CrashReport.Omission: SortedJSONWritable {
    package func write(to json: inout SortedPrettyJSON) {
        json.object { json in
            json.member("count", count)
            json.member("omittedAfterIndex", omittedAfterIndex)
        }
    }
}
