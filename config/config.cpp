// Loader for /etc/cpuhpd/cpuhpd.yaml. yaml-cpp gives the document tree and the line of
// every node; everything else (which keys exist, their types and ranges) is checked here
// so that a bad file is refused at start with the file, the line and the key.
#include "config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "cpulist.h"
#include "enums.h"
#include "input.h"
#include "request.h"
#include "selector.h"

namespace cpuhpd {

namespace {

std::string format_error(const std::filesystem::path& file, int line, const std::string& key,
                         const std::string& reason) {
    std::string text = file.string();
    if (line > 0) {
        text += ":" + std::to_string(line);
    }
    text += ": ";
    if (!key.empty()) {
        text += "key '" + key + "': ";
    }
    return text + reason;
}

// yaml-cpp marks are 0-based; messages are 1-based. Nodes without a position give 0.
int line_of(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? 0 : mark.line + 1;
}

class Parser {
public:
    explicit Parser(std::filesystem::path name) : name_(std::move(name)) {}

    Config parse(const YAML::Node& root) {
        Config config;
        if (!root || root.IsNull()) {
            return config;  // an empty file (or one with comments only): all defaults
        }
        if (!root.IsMap()) {
            fail(root, "", "the document must be a mapping of keys to values");
        }
        std::set<std::string> seen;
        for (const auto& entry : root) {
            const YAML::Node& key_node = entry.first;
            const YAML::Node& value = entry.second;
            if (!key_node.IsScalar()) {
                fail(key_node, "", "keys must be plain names");
            }
            const std::string key = key_node.Scalar();
            if (!seen.insert(key).second) {
                fail(key_node, key, "duplicate key");
            }
            line_hint_ = line_of(key_node);
            if (key == "sysfs_root") {
                config.sysfs_root = path_value(value, key);
            } else if (key == "proc_root") {
                config.proc_root = path_value(value, key);
            } else if (key == "cgroup_root") {
                config.cgroup_root = path_value(value, key);
            } else if (key == "bus") {
                config.bus = nonempty_string(value, key);
            } else if (key == "state_dir") {
                config.state_dir = path_value(value, key);
            } else if (key == "log_level") {
                config.log_level = one_of(value, key, names_in(kLogLevelNames));
            } else if (key == "protected_cpus") {
                config.engine.protected_cpus = cpulist(value, key);
            } else if (key == "min_online") {
                config.engine.min_online = static_cast<unsigned>(integer(value, key, 1, kMaxCpus));
            } else if (key == "coalesce_ms") {
                config.engine.coalesce = std::chrono::milliseconds(integer(value, key, 0, 10000));
            } else if (key == "expedite") {
                config.engine.expedite = named(value, key, kExpediteNames);
            } else if (key == "default_mode") {
                config.engine.default_mode = named(value, key, kModeNames);
            } else if (key == "max_queued_requests") {
                config.engine.max_queued_requests =
                    static_cast<std::size_t>(integer(value, key, 1, 1000000));
            } else if (key == "recovery") {
                config.engine.recovery = named(value, key, kRecoveryPolicyNames);
            } else if (key == "hold_grace_s") {
                config.engine.hold_grace =
                    std::chrono::seconds(integer(value, key, kMinHoldGraceS, kMaxHoldGraceS));
            } else if (key == "enforce_holds") {
                config.engine.enforce_holds = named(value, key, kEnforceHoldsNames);
            } else if (key == "on_stop") {
                config.on_stop = named(value, key, kStopPolicyNames);
            } else if (key == "metrics_file") {
                config.metrics_file = file_path_value(value, key);
            } else if (key == "profiles") {
                config.profiles = profiles(value, key);
            } else if (key == "power_profiles") {
                power_profiles_ = value;  // checked below, against every profile
            } else {
                fail(key_node, key,
                     "unknown key (known: sysfs_root, proc_root, cgroup_root, bus, state_dir, "
                     "log_level, "
                     "protected_cpus, "
                     "min_online, coalesce_ms, expedite, default_mode, max_queued_requests, "
                     "recovery, hold_grace_s, enforce_holds, on_stop, metrics_file, profiles, "
                     "power_profiles)");
            }
        }
        if (power_profiles_) {
            config.power_profiles = power_profiles(power_profiles_, "power_profiles", config);
        }
        return config;
    }

private:
    [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                           const std::string& reason) const {
        int line = line_of(node);
        if (line == 0) {
            line = line_hint_;
        }
        throw ConfigError(name_, line, key, reason);
    }

