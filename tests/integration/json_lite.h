// A minimal JSON reader for checking cpuctl --json output in the integration tests.
// Strict enough to reject malformed output (trailing garbage, bad escapes, missing commas).
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cpuhpd::itest {

class Json {
public:
    enum class Type { Null, Bool, Number, String, Array, Object };

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::Null; }
    bool is_bool() const { return type_ == Type::Bool; }
    bool is_number() const { return type_ == Type::Number; }
    bool is_string() const { return type_ == Type::String; }
    bool is_array() const { return type_ == Type::Array; }
    bool is_object() const { return type_ == Type::Object; }

    bool as_bool() const;
    double as_number() const;
    const std::string& as_string() const;
    const std::vector<Json>& as_array() const;
    const std::map<std::string, Json>& as_object() const;

    bool has(const std::string& key) const;
    // Throws std::out_of_range naming the key when absent or when this is not an object.
    const Json& operator[](const std::string& key) const;
    const Json& operator[](std::size_t index) const;

    // Parses a whole document; throws std::runtime_error with the offset on any error.
    static Json parse(const std::string& text);
    // Compact re-serialisation, for messages.
    std::string dump() const;

private:
    friend class JsonParser;
    Type type_ = Type::Null;
    bool bool_ = false;
    double number_ = 0;
    std::string string_;
    std::vector<Json> array_;
    std::map<std::string, Json> object_;
};

}  // namespace cpuhpd::itest
