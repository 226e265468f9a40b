import Foundation

/// Bar charts as inline SVG, rendered on the server (pages need no JavaScript). Every label is
/// XML-escaped here: versions come from uploads.
struct SVGChart {
    struct Bar {
        var label: String
        var value: Int
    }

    var bars: [Bar]
    /// A class on the `<svg>` (tests and styles find a chart by it).
    var name: String
    var width = 720
    var height = 140

    /// A chart with axis labels under some bars (`labelEvery`), each bar titled with its label and value.
    func render(labelEvery: Int = 1, caption: String) -> String {
        let top = max(bars.map(\.value).max() ?? 0, 1)
        let plotHeight = Double(height - 22)
        let slot = Double(width) / Double(max(bars.count, 1))
        var parts = [
            "<svg class=\"chart \(XMLText.escaped(name))\" role=\"img\" viewBox=\"0 0 \(width) \(height)\" width=\"\(width)\" height=\"\(height)\" aria-label=\"\(XMLText.escaped(caption))\">",
            "<text class=\"max\" x=\"2\" y=\"10\">\(top)</text>",
        ]
        for (index, bar) in bars.enumerated() {
            let barHeight = bar.value == 0 ? 0 : max(1, plotHeight * Double(bar.value) / Double(top))
            let barWidth = min(slot * 0.8, 40)
            let x = Double(index) * slot + (slot - barWidth) / 2
            parts.append(
                "<rect class=\"bar\" x=\"\(Self.format(x))\" y=\"\(Self.format(plotHeight - barHeight + 12))\" width=\"\(Self.format(barWidth))\" height=\"\(Self.format(barHeight))\"><title>\(XMLText.escaped(bar.label)): \(bar.value)</title></rect>"
            )
            if labelEvery > 0, index % labelEvery == 0 {
                parts.append(
                    "<text class=\"label\" x=\"\(Self.format(x))\" y=\"\(height - 2)\">\(XMLText.escaped(String(bar.label.prefix(12))))</text>"
                )
            }
        }
        parts.append("</svg>")
        return parts.joined()
    }

    /// A small chart with no labels, for a table row.
    func sparkline() -> String {
        SVGChart(bars: bars, name: name, width: 84, height: 18).renderPlain()
    }

    private func renderPlain() -> String {
        let top = max(bars.map(\.value).max() ?? 0, 1)
        let slot = Double(width) / Double(max(bars.count, 1))
        var parts = [
            "<svg class=\"chart \(XMLText.escaped(name))\" viewBox=\"0 0 \(width) \(height)\" width=\"\(width)\" height=\"\(height)\" aria-hidden=\"true\">"
        ]
        for (index, bar) in bars.enumerated() where bar.value > 0 {
            let barHeight = max(1, Double(height) * Double(bar.value) / Double(top))
            parts.append(
                "<rect class=\"bar\" x=\"\(Self.format(Double(index) * slot))\" y=\"\(Self.format(Double(height) - barHeight))\" width=\"\(Self.format(max(1, slot - 1)))\" height=\"\(Self.format(barHeight))\"><title>\(XMLText.escaped(bar.label)): \(bar.value)</title></rect>"
            )
        }
        parts.append("</svg>")
        return parts.joined()
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