    std::string scalar(const YAML::Node& value, const std::string& key) const {
        if (!value || value.IsNull()) {
            // An empty value has no position of its own (yaml-cpp marks where the next
            // token starts): report the key's line.
            throw ConfigError(name_, line_hint_, key, "a value is required");
        }
        if (!value.IsScalar()) {
            fail(value, key, "expected a single value, not a list or mapping");
        }
        return value.Scalar();
    }

    std::string nonempty_string(const YAML::Node& value, const std::string& key) const {
        std::string text = scalar(value, key);
        if (text.empty()) {
            fail(value, key, "must not be empty");
        }
        return text;
    }

    std::filesystem::path path_value(const YAML::Node& value, const std::string& key) const {
        std::filesystem::path path = nonempty_string(value, key);
        if (!path.is_absolute()) {
            fail(value, key, "'" + escape_excerpt(path.string()) + "' is not an absolute path");
        }
        return normalize_directory(path);
    }

    // A file the daemon writes: an absolute path that names no directory.
    std::filesystem::path file_path_value(const YAML::Node& value, const std::string& key) const {
        const std::string text = nonempty_string(value, key);
        const std::filesystem::path path = text;
        if (!path.is_absolute()) {
            fail(value, key, "'" + escape_excerpt(text) + "' is not an absolute path");
        }
        // "/var/lib/x/" and "/var/lib/x/." name a directory however the disk looks.
        const std::filesystem::path normal = path.lexically_normal();
        std::error_code ec;
        if (!normal.has_filename() || std::filesystem::is_directory(normal, ec)) {
            fail(value, key, "'" + escape_excerpt(text) + "' is a directory; name a file in it");
        }
        return normal;
    }

    std::string one_of(const YAML::Node& value, const std::string& key,
                       const std::vector<std::string>& allowed) const {
        const std::string text = scalar(value, key);
        std::string list;
        for (const auto& choice : allowed) {
            if (text == choice) {
                return text;
            }
            list += list.empty() ? "" : ", ";
            list += choice;
        }
        fail(value, key, "'" + text + "' is not one of " + list);
    }

    // The value of an engine enum, named by one of its table's names.
    template <typename E, std::size_t N>
    E named(const YAML::Node& value, const std::string& key, const EnumNames<E, N>& names) const {
        return *find_by_name(names, one_of(value, key, names_in(names)));
    }

    long long integer(const YAML::Node& value, const std::string& key, long long min,
                      long long max) const {
        const std::string text = scalar(value, key);
        long long number = 0;
        const char* begin = text.data();
        const char* end = text.data() + text.size();
        if (!text.empty() && *begin == '+') {
            ++begin;
        }
        const auto [ptr, ec] = std::from_chars(begin, end, number);
        if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
            fail(value, key, "'" + text + "' is not an integer");
        }
        if (ec == std::errc::result_out_of_range || number < min || number > max) {
            fail(value, key,
                 "'" + text + "' is out of range " + std::to_string(min) + ".." +
                     std::to_string(max));
        }
        return number;
    }

    CpuSet cpulist(const YAML::Node& value, const std::string& key) const {
        if (value && value.IsNull()) {
            return {};  // "protected_cpus:" with nothing: no CPU is protected
        }
        const std::string text = scalar(value, key);
        try {
            return parse_cpulist(text);
        } catch (const MaskError& error) {
            fail(value, key,
                 "invalid cpulist '" + text + "' at position " + std::to_string(error.position()) +
                     ": " + error.reason());
        }
    }

