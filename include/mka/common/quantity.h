#pragma once
// Kubernetes resource quantities ("500m", "2Gi", "1e3"), as resource.ParseQuantity reads them,
// held in thousandths of their unit so CPU and bytes add and compare exactly.
//
// Threads: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mka::quantity {

// The text Go's resource.ParseQuantity answers for what is not a quantity.
inline constexpr std::string_view kSyntaxError =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

// The quantity in thousandths ("1500m" -> 1500, "2" -> 2000, "1Ki" -> 1024000), rounded up as
// Kubernetes rounds MilliValue; nullopt when `text` is not a quantity or does not fit.
std::optional<std::int64_t> parseMilli(std::string_view text);

// A canonical-enough spelling that parses back to `milli`: "2", "1500m".
std::string formatMilli(std::int64_t milli);

}  // namespace mka::quantity
