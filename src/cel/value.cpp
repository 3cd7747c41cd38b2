#include <charconv>
#include <cmath>
#include <limits>

#include "internal.h"

namespace mka::cel::internal {
namespace {

template <class T>
int order(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// An integer against a double: the double's integral part decides unless it equals the
// integer, then its fraction does.
std::optional<int> compareIntDouble(std::int64_t a, double b) {
  if (std::isnan(b)) return std::nullopt;
  if (b >= kTwo63) return -1;
  if (b < -kTwo63) return 1;
  const double whole = std::trunc(b);
  const auto wholeInt = static_cast<std::int64_t>(whole);
  if (a != wholeInt) return order(a, wholeInt);
  return order(0.0, b - whole);
}

std::optional<int> compareUintDouble(std::uint64_t a, double b) {
  if (std::isnan(b)) return std::nullopt;
  if (b < 0) return 1;
  if (b >= kTwo64) return -1;
  const double whole = std::trunc(b);
  const auto wholeUint = static_cast<std::uint64_t>(whole);
  if (a != wholeUint) return order(a, wholeUint);
  return order(0.0, b - whole);
}

std::optional<int> negate(std::optional<int> o) {
  if (!o) return o;
  return -*o;
}

bool sameKey(const Value& a, const Value& b) {
  if (a.isNumber() && b.isNumber()) return compareNumbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Bool: return a.boolValue() == b.boolValue();
    case Kind::String: return a.stringValue() == b.stringValue();
    default: return false;
  }
}

}  // namespace

std::string_view kindName(Kind kind) {
  switch (kind) {
    case Kind::Null: return "null_type";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Uint: return "uint";
    case Kind::Double: return "double";
    case Kind::String: return "string";
    case Kind::List: return "list";
    case Kind::Map: return "map";
  }
  return "?";
}

Value Value::ofBool(bool v) {
  Value out;
  out.kind_ = Kind::Bool;
  out.bool_ = v;
  return out;
}

Value Value::ofInt(std::int64_t v) {
  Value out;
  out.kind_ = Kind::Int;
  out.int_ = v;
  return out;
}

Value Value::ofUint(std::uint64_t v) {
  Value out;
  out.kind_ = Kind::Uint;
  out.uint_ = v;
  return out;
}

Value Value::ofDouble(double v) {
  Value out;
  out.kind_ = Kind::Double;
  out.double_ = v;
  return out;
}

Value Value::ofString(std::string v) {
  Value out;
  out.kind_ = Kind::String;
  out.string_ = std::move(v);
  return out;
}

Value Value::ofList(std::vector<Value> items) {
  Value out;
  out.kind_ = Kind::List;
  out.items_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return out;
}

Value Value::ofMap(std::vector<std::pair<Value, Value>> entries) {
  std::vector<Value> flat;
  flat.reserve(entries.size() * 2);
  for (auto& [k, v] : entries) {
    flat.push_back(std::move(k));
    flat.push_back(std::move(v));
  }
  Value out;
  out.kind_ = Kind::Map;
  out.items_ = std::make_shared<const std::vector<Value>>(std::move(flat));
  return out;
}

Value Value::fromJson(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return {};
    case json::value_t::boolean: return ofBool(value.get<bool>());
    case json::value_t::number_integer: return ofInt(value.get<std::int64_t>());
    case json::value_t::number_unsigned: {
      const auto u = value.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return ofInt(static_cast<std::int64_t>(u));
      return ofDouble(static_cast<double>(u));
    }
    case json::value_t::number_float: return ofDouble(value.get<double>());
    case json::value_t::string: return ofString(value.get<std::string>());
    case json::value_t::array: {
      Value out;
      out.kind_ = Kind::List;
      out.json_ = &value;
      return out;
    }
    case json::value_t::object: {
      Value out;
      out.kind_ = Kind::Map;
      out.json_ = &value;
      return out;
    }
    default: throw Failure("a JSON value of type " + std::string(value.type_name()) + " has no CEL type");
  }
}

