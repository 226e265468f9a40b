import Foundation
import Testing

@testable import Blackbox

/// What a request's scope notes of the errors its code logged and threw.
@Suite struct ThrowSiteNotesTests {
    struct Declined: Error {}
    struct Timeout: Error {}

    @Test("a log call learns a thrown site of its error's type, and nothing when the site is its own")
    func loggedCallsLearnThrownSites() {
        let notes = ThrowSiteNotes()
        let declined = ObjectIdentifier(Declined.self)
        let here = ThrowSite(fileID: "Shop/Pay.swift", line: 10, function: "pay()")
        #expect(notes.noteLogged(declined, at: here, captured: false) == nil)
        #expect(notes.site(of: Declined())?.site == here, "the log call is the site a later capture finds")
        notes.note(Declined(), at: ThrowSite(fileID: "Shop/Card.swift", line: 3, function: "charge()"), origin: .thrown)
        let thrown = notes.noteLogged(declined, at: here, captured: true)
        #expect(thrown?.fileID == "Shop/Card.swift" && thrown?.line == 3)
        #expect(notes.noteLogged(ObjectIdentifier(Timeout.self), at: here, captured: false) == nil, "by type")
        #expect(notes.wasCaptured(Declined()) && !notes.wasCaptured(Timeout()))
    }

    struct Typed<T>: Error {}

    @Test("a request remembers the last few error types its log calls captured")
    func capturedTypesAreBounded() {
        let notes = ThrowSiteNotes()
        let here = ThrowSite(fileID: "A.swift", line: 1, function: "f()")
        let errors: [any Error] = [
            Typed<Int>(), Typed<UInt>(), Typed<Int8>(), Typed<UInt8>(), Typed<Int16>(), Typed<UInt16>(),
            Typed<Int32>(), Typed<UInt32>(), Typed<Int64>(),
        ]
        for error in errors { _ = notes.noteLogged(ObjectIdentifier(type(of: error)), at: here, captured: true) }
        _ = notes.noteLogged(ObjectIdentifier(Typed<UInt8>.self), at: here, captured: true)  // known: kept once
        #expect(!notes.wasCaptured(errors[0]), "the oldest of nine is forgotten")
        #expect(errors.dropFirst().allSatisfy { notes.wasCaptured($0) })
    }

    @Test("a call that repeats the last note still records its capture and learns a later thrown site")
    func repeatedCallsWithoutTheLock() {
        let notes = ThrowSiteNotes()
        let declined = ObjectIdentifier(Declined.self)
        let retry = ThrowSite(fileID: "Shop/Pay.swift", line: 10, function: "pay()")
        for _ in 0..<3 { #expect(notes.noteLogged(declined, at: retry, captured: false) == nil) }
        #expect(!notes.wasCaptured(Declined()))
        #expect(notes.noteLogged(declined, at: retry, captured: true) == nil)
        #expect(notes.wasCaptured(Declined()), "the same site, now capturing: the capture is recorded")
        // Another function at the same file and line is another site.
        let other = ThrowSite(fileID: "Shop/Pay.swift", line: 10, function: "refund()")
        _ = notes.noteLogged(declined, at: other, captured: true)
        #expect(notes.site(of: Declined())?.site == other)
        // A thrown note of the type, older than the last logged note, is still what a repeat learns.
        notes.note(Declined(), at: ThrowSite(fileID: "Shop/Card.swift", line: 3, function: "charge()"), origin: .thrown)
        #expect(notes.noteLogged(declined, at: retry, captured: true)?.line == 3)
        #expect(notes.noteLogged(declined, at: retry, captured: true)?.line == 3, "a repeat after a thrown note")
        // A thrown note of another type changes nothing for this one.
        notes.note(Timeout(), at: ThrowSite(fileID: "Shop/Net.swift", line: 7, function: "send()"), origin: .thrown)
        let timeouts = ObjectIdentifier(Timeout.self)
        #expect(notes.noteLogged(timeouts, at: retry, captured: false)?.line == 7)
        #expect(notes.noteLogged(timeouts, at: retry, captured: false)?.line == 7)
    }

    @Test("a site logged again is noted once; a thrown site is forgotten with its note")
    func repeatedSitesAndEvictedThrownSites() {
        let notes = ThrowSiteNotes()
        let declined = ObjectIdentifier(Declined.self)
        notes.note(Declined(), at: ThrowSite(fileID: "Shop/Card.swift", line: 3, function: "charge()"), origin: .thrown)
        let retry = ThrowSite(fileID: "Shop/Pay.swift", line: 10, function: "pay()")
        for _ in 0..<20 { #expect(notes.noteLogged(declined, at: retry, captured: true)?.line == 3) }
        #expect(notes.site(of: Declined())?.origin == .thrown, "twenty calls at one line left the thrown note")
        // A site made at run time (other words, the same text) is noted again: harmless, and kept apart.
        let built = ThrowSite(fileID: String("Shop/Pay.swift".reversed().reversed()), line: 10, function: "pay()")
        _ = notes.noteLogged(declined, at: built, captured: true)
        for line in 11..<18 {
            _ = notes.noteLogged(declined, at: ThrowSite(fileID: "Shop/Pay.swift", line: UInt(line)), captured: true)
        }
        #expect(notes.noteLogged(declined, at: retry, captured: true) == nil, "the thrown note was the oldest of nine")
        #expect(notes.site(of: Declined())?.site == retry && notes.site(of: Declined())?.origin == .logged)
    }
}

extension ThrowSiteNotes {
    fileprivate func noteLogged(_ errorType: ObjectIdentifier, at site: ThrowSite, captured: Bool) -> ThrowSite? {
        noteLogged(errorType, file: site.fileID, line: site.line, function: site.function, captured: captured)
    }
}
