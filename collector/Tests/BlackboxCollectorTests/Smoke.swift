import Testing
@Test func nothing() {}