std::size_t Value::size() const {
  if (json_) return json_->size();
  if (!items_) return 0;
  return kind_ == Kind::Map ? items_->size() / 2 : items_->size();
}

Value Value::item(std::size_t i) const {
  if (json_) return fromJson((*json_)[i]);
  return (*items_)[i];
}

std::optional<Value> Value::find(const Value& key) const {
  if (json_) {
    if (key.kind() != Kind::String) return std::nullopt;
    const auto it = json_->find(key.stringValue());
    if (it == json_->end()) return std::nullopt;
    return fromJson(*it);
  }
  for (std::size_t i = 0; i + 1 < items_->size(); i += 2)
    if (sameKey((*items_)[i], key)) return (*items_)[i + 1];
  return std::nullopt;
}

std::vector<Value> Value::keys() const {
  std::vector<Value> out;
  out.reserve(size());
  if (json_) {
    for (const auto& [k, v] : json_->items()) out.push_back(ofString(k));
    return out;
  }
  for (std::size_t i = 0; i < items_->size(); i += 2) out.push_back((*items_)[i]);
  return out;
}

json Value::toJson() const {
  switch (kind_) {
    case Kind::Null: return nullptr;
    case Kind::Bool: return bool_;
    case Kind::Int: return int_;
    case Kind::Uint: return uint_;
    case Kind::Double: return double_;
    case Kind::String: return string_;
    case Kind::List: {
      if (json_) return *json_;
      json out = json::array();
      for (const auto& v : *items_) out.push_back(v.toJson());
      return out;
    }
    case Kind::Map: {
      if (json_) return *json_;
      json out = json::object();
      for (std::size_t i = 0; i < items_->size(); i += 2) {
        const Value& k = (*items_)[i];
        if (k.kind() != Kind::String)
          throw Failure("a map with a " + std::string(kindName(k.kind())) + " key has no JSON form");
        out[k.stringValue()] = (*items_)[i + 1].toJson();
      }
      return out;
    }
  }
  return nullptr;
}

std::optional<int> compareNumbers(const Value& a, const Value& b) {
  switch (a.kind()) {
    case Kind::Int:
      if (b.kind() == Kind::Int) return order(a.intValue(), b.intValue());
      if (b.kind() == Kind::Uint)
        return a.intValue() < 0 ? -1 : order(static_cast<std::uint64_t>(a.intValue()), b.uintValue());
      return compareIntDouble(a.intValue(), b.doubleValue());
    case Kind::Uint:
      if (b.kind() == Kind::Uint) return order(a.uintValue(), b.uintValue());
      if (b.kind() == Kind::Int) return negate(compareNumbers(b, a));
      return compareUintDouble(a.uintValue(), b.doubleValue());
    default:
      if (b.kind() != Kind::Double) return negate(compareNumbers(b, a));
      if (std::isnan(a.doubleValue()) || std::isnan(b.doubleValue())) return std::nullopt;
      return order(a.doubleValue(), b.doubleValue());
  }
}

std::string formatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  // The shortest digits that read back as d, and the decimal exponent of the first one.
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string text(buf, end);
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  const auto e = text.find('e');
  const int exponent = std::stoi(text.substr(e + 1));
  std::string digits;
  for (char c : text.substr(0, e))
    if (c != '.') digits += c;
  // Go's %g with the shortest precision: scientific when the exponent is below -4 or at
  // least 6 ("1e+06"), with an exponent of at least two digits.
  if (exponent < -4 || exponent >= 6) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int magnitude = exponent < 0 ? -exponent : exponent;
    out += exponent < 0 ? "e-" : "e+";
    if (magnitude < 10) out += "0";
    return out + std::to_string(magnitude);
  }
  if (exponent < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const auto whole = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= whole) return sign + digits + std::string(whole - digits.size(), '0');
  return sign + digits.substr(0, whole) + "." + digits.substr(whole);
}

}  // namespace mka::cel::internal
