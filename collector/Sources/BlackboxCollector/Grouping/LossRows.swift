import BlackboxFormat

/// Delivery losses as the plan stores them, added to the day the upload arrived: per version,
/// category and reason. A sender names its categories and reasons, so they are cut to a short word of
/// `a-z 0-9 _ . -` (else `unknown`), at most `maxRows` a bundle, each quantity within 0…`maxQuantity`.
struct LossRow: Sendable, Equatable {
    var versionKey: String
    var category: String
    var reason: String
    var quantity: Int
}

enum LossRows {
    static let maxRows = 64
    static let maxQuantity = 1_000_000
    static let maxNameLength = 64

    static func rows(_ losses: [DeliveryLoss]) -> [LossRow] {
        var rows: [LossRow] = []
        for loss in losses where loss.quantity > 0 {
            let version = loss.appVersion.map { String($0.prefix(TallyKey.maxSessionVersionLength)) }
            let row = LossRow(
                versionKey: TallyKey.version(version), category: name(loss.category), reason: name(loss.reason),
                quantity: min(loss.quantity, maxQuantity))
            if let index = rows.firstIndex(where: {
                ($0.versionKey, $0.category, $0.reason) == (row.versionKey, row.category, row.reason)
            }) {
                rows[index].quantity = min(rows[index].quantity + row.quantity, maxQuantity)
            } else if rows.count < maxRows {
                rows.append(row)
            }
        }
        return rows
    }

    static func name(_ text: String?) -> String {
        let allowed = (text ?? "").lowercased().unicodeScalars.filter {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." || $0 == "-"
        }
        let cut = String(String.UnicodeScalarView(allowed.prefix(maxNameLength)))
        return cut.isEmpty ? TallyKey.unknown : cut
    }
}
