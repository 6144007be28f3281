// SPDX-License-Identifier: GPL-2.0-or-later
#include "json.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace viommu::sim::json {

const Value *Value::find(std::string_view key) const
{
    for (const auto &[k, v] : o_)
        if (k == key)
            return &v;
    return nullptr;
}

const char *Value::type_name(Type t)
{
    switch (t) {
    case Type::null:
        return "null";
    case Type::boolean:
        return "a boolean";
    case Type::number:
        return "a number";
    case Type::string:
        return "a string";
    case Type::array:
        return "an array";
    case Type::object:
        return "an object";
    }
    return "?";
}

class Parser {
public:
    explicit Parser(std::string_view t) : t_(t) {}

    std::optional<Value> document(std::string *error)
    {
        Value v;
        ws();
        if (value(v, 0)) {
            ws();
            if (p_ != t_.size())
                fail("unexpected text after the top-level value");
        }
        if (!err_.empty()) {
            if (error)
                *error = where() + err_;
            return std::nullopt;
        }
        return v;
    }

private:
    std::string_view t_;
    size_t p_ = 0;
    std::string err_;

    std::string where() const
    {
        unsigned line = 1, col = 1;
        for (size_t i = 0; i < p_ && i < t_.size(); i++) {
            if (t_[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        return "line " + std::to_string(line) + ", column " + std::to_string(col) + ": ";
    }
    unsigned line_now() const
    {
        unsigned line = 1;
        for (size_t i = 0; i < p_ && i < t_.size(); i++)
            line += t_[i] == '\n';
        return line;
    }
    bool fail(std::string msg)
    {
        if (err_.empty())
            err_ = std::move(msg);
        return false;
    }
    bool eof() const { return p_ >= t_.size(); }
    char peek() const { return eof() ? '\0' : t_[p_]; }
    void ws()
    {
        while (!eof() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r'))
            p_++;
    }
    bool literal(std::string_view word)
    {
        if (t_.substr(p_, word.size()) != word)
            return fail("unknown literal (expected " + std::string(word) + ")");
        p_ += word.size();
        return true;
    }

    bool value(Value &v, unsigned depth)
    {
        if (depth > 64)
            return fail("nesting deeper than 64");
        v.line_ = line_now();
        switch (peek()) {
        case '{':
            return object(v, depth);
        case '[':
            return array(v, depth);
        case '"':
            v.type_ = Value::Type::string;
            return string(v.s_);
        case 't':
            v.type_ = Value::Type::boolean;
            v.b_ = true;
            return literal("true");
        case 'f':
            v.type_ = Value::Type::boolean;
            return literal("false");
        case 'n':
            return literal("null");
        case '\0':
            return fail("unexpected end of text");
        default:
            if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
                return number(v);
            return fail(std::string("unexpected character '") + peek() + "'");
        }
    }

    bool digits()
    {
        size_t s = p_;
        while (!eof() && t_[p_] >= '0' && t_[p_] <= '9')
            p_++;
        return p_ > s;
    }
    bool number(Value &v)
    {
        size_t s = p_;
        if (peek() == '-')
            p_++;
        if (peek() == '0') {
            p_++;
            if (peek() >= '0' && peek() <= '9')
                return fail("a number with a leading zero");
        } else if (!digits()) {
            return fail("a '-' without digits");
        }
        if (peek() == '.') {
            p_++;
            if (!digits())
                return fail("no digits after the decimal point");
        }
        if (peek() == 'e' || peek() == 'E') {
            p_++;
            if (peek() == '+' || peek() == '-')
                p_++;
            if (!digits())
                return fail("no digits in the exponent");
        }
        v.type_ = Value::Type::number;
        v.s_ = std::string(t_.substr(s, p_ - s));
        v.n_ = std::strtod(v.s_.c_str(), nullptr);
        return true;
    }

    static void utf8(std::string &out, uint32_t cp)
    {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xc0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += char(0xe0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3f));
            out += char(0x80 | (cp & 0x3f));
        } else {
            out += char(0xf0 | (cp >> 18));
            out += char(0x80 | ((cp >> 12) & 0x3f));
            out += char(0x80 | ((cp >> 6) & 0x3f));
            out += char(0x80 | (cp & 0x3f));
        }
    }
    bool hex4(uint32_t &cp)
    {
        cp = 0;
        for (int i = 0; i < 4; i++, p_++) {
            char c = peek();
            cp <<= 4;
            if (c >= '0' && c <= '9')
                cp |= uint32_t(c - '0');
            else if (c >= 'a' && c <= 'f')
                cp |= uint32_t(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                cp |= uint32_t(c - 'A' + 10);
            else
                return fail("bad \\u escape");
        }
        return true;
    }
    bool string(std::string &out)
    {
        p_++;  // opening quote
        for (;;) {
            if (eof())
                return fail("unterminated string");
            char c = t_[p_];
            if (c == '"') {
                p_++;
                return true;
            }
            if (static_cast<unsigned char>(c) < 0x20)
                return fail("control character in a string");
            if (c != '\\') {
                out += c;
                p_++;
                continue;
            }
            p_++;
            char e = peek();
            p_++;
            switch (e) {
            case '"':
            case '\\':
            case '/':
                out += e;
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                uint32_t cp;
                if (!hex4(cp))
                    return false;
                if (cp >= 0xd800 && cp < 0xdc00) {
                    uint32_t lo;
                    if (peek() != '\\' || t_.substr(p_ + 1, 1) != "u")
                        return fail("unpaired surrogate in \\u escape");
                    p_ += 2;
                    if (!hex4(lo))
                        return false;
                    if (lo < 0xdc00 || lo >= 0xe000)
                        return fail("unpaired surrogate in \\u escape");
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp < 0xe000) {
                    return fail("unpaired surrogate in \\u escape");
                }
                utf8(out, cp);
                break;
            }
            default:
                p_--;
                return fail("unknown escape in a string");
            }
        }
    }

    bool array(Value &v, unsigned depth)
    {
        v.type_ = Value::Type::array;
        p_++;
        ws();
        if (peek() == ']') {
            p_++;
            return true;
        }
        for (;;) {
            ws();
            Value e;
            if (!value(e, depth + 1))
                return false;
            v.a_.push_back(std::move(e));
            ws();
            if (peek() == ',') {
                p_++;
                ws();
                if (peek() == ']')
                    return fail("trailing comma in an array");
                continue;
            }
            if (peek() == ']') {
                p_++;
                return true;
            }
            return fail("expected ',' or ']' in an array");
        }
    }

    bool object(Value &v, unsigned depth)
    {
        v.type_ = Value::Type::object;
        p_++;
        ws();
        if (peek() == '}') {
            p_++;
            return true;
        }
        for (;;) {
            ws();
            if (peek() != '"')
                return fail(peek() == '}' ? "trailing comma in an object"
                                          : "expected a quoted key in an object");
            std::string key;
            if (!string(key))
                return false;
            if (v.find(key))
                return fail("duplicate key \"" + key + "\"");
            ws();
            if (peek() != ':')
                return fail("expected ':' after key \"" + key + "\"");
            p_++;
            ws();
            Value e;
            if (!value(e, depth + 1))
                return false;
            v.o_.emplace_back(std::move(key), std::move(e));
            ws();
            if (peek() == ',') {
                p_++;
                continue;
            }
            if (peek() == '}') {
                p_++;
                return true;
            }
            return fail("expected ',' or '}' in an object");
        }
    }
};

std::optional<Value> parse(std::string_view text, std::string *error)
{
    return Parser(text).document(error);
}

std::string number(double v)
{
    if (!std::isfinite(v))
        return "null";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, ec == std::errc{} ? end : buf);
}

std::string quoted(std::string_view s)
{
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            o += '\\';
        o += c;
    }
    return o + '"';
}

}  // namespace viommu::sim::json
