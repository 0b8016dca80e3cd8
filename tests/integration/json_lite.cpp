#include "json_lite.h"

#include <cstdio>
#include <cstdlib>

namespace cpuhpd::itest {

class JsonParser {
public:
    explicit JsonParser(const std::string& text) : s_(text) {}

    Json document() {
        Json v = value();
        skip_ws();
        if (pos_ != s_.size()) {
            fail("trailing characters after the document");
        }
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("JSON error at offset " + std::to_string(pos_) + ": " + what);
    }
    void skip_ws() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
            ++pos_;
        }
    }
    char peek() {
        skip_ws();
        if (pos_ >= s_.size()) {
            fail("unexpected end of input");
        }
        return s_[pos_];
    }
    void expect(char c) {
        if (peek() != c) {
            fail(std::string("expected '") + c + "'");
        }
        ++pos_;
    }
    bool literal(const char* word) {
        std::string w(word);
        if (s_.compare(pos_, w.size(), w) == 0) {
            pos_ += w.size();
            return true;
        }
        return false;
    }

    Json value() {
        Json v;
        char c = peek();
        if (c == '{') {
            ++pos_;
            v.type_ = Json::Type::Object;
            if (peek() == '}') {
                ++pos_;
                return v;
            }
            for (;;) {
                if (peek() != '"') {
                    fail("expected a string key");
                }
                std::string key = string();
                expect(':');
                v.object_[key] = value();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            ++pos_;
            v.type_ = Json::Type::Array;
            if (peek() == ']') {
                ++pos_;
                return v;
            }
            for (;;) {
                v.array_.push_back(value());
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.type_ = Json::Type::String;
            v.string_ = string();
            return v;
        }
        if (literal("true")) {
            v.type_ = Json::Type::Bool;
            v.bool_ = true;
            return v;
        }
        if (literal("false")) {
            v.type_ = Json::Type::Bool;
            return v;
        }
        if (literal("null")) {
            return v;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            std::size_t start = pos_;
            if (s_[pos_] == '-') {
                ++pos_;
            }
            auto digits = [&] {
                std::size_t d = pos_;
                while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
                    ++pos_;
                }
                if (d == pos_) {
                    fail("expected digits");
                }
            };
            digits();
            if (pos_ < s_.size() && s_[pos_] == '.') {
                ++pos_;
                digits();
            }
            if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
                ++pos_;
                if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
                    ++pos_;
                }
                digits();
            }
            v.type_ = Json::Type::Number;
            v.number_ = std::strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
            return v;
        }
        fail(std::string("unexpected character '") + c + "'");
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    unsigned hex4() {
        if (pos_ + 4 > s_.size()) {
            fail("short \\u escape");
        }
        unsigned cp = 0;
        for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') {
                cp |= static_cast<unsigned>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
                cp |= static_cast<unsigned>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
                cp |= static_cast<unsigned>(h - 'A' + 10);
            } else {
                fail("bad \\u escape");
            }
        }
        return cp;
    }

    std::string string() {
        expect('"');
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) {
                fail("unterminated string");
            }
            char c = s_[pos_++];
            if (c == '"') {
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("control character in string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) {
                fail("unterminated escape");
            }
            char e = s_[pos_++];
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
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
                        pos_ += 2;
                        unsigned lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    fail("bad escape");
            }
        }
    }

    const std::string& s_;
    std::size_t pos_ = 0;
};

Json Json::parse(const std::string& text) {
    return JsonParser(text).document();
}

bool Json::as_bool() const {
    if (type_ != Type::Bool) {
        throw std::runtime_error("JSON value is not a bool: " + dump());
    }
    return bool_;
}
double Json::as_number() const {
    if (type_ != Type::Number) {
        throw std::runtime_error("JSON value is not a number: " + dump());
    }
    return number_;
}
const std::string& Json::as_string() const {
    if (type_ != Type::String) {
        throw std::runtime_error("JSON value is not a string: " + dump());
    }
    return string_;
}
const std::vector<Json>& Json::as_array() const {
    if (type_ != Type::Array) {
        throw std::runtime_error("JSON value is not an array: " + dump());
    }
    return array_;
}
const std::map<std::string, Json>& Json::as_object() const {
    if (type_ != Type::Object) {
        throw std::runtime_error("JSON value is not an object: " + dump());
    }
    return object_;
}
bool Json::has(const std::string& key) const {
    return type_ == Type::Object && object_.count(key) != 0;
}
const Json& Json::operator[](const std::string& key) const {
    auto it = as_object().find(key);
    if (it == object_.end()) {
        throw std::out_of_range("JSON object has no key '" + key + "': " + dump());
    }
    return it->second;
}
const Json& Json::operator[](std::size_t index) const {
    return as_array().at(index);
}

static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string Json::dump() const {
    switch (type_) {
        case Type::Null:
            return "null";
        case Type::Bool:
            return bool_ ? "true" : "false";
        case Type::Number: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.17g", number_);
            return buf;
        }
        case Type::String:
            return quote(string_);
        case Type::Array: {
            std::string out = "[";
            for (std::size_t i = 0; i < array_.size(); ++i) {
                out += (i ? "," : "") + array_[i].dump();
            }
            return out + "]";
        }
        case Type::Object: {
            std::string out = "{";
            bool first = true;
            for (const auto& [k, v] : object_) {
                out += (first ? "" : ",") + quote(k) + ":" + v.dump();
                first = false;
            }
            return out + "}";
        }
    }
    return "null";
}

}  // namespace cpuhpd::itest
