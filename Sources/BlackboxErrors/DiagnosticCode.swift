/// A domain's error codes, declared as one small enum:
///
/// ```swift
/// enum PaymentError: Int, DiagnosticCode {
///     static let domain = "com.example.shop.payment"
///     case cardDeclined = 1
///     case gatewayUnreachable = 2
///
///     var developerDescription: String {
///         switch self {
///         case .cardDeclined: "the card was declined"
///         case .gatewayUnreachable: "the payment gateway did not answer"
///         }
///     }
/// }
/// throw DiagnosticError(PaymentError.cardDeclined)
/// ```
///
/// `developerDescription` is what logs show (always in the developer's language); what users see comes
/// from the domain's string table at display time (`ErrorLocalization`), falling back to it.
public protocol DiagnosticCode: RawRepresentable, Sendable where RawValue == Int {
    static var domain: String { get }
    var developerDescription: String { get }
}