    // A profile mask is checked as far as it can be without the machine: syntax, limits,
    // CPU numbers, selector names.
    std::string profile_mask(const YAML::Node& value, const std::string& key) const {
        const std::string text = nonempty_string(value, key);
        try {
            check_mask_syntax(text);
        } catch (const MaskError& error) {
            fail(value, key,
                 "invalid mask '" + escape_excerpt(text) + "' at position " +
                     std::to_string(error.position()) + ": " + error.reason());
        }
        return text;
    }

    static bool valid_profile_name(const std::string& name) {
        if (name.empty()) {
            return false;
        }
        for (const char c : name) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    std::map<std::string, Profile> profiles(const YAML::Node& value, const std::string& key) {
        std::map<std::string, Profile> result;
        if (value && value.IsNull()) {
            return result;
        }
        if (!value.IsMap()) {
            fail(value, key,
                 "expected a mapping of profile names to {offline: MASK, smt: off, "
                 "min_online_per_node: N}");
        }
        for (const auto& entry : value) {
            const YAML::Node& name_node = entry.first;
            const YAML::Node& body = entry.second;
            if (!name_node.IsScalar() || !valid_profile_name(name_node.Scalar())) {
                fail(name_node, key, "profile names use letters, digits, '-', '_' and '.' only");
            }
            const std::string name = name_node.Scalar();
            const std::string prefix = key + "." + name;
            line_hint_ = line_of(name_node);
            if (result.count(name) != 0) {
                fail(name_node, prefix, "duplicate profile");
            }
            if (!body || body.IsNull() || !body.IsMap()) {
                fail(body, prefix,
                     "expected a mapping with 'offline' (a mask), 'smt' (on or off) and "
                     "'min_online_per_node'");
            }
            Profile profile;
            std::set<std::string> seen;
            for (const auto& field : body) {
                const YAML::Node& field_key = field.first;
                const std::string field_name = field_key.IsScalar() ? field_key.Scalar() : "";
                const std::string full = prefix + "." + field_name;
                if (!seen.insert(field_name).second) {
                    fail(field_key, full, "duplicate key");
                }
                line_hint_ = line_of(field_key);
                if (field_name == "offline") {
                    profile.offline = profile_mask(field.second, full);
                } else if (field_name == "smt") {
                    const std::string state = nonempty_string(field.second, full);
                    if (state != "on" && state != "off") {
                        fail(field.second, full, "'" + state + "' is not on or off");
                    }
                    profile.smt_off = state == "off";
                } else if (field_name == "min_online_per_node") {
                    profile.min_online_per_node =
                        static_cast<unsigned>(integer(field.second, full, 0, kMaxCpus));
                } else {
                    fail(field_key, full, "unknown key (known: offline, smt, min_online_per_node)");
                }
            }
            if (profile.offline.empty() && !profile.smt_off) {
                fail(body, prefix, "a profile needs an 'offline' mask or 'smt: off'");
            }
            result.emplace(name, std::move(profile));
        }
        return result;
    }

    // power_profiles: {ppd profile: cpuhpd profile or none}; read after the whole document,
    // since `profiles` may come after it.
    std::map<std::string, std::string> power_profiles(const YAML::Node& value,
                                                      const std::string& key,
                                                      const Config& config) {
        std::map<std::string, std::string> result;
        if (value.IsNull()) {
            return result;
        }
        if (!value.IsMap()) {
            fail(value, key,
                 "expected a mapping of power-profiles-daemon profiles (power-saver, balanced, "
                 "performance) to profile names or none");
        }
        for (const auto& entry : value) {
            const YAML::Node& name_node = entry.first;
            line_hint_ = line_of(name_node);
            if (!name_node.IsScalar() || name_node.Scalar().empty()) {
                fail(name_node, key, "expected a power-profiles-daemon profile name");
            }
            const std::string name = name_node.Scalar();
            const std::string full = key + "." + escape_excerpt(name);
            if (result.count(name) != 0) {
                fail(name_node, full, "duplicate power profile");
            }
            const std::string target = nonempty_string(entry.second, full);
            if (target == "none") {
                result.emplace(name, "");
                continue;
            }
            if (config.profiles.count(target) == 0) {
                std::string known;
                for (const auto& [profile, unused] : config.profiles) {
                    known += ", " + profile;
                }
                fail(entry.second, full,
                     "no profile '" + escape_excerpt(target) + "' in 'profiles' (known: none" +
                         known + ")");
            }
            result.emplace(name, target);
        }
        return result;
    }

    std::filesystem::path name_;
    int line_hint_ = 0;  // line of the key being read, for values without a position
    YAML::Node power_profiles_;
};

}  // namespace

ConfigError::ConfigError(const std::filesystem::path& file, int line, const std::string& key,
                         const std::string& reason)
    : std::runtime_error(format_error(file, line, key, reason)) {}

std::filesystem::path normalize_directory(const std::filesystem::path& path) {
    std::filesystem::path out = path.lexically_normal();
    // "/sys/" is "/sys" with an empty last component: drop it, so that comparisons with
    // "/sys" (uevents are only listened to on the real sysfs) see the same path.
    if (!out.has_filename() && out.has_parent_path() && out != out.root_path()) {
        out = out.parent_path();
    }
    return out;
}

namespace {

// Where each document of the stream starts, from yaml-cpp's event parser, called at most
// twice: yaml-cpp 0.7's LoadAll() loops for ever, eating memory, on some malformed text
// (",\"" found by the fuzzer), where the parser reports a document again without moving on.
class DocumentStarts final : public YAML::EventHandler {
public:
    std::vector<YAML::Mark> starts;

