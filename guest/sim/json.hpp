// SPDX-License-Identifier: GPL-2.0-or-later
// A small strict JSON reader for case files (RFC 8259): objects, arrays,
// strings with escapes, numbers, true/false/null.  Rejects trailing
// commas, comments, duplicate keys, trailing text and nesting deeper than
// 64; every error names the line and column.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace viommu::sim::json {

class Value {
public:
    enum class Type { null, boolean, number, string, array, object };

    Type type() const { return type_; }
    bool is(Type t) const { return type_ == t; }
    bool boolean() const { return b_; }
    double number() const { return n_; }
    // The number's text as written (integers stay exact).
    const std::string &text() const { return s_; }
    const std::string &str() const { return s_; }
    const std::vector<Value> &array() const { return a_; }
    // Members in file order.
    const std::vector<std::pair<std::string, Value>> &members() const { return o_; }
    const Value *find(std::string_view key) const;
    unsigned line() const { return line_; }
    static const char *type_name(Type t);

private:
    friend class Parser;
    Type type_ = Type::null;
    bool b_ = false;
    double n_ = 0;
    std::string s_;
    std::vector<Value> a_;
    std::vector<std::pair<std::string, Value>> o_;
    unsigned line_ = 0;
};

// nullopt and @error ("line L, column C: what") on malformed text.
std::optional<Value> parse(std::string_view text, std::string *error);

// Writing: @v as the shortest text that reads back as it (null if not
// finite, which JSON cannot hold); @s as a JSON string.
std::string number(double v);
std::string quoted(std::string_view s);

}  // namespace viommu::sim::json