    void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

// Refuses a stream of more than one document (YAML::Load() would read the first and drop
// the rest without a word) and text on which the parser makes no progress.
void check_one_document(const std::string& text, const std::filesystem::path& name) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts handler;
    if (!parser.HandleNextDocument(handler) || !parser.HandleNextDocument(handler) ||
        handler.starts.size() < 2) {
        return;
    }
    const YAML::Mark& first = handler.starts[0];
    const YAML::Mark& second = handler.starts[1];
    if (second.pos == first.pos) {
        throw ConfigError(name, first.line + 1, "",
                          "YAML syntax error: text the YAML parser cannot read");
    }
    throw ConfigError(name, second.line + 1, "",
                      "a second YAML document ('---'): the config is one document");
}

}  // namespace

Config parse_config(const std::string& text, const std::filesystem::path& name) {
    if (text.size() > kMaxConfigBytes) {
        throw ConfigError(name, 0, "",
                          "is " + std::to_string(text.size()) + " bytes; the limit is " +
                              std::to_string(kMaxConfigBytes));
    }
    YAML::Node root;
    try {
        check_one_document(text, name);
        root = YAML::Load(text);
    } catch (const YAML::ParserException& error) {
        throw ConfigError(name, error.mark.is_null() ? 0 : error.mark.line + 1, "",
                          "YAML syntax error: " + escape_excerpt(error.msg, 200));
    } catch (const YAML::Exception& error) {
        throw ConfigError(name, error.mark.is_null() ? 0 : error.mark.line + 1, "",
                          "cannot read YAML: " + escape_excerpt(error.msg, 200));
    }
    try {
        return Parser(name).parse(root);
    } catch (const YAML::Exception& error) {
        // Not expected (every access is checked first), but never let one escape unlabelled.
        throw ConfigError(name, error.mark.is_null() ? 0 : error.mark.line + 1, "",
                          escape_excerpt(error.msg, 200));
    }
}

Config load_config(const std::filesystem::path& file, bool missing_ok) {
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (status.type() == std::filesystem::file_type::not_found) {
        if (missing_ok) {
            return Config{};
        }
        throw ConfigError(file, 0, "", "no such file");
    }
    // A symbolic link to a regular file is fine (configuration management does that); a
    // FIFO, a device or a directory is refused before a byte is read, and so is a file
    // above kMaxConfigBytes, and a file that is not root's (or cpuhpd's) or that anybody may
    // write.
    std::string text;
    try {
        text = read_regular_file(file, kMaxConfigBytes, Symlinks::Follow, Owner::Administrator);
    } catch (const FileError& error) {
        throw ConfigError(file, 0, "", error.reason());
    }
    return parse_config(text, file);
}

}  // namespace cpuhpd
